package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS keeps objects as files under a directory. A Put writes a temporary
// file beside the target, syncs it and renames it into place, so a crash
// leaves the old object or the new one, never half of one. The content type
// is not kept: Get answers application/octet-stream.
type FS struct {
	dir string
}

// NewFS returns a store under dir, creating it.
func NewFS(dir string) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("objectstore: %w", err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("objectstore: %w", err)
	}
	return &FS{dir: abs}, nil
}

// Describe names the store.
func (s *FS) Describe() string { return "fs:" + s.dir }

func (s *FS) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, filepath.FromSlash(key)), nil
}

// Put stores the object.
func (s *FS) Put(ctx context.Context, key string, r io.Reader, size int64, _ string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, io.LimitReader(ctxReader{ctx, r}, size+1))
	if err != nil {
		return fmt.Errorf("objectstore: write %s: %w", key, err)
	}
	if n != size {
		return fmt.Errorf("%w: %s: got %d bytes, want %d", ErrSize, key, n, size)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	ok = true
	return nil
}

// Get opens the object.
func (s *FS) Get(_ context.Context, key string) (io.ReadCloser, Info, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("objectstore: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("objectstore: %w", err)
	}
	return f, Info{Key: key, Size: st.Size(), ContentType: "application/octet-stream", ModTime: st.ModTime()}, nil
}

// Delete removes the object and the directories it leaves empty.
func (s *FS) Delete(_ context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objectstore: %w", err)
	}
	for d := filepath.Dir(p); d != s.dir && len(d) > len(s.dir); d = filepath.Dir(d) {
		if os.Remove(d) != nil { // not empty, or gone
			break
		}
	}
	return nil
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
