package rag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stackbone/box/fault"
)

// Upload is a file to ingest in the background.
type Upload struct {
	Collection string
	Filename   string
	// File is read to its end (at most MaxUploadBytes).
	File     io.Reader
	Metadata map[string]any
}

// Upload keeps the file in the object store and queues its ingest job,
// answering at once with the queued document (its JobID set). The file is
// spooled to a temporary file first, so its size, hash and kind are known
// before anything is stored; the document row and the job are inserted in
// one transaction. Errors: ErrIngestUnavailable, ErrCollectionNotFound,
// ErrInvalidRequest, ErrFileTooLarge, ErrUnsupportedType, ErrUnavailable.
func (s *Service) Upload(ctx context.Context, up Upload) (Document, error) {
	client := s.jobClient()
	if client == nil || s.cfg.Store == nil {
		return Document{}, fmt.Errorf("%w: this box has no job queue or object store for uploads; use code ingest (POST /api/rag/ingest)", ErrIngestUnavailable)
	}
	if err := checkMetadata("metadata", up.Metadata); err != nil {
		return Document{}, err
	}
	name := cleanFilename(up.Filename)
	if name == "" {
		return Document{}, fmt.Errorf("%w: the file needs a name ending in .txt, .md or .pdf", ErrUnsupportedType)
	}
	if !allowedExt(name) {
		return Document{}, fmt.Errorf("%w: %q; upload .txt, .md or .pdf", ErrUnsupportedType, clip(filepath.Ext(name), 20))
	}
	c, err := s.collection(ctx, s.cfg.Pool, up.Collection)
	if err != nil {
		return Document{}, err
	}
	tmp, size, sum, err := spool(s.cfg.SpoolDir, up.File)
	if err != nil {
		return Document{}, err
	}
	defer removeSpool(tmp)
	return s.uploadSpooled(ctx, c, name, up.Metadata, tmp, size, sum)
}

// spoolPattern names spool files, so a box can sweep the ones a killed
// process left (sweepSpool).
const spoolPattern = "stackbone-upload-*"

// spool copies r (at most MaxUploadBytes) to a temporary file in dir,
// hashing it. The caller removes the file with removeSpool. Errors:
// ErrFileTooLarge, ErrInvalidRequest (the client's upload failed),
// ErrUnavailable (the box's temporary storage failed or is full). Messages
// hold neither paths nor the OS's error text: they reach clients.
func spool(dir string, r io.Reader) (*os.File, int64, string, error) {
	tmp, err := os.CreateTemp(dir, spoolPattern)
	if err != nil {
		return nil, 0, "", fault.Hide(fmt.Errorf("%w: the box could not keep the upload (temporary storage failed)", ErrUnavailable), err)
	}
	h := sha256.New()
	size, err := copyUpload(io.MultiWriter(tmp, h), r)
	if err == nil && size == 0 {
		err = fmt.Errorf("%w: the file is empty", ErrInvalidRequest)
	}
	if err != nil {
		removeSpool(tmp)
		return nil, 0, "", err
	}
	return tmp, size, hex.EncodeToString(h.Sum(nil)), nil
}

// copyUpload copies at most MaxUploadBytes of r to w, and tells the
// client's failures (a cut or oversized upload: 4xx) from the box's (a full
// or failing disk: 5xx).
func copyUpload(w io.Writer, r io.Reader) (int64, error) {
	fw := &failWriter{w: w}
	size, err := io.Copy(fw, io.LimitReader(r, MaxUploadBytes+1))
	var tooBig *http.MaxBytesError
	switch {
	case fw.err != nil:
		return size, fault.Hide(fmt.Errorf("%w: the box could not keep the upload (temporary storage is full or failing)", ErrUnavailable), fw.err)
	case errors.As(err, &tooBig) || size > MaxUploadBytes:
		return size, fmt.Errorf("%w: the limit is %d MB", ErrFileTooLarge, MaxUploadBytes>>20)
	case err != nil:
		return size, fault.Hide(fmt.Errorf("%w: the upload was cut short", ErrInvalidRequest), err)
	}
	return size, nil
}

// failWriter remembers a write error, so a copy can tell it from a read error.
type failWriter struct {
	w   io.Writer
	err error
}

func (f *failWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		f.err = err
	}
	return n, err
}

// sweepSpool removes spool files in dir older than age: ones a killed box
// left behind (a live upload's file is written to as it arrives, and
// removed when its request ends).
func sweepSpool(dir string, age time.Duration) (int, error) {
	names, err := filepath.Glob(filepath.Join(dir, spoolPattern))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > age {
			if os.Remove(name) == nil {
				n++
			}
		}
	}
	return n, nil
}

func removeSpool(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// uploadSpooled stores a spooled file and queues its ingest.
func (s *Service) uploadSpooled(ctx context.Context, c Collection, name string, metadata map[string]any, tmp *os.File, size int64, sum string) (Document, error) {
	client := s.jobClient()
	head := make([]byte, 1024)
	n, _ := tmp.ReadAt(head, 0)
	kind, err := fileKind(name, head[:n])
	if err != nil {
		return Document{}, err
	}
	id := uuid.NewString()
	key := fmt.Sprintf("rag/%d/%s/%s", c.id, id, name)
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return Document{}, fault.Hide(fmt.Errorf("%w: the box could not read back the upload", ErrUnavailable), err)
	}
	if err := s.cfg.Store.Put(ctx, key, tmp, size, kind); err != nil {
		return Document{}, fault.Hide(fmt.Errorf("%w: the object store could not keep the original", ErrUnavailable), err)
	}
	var doc Document
	err = pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		meta, _ := json.Marshal(orEmpty(metadata))
		if _, err := tx.Exec(ctx, `
			INSERT INTO stackbone_platform.rag_documents
			  (id, collection_id, source, filename, content_type, size_bytes, sha256, object_key, metadata, status)
			VALUES ($1, $2, 'upload', $3, $4, $5, $6, $7, $8, 'queued')`,
			id, c.id, name, kind, size, sum, key, meta); err != nil {
			return err
		}
		res, err := client.InsertTx(ctx, tx, IngestArgs{DocumentID: id}, &river.InsertOpts{MaxAttempts: s.cfg.IngestMaxAttempts})
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `UPDATE stackbone_platform.rag_documents SET job_id = $2 WHERE id = $1 RETURNING `+documentColumns,
			id, res.Job.ID).Scan(doc.scanTargets()...)
	})
	if err != nil {
		if derr := s.cfg.Store.Delete(context.WithoutCancel(ctx), key); derr != nil {
			s.log.Warn("delete original after a failed upload", "key", key, "error", derr)
		}
		return Document{}, fmt.Errorf("%w: queue ingest: %v", ErrUnavailable, err)
	}
	doc.Collection = c.Name
	doc.fill()
	s.log.Info("upload queued", "collection", c.Name, "document", id, "job", *doc.JobID, "bytes", size, "kind", kind)
	return doc, nil
}

// Original opens a document's uploaded file. Errors: ErrDocumentNotFound
// (also for code-ingested documents, which have none), ErrIngestUnavailable,
// ErrUnavailable.
func (s *Service) Original(ctx context.Context, id string) (io.ReadCloser, Document, error) {
	d, err := s.Document(ctx, id)
	if err != nil {
		return nil, Document{}, err
	}
	if d.objectKey == "" {
		return nil, Document{}, fmt.Errorf("%w: %s was ingested from code and has no original", ErrDocumentNotFound, clip(id, 200))
	}
	if s.cfg.Store == nil {
		return nil, Document{}, fmt.Errorf("%w: this box has no object store", ErrIngestUnavailable)
	}
	rc, _, err := s.cfg.Store.Get(ctx, d.objectKey)
	if err != nil {
		return nil, Document{}, fmt.Errorf("%w: read the original: %v", ErrUnavailable, err)
	}
	return rc, d, nil
}

// cleanFilename keeps the base name with safe characters only, at most 200
// bytes, so it can be part of an object key and a header.
func cleanFilename(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == "/" {
		return ""
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if len(out) > 200 {
		ext := filepath.Ext(out)
		out = out[:200-len(ext)] + ext
	}
	return out
}

func allowedExt(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".txt", ".md", ".markdown", ".pdf":
		return true
	}
	return false
}
