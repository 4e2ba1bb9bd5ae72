// Package objectstore keeps blobs by key: uploaded originals of documents,
// so they can be downloaded and parsed again. The local filesystem is the
// default; any S3-compatible store works by configuration.
//
//	store, err := objectstore.Open(cfg.ObjectStore, ".stackbone", os.Getenv)
//	err = store.Put(ctx, "rag/12/doc_1/returns.pdf", file, size, "application/pdf")
//	rc, info, err := store.Get(ctx, "rag/12/doc_1/returns.pdf")
//	err = store.Delete(ctx, "rag/12/doc_1/returns.pdf")
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/stackbone/box/config"
)

// Errors of a store.
var (
	// ErrNotFound: no object under that key.
	ErrNotFound = errors.New("objectstore: not found")
	// ErrInvalidKey: the key is empty, absolute, or climbs out with "..".
	ErrInvalidKey = errors.New("objectstore: invalid key")
	// ErrSize: the reader did not hold the announced number of bytes.
	ErrSize = errors.New("objectstore: size mismatch")
)

// Info describes a stored object.
type Info struct {
	Key         string
	Size        int64
	ContentType string
	ModTime     time.Time
}

// Store keeps blobs by key. Keys are slash-separated paths of printable
// characters without "." or ".." segments. Implementations are safe for
// concurrent use.
type Store interface {
	// Put stores size bytes from r under key, replacing any object there.
	// The object appears whole or not at all. It returns ErrSize when r
	// ends early or holds more.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// Get opens the object; the caller closes it. ErrNotFound if absent.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Delete removes the object; an absent object is not an error.
	Delete(ctx context.Context, key string) error
	// Describe names the store for logs ("fs:/var/lib/stackbone/objects").
	Describe() string
}

// Open returns the store cfg describes. dataDir holds the default fs
// directory (dataDir/objects); getenv reads the S3 credentials.
func Open(cfg config.ObjectStore, dataDir string, getenv func(string) string) (Store, error) {
	switch cfg.Kind {
	case "", config.ObjectStoreFS:
		dir := cfg.Dir
		if dir == "" {
			dir = filepath.Join(dataDir, "objects")
		}
		return NewFS(dir)
	case config.ObjectStoreS3:
		ak, sk := cfg.AccessKeyEnv, cfg.SecretKeyEnv
		if ak == "" {
			ak = "AWS_ACCESS_KEY_ID"
		}
		if sk == "" {
			sk = "AWS_SECRET_ACCESS_KEY"
		}
		return NewS3(S3Config{Endpoint: cfg.Endpoint, Bucket: cfg.Bucket, Region: cfg.Region, Prefix: cfg.Prefix,
			Insecure: cfg.Insecure, AccessKey: getenv(ak), SecretKey: getenv(sk)})
	}
	return nil, fmt.Errorf("objectstore: unknown kind %q", cfg.Kind)
}

// CheckKey returns ErrInvalidKey unless key is a clean relative path.
func CheckKey(key string) error {
	if key == "" || len(key) > 1024 || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.Contains(key, "\\") {
		return fmt.Errorf("%w: %q", ErrInvalidKey, clip(key))
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q", ErrInvalidKey, clip(key))
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("%w: control character in %q", ErrInvalidKey, clip(key))
			}
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
