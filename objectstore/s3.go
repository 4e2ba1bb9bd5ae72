package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config configures an S3-compatible store.
type S3Config struct {
	// Endpoint is host[:port], without scheme.
	Endpoint string
	Bucket   string
	Region   string
	// Prefix is prepended to every key.
	Prefix string
	// Insecure uses plain HTTP.
	Insecure             bool
	AccessKey, SecretKey string
}

// S3 keeps objects in a bucket of an S3-compatible store (AWS S3, MinIO,
// Ceph, R2...), through the MinIO Go client. The bucket must exist.
type S3 struct {
	c      *minio.Client
	bucket string
	prefix string
	desc   string
}

// NewS3 returns a store on cfg's bucket. It does not contact the store.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("objectstore: s3 needs an endpoint and a bucket")
	}
	endpoint := strings.TrimPrefix(strings.TrimPrefix(cfg.Endpoint, "https://"), "http://")
	c, err := minio.New(endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: !cfg.Insecure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("objectstore: s3: %w", err)
	}
	return &S3{c: c, bucket: cfg.Bucket, prefix: cfg.Prefix, desc: "s3:" + endpoint + "/" + cfg.Bucket + "/" + cfg.Prefix}, nil
}

// Describe names the store.
func (s *S3) Describe() string { return s.desc }

func (s *S3) key(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Put uploads the object; S3 makes it visible whole or not at all.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	info, err := s.c.PutObject(ctx, s.bucket, k, r, size, minio.PutObjectOptions{ContentType: contentType})
	if err != nil {
		return fmt.Errorf("objectstore: s3 put %s: %w", key, err)
	}
	if info.Size != size {
		return fmt.Errorf("%w: %s: stored %d bytes, want %d", ErrSize, key, info.Size, size)
	}
	return nil
}

// Get opens the object.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, Info{}, err
	}
	obj, err := s.c.GetObject(ctx, s.bucket, k, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, s.fail("get", key, err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, Info{}, s.fail("get", key, err)
	}
	return obj, Info{Key: key, Size: st.Size, ContentType: st.ContentType, ModTime: st.LastModified}, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, k, minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(s.fail("delete", key, err), ErrNotFound) {
			return nil
		}
		return s.fail("delete", key, err)
	}
	return nil
}

func (s *S3) fail(op, key string, err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("objectstore: s3 %s %s: %w", op, key, err)
}
