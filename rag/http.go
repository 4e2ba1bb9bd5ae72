package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
)

// Register adds the /api/rag routes to srv, behind its auth and scopes.
func (s *Service) Register(srv *api.Server) {
	srv.Route("POST /api/rag/collections", auth.ScopeRAGWrite, s.httpCreateCollection)
	srv.Route("GET /api/rag/collections", auth.ScopeRAGRead, s.httpCollections)
	srv.Route("POST /api/rag/collections/{name}/documents", auth.ScopeRAGWrite, s.httpUpload)
	srv.Route("GET /api/rag/collections/{name}/documents", auth.ScopeRAGRead, s.httpDocuments)
	srv.Route("GET /api/rag/documents/{id}", auth.ScopeRAGRead, s.httpDocument)
	srv.Route("DELETE /api/rag/documents/{id}", auth.ScopeRAGWrite, s.httpDeleteDocument)
	srv.Route("GET /api/rag/originals/{id}", auth.ScopeRAGRead, s.httpOriginal)
	srv.Route("POST /api/rag/ingest", auth.ScopeRAGWrite, s.httpIngest)
	srv.Route("POST /api/rag/retrieve", auth.ScopeRAGRead, s.httpRetrieve)
	srv.Route("GET /api/rag/jobs", auth.ScopeRAGRead, s.httpJobs)
	srv.Route("GET /api/rag/jobs/{id}", auth.ScopeRAGRead, s.httpJob)
	srv.Route("POST /api/rag/jobs/{id}/retry", auth.ScopeRAGWrite, s.httpRetry)
	srv.Route("POST /api/rag/jobs/{id}/cancel", auth.ScopeRAGWrite, s.httpCancel)
}

// maxJSONBody bounds JSON bodies: a code ingest of MaxChunksPerIngest long
// chunks fits.
const maxJSONBody = 64 << 20

// decode reads a strict JSON body; a malformed one is ErrInvalidRequest.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if err := api.Decode(w, r, maxJSONBody, v); err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	return nil
}

func (s *Service) httpCreateCollection(w http.ResponseWriter, r *http.Request) error {
	var req CreateCollection
	if err := decode(w, r, &req); err != nil {
		return err
	}
	c, err := s.CreateCollection(r.Context(), req)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusCreated, c)
	return nil
}

func (s *Service) httpCollections(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Collections(r.Context())
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

// UploadResult is the answer to an upload: the queued document and its job.
type UploadResult struct {
	Document Document `json:"document"`
	Job      *Job     `json:"job"`
}

// httpUpload reads a multipart form with a "file" part and an optional
// "metadata" part (a JSON object), in either order: the file is spooled as
// it streams in, and nothing is stored before the whole form is read.
func (s *Service) httpUpload(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if s.jobClient() == nil || s.cfg.Store == nil {
		return fmt.Errorf("%w: this box has no job queue or object store for uploads; use code ingest (POST /api/rag/ingest)", ErrIngestUnavailable)
	}
	c, err := s.collection(ctx, s.cfg.Pool, r.PathValue("name"))
	if err != nil {
		return err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return fmt.Errorf("%w: send multipart/form-data with a file part (curl -F file=@returns.pdf)", ErrInvalidRequest)
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	var (
		meta map[string]any
		name string
		up   *uploadedFile
	)
	defer func() {
		if up != nil {
			removeSpool(up.tmp)
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: the limit is %d MB", ErrFileTooLarge, MaxUploadBytes>>20)
		}
		if err != nil {
			return fmt.Errorf("%w: malformed multipart body: %v", ErrInvalidRequest, err)
		}
		switch part.FormName() {
		case "metadata":
			b, err := io.ReadAll(io.LimitReader(part, MaxMetadataBytes+1))
			if terr := api.CheckText(b); terr != nil {
				return fmt.Errorf("%w: metadata: %v", ErrInvalidRequest, terr)
			}
			if err != nil || len(b) > MaxMetadataBytes || json.Unmarshal(b, &meta) != nil || meta == nil {
				return fmt.Errorf("%w: metadata must be a JSON object of at most %d bytes", ErrInvalidRequest, MaxMetadataBytes)
			}
		case "file":
			if up != nil {
				return fmt.Errorf("%w: send one file per request", ErrInvalidRequest)
			}
			name = cleanFilename(part.FileName())
			if name == "" || !allowedExt(name) {
				return fmt.Errorf("%w: %q; upload .txt, .md or .pdf", ErrUnsupportedType, clip(part.FileName(), 100))
			}
			tmp, size, sum, err := spool(s.cfg.SpoolDir, part)
			if err != nil {
				return err
			}
			up = &uploadedFile{tmp: tmp, size: size, sum: sum}
		default:
			return fmt.Errorf("%w: unknown form field %q; send file and optionally metadata", ErrInvalidRequest, clip(part.FormName(), 40))
		}
	}
	if up == nil {
		return fmt.Errorf("%w: the form has no file part", ErrInvalidRequest)
	}
	doc, err := s.uploadSpooled(ctx, c, name, meta, up.tmp, up.size, up.sum)
	if err != nil {
		return err
	}
	res := UploadResult{Document: doc}
	if j, err := s.Job(ctx, *doc.JobID); err == nil {
		res.Job = &j
	}
	api.WriteData(w, http.StatusAccepted, res)
	return nil
}

type uploadedFile struct {
	tmp  *os.File
	size int64
	sum  string
}

func (s *Service) httpDocuments(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := DocumentFilter{Status: q.Get("status"), Before: q.Get("before")}
	f.Limit, _ = strconv.Atoi(q.Get("limit"))
	f.Offset, _ = strconv.Atoi(q.Get("offset"))
	if v := q.Get("filter"); v != "" {
		if err := json.Unmarshal([]byte(v), &f.Metadata); err != nil || f.Metadata == nil {
			return fmt.Errorf("%w: filter must be a JSON object, e.g. {\"lang\":\"en\"}", ErrInvalidRequest)
		}
	}
	list, err := s.Documents(r.Context(), r.PathValue("name"), f)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

func (s *Service) httpDocument(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Document(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, d)
	return nil
}

func (s *Service) httpDeleteDocument(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.DeleteDocument(r.Context(), id); err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
	return nil
}

// httpOriginal streams the uploaded file itself, not an envelope.
func (s *Service) httpOriginal(w http.ResponseWriter, r *http.Request) error {
	rc, d, err := s.Original(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", d.ContentType)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.Filename}))
	if d.SizeBytes != nil {
		w.Header().Set("Content-Length", strconv.FormatInt(*d.SizeBytes, 10))
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, err := io.Copy(w, rc); err != nil {
		s.log.Warn("download cut short", "document", d.ID, "error", err)
	}
	return nil
}

func (s *Service) httpIngest(w http.ResponseWriter, r *http.Request) error {
	var req IngestRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	d, err := s.Ingest(r.Context(), req)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, d)
	return nil
}

func (s *Service) httpRetrieve(w http.ResponseWriter, r *http.Request) error {
	var req RetrieveRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	hits, err := s.Retrieve(r.Context(), req)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, hits)
	return nil
}

func (s *Service) httpJobs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	list, err := s.Jobs(r.Context(), JobFilter{State: q.Get("state"), Collection: q.Get("collection"), Limit: limit})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

func jobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: %q is not a job id", ErrJobNotFound, clip(r.PathValue("id"), 40))
	}
	return id, nil
}

func (s *Service) httpJob(w http.ResponseWriter, r *http.Request) error {
	return s.jobRoute(w, r, s.Job)
}

func (s *Service) httpRetry(w http.ResponseWriter, r *http.Request) error {
	return s.jobRoute(w, r, s.RetryJob)
}

func (s *Service) httpCancel(w http.ResponseWriter, r *http.Request) error {
	return s.jobRoute(w, r, s.CancelJob)
}

func (s *Service) jobRoute(w http.ResponseWriter, r *http.Request, fn func(context.Context, int64) (Job, error)) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	j, err := fn(r.Context(), id)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, j)
	return nil
}
