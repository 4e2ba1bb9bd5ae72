package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/objectstore"
)

// exercise runs the contract every store keeps.
func exercise(t *testing.T, s objectstore.Store) {
	ctx := context.Background()
	body := []byte("%PDF-1.3 not really")
	key := "rag/7/doc_1/returns.pdf"
	if err := s.Put(ctx, key, bytes.NewReader(body), int64(len(body)), "application/pdf"); err != nil {
		t.Fatalf("put: %v", err)
	}
	rc, info, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, body) || info.Size != int64(len(body)) {
		t.Fatalf("get = %q (size %d), want %q", got, info.Size, body)
	}
	// Replacing keeps one object with the new bytes.
	if err := s.Put(ctx, key, strings.NewReader("v2"), 2, "text/plain"); err != nil {
		t.Fatal(err)
	}
	rc, _, err = s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(rc)
	rc.Close()
	if string(got) != "v2" {
		t.Fatalf("after replace: %q", got)
	}
	// A reader shorter than announced fails and leaves the old object.
	if err := s.Put(ctx, key, strings.NewReader("abc"), 10, ""); err == nil {
		t.Fatal("short reader: want an error")
	}
	rc, _, err = s.Get(ctx, key)
	if err != nil {
		t.Fatalf("old object lost after a failed put: %v", err)
	}
	got, _ = io.ReadAll(rc)
	rc.Close()
	if string(got) != "v2" {
		t.Fatalf("old object changed by a failed put: %q", got)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, key); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("deleting an absent object: %v", err)
	}
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "./a", "a/", "a\\b", "a\x00b"} {
		if err := s.Put(ctx, bad, strings.NewReader("x"), 1, ""); !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Errorf("put %q: %v, want ErrInvalidKey", bad, err)
		}
	}
}

func TestFS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := objectstore.Open(config.ObjectStore{}, dir, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Describe() != "fs:"+filepath.Join(dir, "objects") {
		t.Fatalf("default dir: %s", s.Describe())
	}
	exercise(t, s)
	// No temporary files or empty directories are left behind.
	var left []string
	filepath.Walk(filepath.Join(dir, "objects"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != filepath.Join(dir, "objects") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestS3 runs the contract against an in-process S3-compatible server
// (gofakes3) through the real MinIO client.
func TestS3(t *testing.T) {
	t.Parallel()
	backend := s3mem.New()
	if err := backend.CreateBucket("originals"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	env := map[string]string{"KEY_ID": "test", "KEY_SECRET": "test-secret"}
	s, err := objectstore.Open(config.ObjectStore{Kind: "s3", Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "originals",
		Region: "us-east-1", Prefix: "box1/", Insecure: true, AccessKeyEnv: "KEY_ID", SecretKeyEnv: "KEY_SECRET"}, "", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, s)
	// The prefix is applied.
	if err := s.Put(context.Background(), "k", strings.NewReader("x"), 1, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := backend.HeadObject("originals", "box1/k"); err != nil {
		t.Fatalf("object not under the prefix: %v", err)
	}
}
