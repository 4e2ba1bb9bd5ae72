package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Document is one document of a collection.
type Document struct {
	ID          string         `json:"id"`
	Collection  string         `json:"collection"`
	Source      string         `json:"source"`
	Filename    string         `json:"filename,omitempty"`
	ContentType string         `json:"contentType,omitempty"`
	SizeBytes   *int64         `json:"sizeBytes,omitempty"`
	SHA256      string         `json:"sha256,omitempty"`
	Metadata    map[string]any `json:"metadata"`
	// Status is queued, running, retrying, succeeded, failed or cancelled.
	Status string     `json:"status"`
	Error  *ItemError `json:"error"`
	// JobID is the ingest job of an upload; RunID its latest run.
	JobID     *int64    `json:"jobId"`
	RunID     *string   `json:"runId"`
	Attempts  int       `json:"attempts"`
	Chunks    int       `json:"chunks"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Preview is the start of the first chunk (lists only).
	Preview string `json:"preview,omitempty"`

	objectKey       string
	collID          int64
	errCode, errMsg *string
}

// ItemError is why a document's ingest failed.
type ItemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Document statuses.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusRetrying  = "retrying"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Chunk is one chunk given to Ingest.
type Chunk struct {
	Content  string         `json:"content"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// IngestRequest is a code ingest: the chunks of document ID, replacing any
// it had.
type IngestRequest struct {
	ID         string `json:"id"`
	Collection string `json:"collection,omitempty"`
	// Model, when set, must be the collection's.
	Model    string         `json:"model,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Chunks   []Chunk        `json:"chunks"`
}

// documentIDRe: ids go in URL paths, so no '/' (a crawler can use the URL
// with its slashes replaced, or a hash of it).
var documentIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@+=~-]{0,199}$`)

// Ingest embeds req's chunks with the collection's model and stores them as
// document req.ID, replacing the document's chunks in one transaction: a
// re-crawl converges and never duplicates, and a failure changes nothing.
// Errors: ErrInvalidRequest, ErrCollectionNotFound, ErrModelMismatch,
// ErrDocumentConflict, ErrEmbeddingFailed, ErrProviderNotConfigured,
// ErrUnavailable.
func (s *Service) Ingest(ctx context.Context, req IngestRequest) (Document, error) {
	return s.ingest(ctx, req, nil)
}

// IngestEmbedded is Ingest with the chunks already embedded by the
// collection's model (vectors[i] for req.Chunks[i]): for callers that embed
// themselves, and the benchmarks. Errors: those of Ingest, and
// ErrModelMismatch for a vector of another dimension.
func (s *Service) IngestEmbedded(ctx context.Context, req IngestRequest, vectors [][]float32) (Document, error) {
	if len(vectors) != len(req.Chunks) {
		return Document{}, fmt.Errorf("%w: %d vectors for %d chunks", ErrInvalidRequest, len(vectors), len(req.Chunks))
	}
	return s.ingest(ctx, req, vectors)
}

func (s *Service) ingest(ctx context.Context, req IngestRequest, vectors [][]float32) (Document, error) {
	if !documentIDRe.MatchString(req.ID) {
		return Document{}, fmt.Errorf("%w: id must be 1 to 200 characters: letters, digits and _ . : @ + = ~ -, starting with a letter or digit (no '/': it goes in URL paths)", ErrInvalidRequest)
	}
	if len(req.Chunks) == 0 || len(req.Chunks) > MaxChunksPerIngest {
		return Document{}, fmt.Errorf("%w: chunks must hold 1 to %d chunks", ErrInvalidRequest, MaxChunksPerIngest)
	}
	if err := checkMetadata("metadata", req.Metadata); err != nil {
		return Document{}, err
	}
	texts := make([]string, len(req.Chunks))
	for i, c := range req.Chunks {
		n := utf8.RuneCountInString(c.Content)
		if strings.TrimSpace(c.Content) == "" || n > MaxChunkChars || !utf8.ValidString(c.Content) || strings.ContainsRune(c.Content, 0) {
			return Document{}, fmt.Errorf("%w: chunks[%d].content must be 1 to %d characters of text", ErrInvalidRequest, i, MaxChunkChars)
		}
		if err := checkMetadata(fmt.Sprintf("chunks[%d].metadata", i), c.Metadata); err != nil {
			return Document{}, err
		}
		texts[i] = c.Content
	}
	c, err := s.collection(ctx, s.cfg.Pool, req.Collection)
	if err != nil {
		return Document{}, err
	}
	if err := checkModel(c, req.Model); err != nil {
		return Document{}, err
	}
	began := time.Now()
	emb := embedded{vectors: vectors}
	if vectors == nil {
		if emb, err = s.embed(ctx, c, texts); err != nil {
			return Document{}, err
		}
	}
	for _, v := range emb.vectors {
		if len(v) != c.Dimensions {
			return Document{}, fmt.Errorf("%w: a vector has %d dimensions and collection %s holds %d", ErrModelMismatch, len(v), c.Name, c.Dimensions)
		}
	}
	rows := make([]chunkRow, len(req.Chunks))
	for i, ch := range req.Chunks {
		rows[i] = chunkRow{content: ch.Content, metadata: merge(req.Metadata, ch.Metadata), vector: emb.vectors[i]}
	}
	var doc Document
	err = pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		meta, _ := json.Marshal(orEmpty(req.Metadata))
		err := tx.QueryRow(ctx, `
			INSERT INTO stackbone_platform.rag_documents (id, collection_id, source, metadata, status, chunk_count)
			VALUES ($1, $2, 'code', $3, 'succeeded', $4)
			ON CONFLICT (id) DO UPDATE SET source = 'code', metadata = EXCLUDED.metadata, status = 'succeeded',
			  chunk_count = EXCLUDED.chunk_count, error_code = NULL, error_message = NULL, updated_at = now()
			WHERE rag_documents.collection_id = EXCLUDED.collection_id
			RETURNING `+documentColumns, req.ID, c.id, meta, len(rows)).Scan(doc.scanTargets()...)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s is a document of another collection; delete it there first or use another id", ErrDocumentConflict, req.ID)
		}
		if err != nil {
			return err
		}
		if _, err = replaceChunks(ctx, tx, c.id, req.ID, rows); err != nil {
			return err
		}
		s.emitIngested(ctx, tx, req.ID, c.id, len(rows), "code")
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrDocumentConflict) {
			return Document{}, err
		}
		return Document{}, fmt.Errorf("%w: store chunks: %v", ErrUnavailable, err)
	}
	doc.Collection = c.Name
	doc.fill()
	s.log.Info("ingested", "collection", c.Name, "document", req.ID, "chunks", len(rows), "tokens", emb.tokens, "ms", time.Since(began).Milliseconds())
	return doc, nil
}

// chunkRow is a chunk ready to store.
type chunkRow struct {
	content  string
	metadata map[string]any
	vector   []float32
}

// replaceChunks swaps the document's chunks for rows under a new version
// of the collection (locking its row, so versions commit in order),
// records tombstones for the old chunks and notifies every box. It runs in
// the caller's transaction and returns the version.
func replaceChunks(ctx context.Context, tx pgx.Tx, collID int64, docID string, rows []chunkRow) (int64, error) {
	var version int64
	if err := tx.QueryRow(ctx, `UPDATE stackbone_platform.rag_collections SET version = version + 1 WHERE id = $1 RETURNING version`, collID).Scan(&version); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `
		WITH d AS (DELETE FROM stackbone_platform.rag_chunks WHERE document_id = $1 RETURNING id)
		INSERT INTO stackbone_platform.rag_tombstones (collection_id, chunk_id, version) SELECT $2, id, $3 FROM d`,
		docID, collID, version); err != nil {
		return 0, err
	}
	if len(rows) > 0 {
		i := 0
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"stackbone_platform", "rag_chunks"},
			[]string{"collection_id", "document_id", "chunk_index", "content", "metadata", "embedding", "version"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i == len(rows) {
					return nil, nil
				}
				r := rows[i]
				meta, err := json.Marshal(orEmpty(r.metadata))
				if err != nil {
					return nil, err
				}
				i++
				return []any{collID, docID, i - 1, r.content, meta, r.vector, version}, nil
			}))
		if err != nil {
			return 0, err
		}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, fmt.Sprintf("%d:%d", collID, version)); err != nil {
		return 0, err
	}
	return version, nil
}

// DeleteDocument removes a document, its chunks and its original, and
// cancels its ingest job if one is pending. Errors: ErrDocumentNotFound,
// ErrUnavailable.
func (s *Service) DeleteDocument(ctx context.Context, id string) error {
	var key *string
	var jobID *int64
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var collID int64
		err := tx.QueryRow(ctx, `SELECT collection_id, object_key, job_id FROM stackbone_platform.rag_documents WHERE id = $1 FOR UPDATE`, id).
			Scan(&collID, &key, &jobID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrDocumentNotFound, clip(id, 200))
		}
		if err != nil {
			return err
		}
		if _, err := replaceChunks(ctx, tx, collID, id, nil); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM stackbone_platform.rag_documents WHERE id = $1`, id); err != nil {
			return err
		}
		if jobID != nil {
			if client := s.jobClient(); client != nil {
				if _, err := client.JobCancelTx(ctx, tx, *jobID); err != nil && !isJobNotFound(err) {
					return err
				}
			}
		}
		return nil
	})
	if errors.Is(err, ErrDocumentNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: delete document: %v", ErrUnavailable, err)
	}
	if key != nil && s.cfg.Store != nil {
		// After the commit: a crash here leaves an orphan original, never
		// a document without one.
		if err := s.cfg.Store.Delete(context.WithoutCancel(ctx), *key); err != nil {
			s.log.Warn("delete original failed; it is orphaned", "document", id, "key", *key, "error", err)
		}
	}
	s.log.Info("document deleted", "document", id)
	return nil
}

// documentColumns are read by Document.scanTargets, in order.
const documentColumns = `id, collection_id, source, coalesce(filename, ''), coalesce(content_type, ''), size_bytes,
	coalesce(sha256, ''), coalesce(object_key, ''), metadata, status, error_code, error_message, job_id, run_id::text,
	attempts, chunk_count, created_at, updated_at`

func (d *Document) scanTargets() []any {
	d.errCode, d.errMsg = nil, nil
	return []any{&d.ID, &d.collID, &d.Source, &d.Filename, &d.ContentType, &d.SizeBytes, &d.SHA256, &d.objectKey,
		&d.Metadata, &d.Status, &d.errCode, &d.errMsg, &d.JobID, &d.RunID, &d.Attempts, &d.Chunks, &d.CreatedAt, &d.UpdatedAt}
}

// Document returns one document. Errors: ErrDocumentNotFound, ErrUnavailable.
func (s *Service) Document(ctx context.Context, id string) (Document, error) {
	var d Document
	err := s.cfg.Pool.QueryRow(ctx, `SELECT `+documentColumns+`, (SELECT name FROM stackbone_platform.rag_collections c WHERE c.id = d.collection_id)
		FROM stackbone_platform.rag_documents d WHERE id = $1`, id).Scan(append(d.scanTargets(), &d.Collection)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return Document{}, fmt.Errorf("%w: %s", ErrDocumentNotFound, clip(id, 200))
	}
	if err != nil {
		return Document{}, fmt.Errorf("%w: read document: %v", ErrUnavailable, err)
	}
	d.fill()
	return d, nil
}

// DocumentFilter narrows Documents. Zero values do not filter.
type DocumentFilter struct {
	// Status is queued, running, succeeded or failed.
	Status string
	// Metadata keeps documents whose metadata contains this object (JSONB @>).
	Metadata map[string]any
	// Before lists the documents after this one in the list's order (the
	// last id of the previous page: a keyset cursor). An unknown id gives
	// an empty page.
	Before string
	// Offset skips documents (the older paging; Before scales better).
	Offset int
	// Limit defaults to 100, at most 1000.
	Limit int
}

// Documents lists a collection's documents, newest first, each with a
// preview of its first chunk. Errors: ErrCollectionNotFound,
// ErrInvalidRequest (a bad status), ErrUnavailable.
func (s *Service) Documents(ctx context.Context, collection string, f DocumentFilter) ([]Document, error) {
	c, err := s.collection(ctx, s.cfg.Pool, collection)
	if err != nil {
		return nil, err
	}
	switch f.Status {
	case "", StatusQueued, StatusRunning, StatusSucceeded, StatusFailed:
	default:
		return nil, fmt.Errorf("%w: status must be queued, running, succeeded or failed", ErrInvalidRequest)
	}
	if err := checkMetadata("filter", f.Metadata); err != nil {
		return nil, err
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	var meta any
	if f.Metadata != nil {
		meta = f.Metadata
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+documentColumns+`,
		coalesce((SELECT left(content, 200) FROM stackbone_platform.rag_chunks k WHERE k.document_id = d.id AND k.chunk_index = 0), '')
		FROM stackbone_platform.rag_documents d
		WHERE collection_id = $1 AND ($4 = '' OR status = $4) AND ($5::jsonb IS NULL OR metadata @> $5)
		  AND ($6 = '' OR (created_at, id) < (SELECT created_at, id FROM stackbone_platform.rag_documents WHERE id = $6))
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, c.id, f.Limit, max(f.Offset, 0), f.Status, meta, f.Before)
	if err != nil {
		return nil, fmt.Errorf("%w: list documents: %v", ErrUnavailable, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Document, error) {
		var d Document
		err := r.Scan(append(d.scanTargets(), &d.Preview)...)
		d.Collection = c.Name
		d.fill()
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: list documents: %v", ErrUnavailable, err)
	}
	return out, nil
}

func (d *Document) fill() {
	if d.errCode != nil {
		d.Error = &ItemError{Code: *d.errCode}
		if d.errMsg != nil {
			d.Error.Message = *d.errMsg
		}
	}
	if d.Metadata == nil {
		d.Metadata = map[string]any{}
	}
}

func checkMetadata(field string, m map[string]any) error {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil || len(b) > MaxMetadataBytes {
		return fmt.Errorf("%w: %s must be a JSON object of at most %d bytes", ErrInvalidRequest, field, MaxMetadataBytes)
	}
	return nil
}

// merge returns base with over's keys on top (neither is changed).
func merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
