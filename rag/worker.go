package rag

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/runs"
)

// KindIngest is the River job kind, and the run kind, of an upload's ingest.
const KindIngest = "rag_ingest"

// queue is the River queue of ingest jobs, so a burst of uploads does not
// hold up other background work.
const queue = "rag"

// IngestArgs are the arguments of an ingest job: only the document id;
// everything else is read from the document row when the job runs.
type IngestArgs struct {
	DocumentID string `json:"document_id"`
}

// Kind is the job kind.
func (IngestArgs) Kind() string { return KindIngest }

// InsertOpts puts ingest jobs on their queue.
func (IngestArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue} }

// AddWorkers registers the ingest worker and its queue (two at a time per
// box) on reg, before the job client is built.
func (s *Service) AddWorkers(reg *jobs.Registry) {
	river.AddWorker(reg.Workers(), &ingestWorker{s: s})
	reg.Queue(queue, 2)
}

type ingestWorker struct {
	river.WorkerDefaults[IngestArgs]
	s *Service
}

func (w *ingestWorker) Timeout(*river.Job[IngestArgs]) time.Duration { return w.s.cfg.IngestTimeout }

func (w *ingestWorker) NextRetry(job *river.Job[IngestArgs]) time.Time {
	if w.s.cfg.RetryBackoff == nil {
		return time.Time{}
	}
	return time.Now().Add(w.s.cfg.RetryBackoff(job.Attempt))
}

// Work runs one attempt. Every attempt converges: it replaces the
// document's chunks in one transaction, so an attempt cut short by a crash
// or a shutdown leaves the old chunks, and the next attempt (River retries
// it, or rescues it from a dead box) does the whole work again.
func (w *ingestWorker) Work(ctx context.Context, job *river.Job[IngestArgs]) (err error) {
	defer func(start time.Time) { w.s.cfg.Metrics.RAG("ingest", err, time.Since(start)) }(time.Now())
	return w.s.runIngest(ctx, job.ID, job.Attempt, job.MaxAttempts, job.Args.DocumentID)
}

// permanent errors fail the job at once: trying again cannot help until a
// person changes something (and then retries the job).
func permanent(err error) bool {
	for _, e := range []error{ErrParseFailed, ErrUnsupportedType, ErrModelMismatch, ErrInvalidRequest, ErrProviderNotConfigured, ErrFileTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *Service) runIngest(ctx context.Context, jobID int64, attempt, maxAttempts int, docID string) error {
	began := time.Now()
	run := runs.Run{ID: uuid.New(), Kind: KindIngest, StartedAt: began,
		Metadata: map[string]any{"documentId": docID, "jobId": jobID, "attempt": attempt}}
	var d Document
	var c Collection
	err := s.cfg.Pool.QueryRow(ctx, `
		UPDATE stackbone_platform.rag_documents d SET status = 'running', attempts = $2, job_id = $3,
		  error_code = NULL, error_message = NULL, updated_at = now()
		FROM stackbone_platform.rag_collections c
		WHERE d.id = $1 AND c.id = d.collection_id AND d.status <> 'cancelled'
		RETURNING d.source, coalesce(d.filename, ''), coalesce(d.content_type, ''), coalesce(d.object_key, ''), d.metadata,
		  c.id, c.name, c.model, c.dimensions`, docID, attempt, jobID).
		Scan(&d.Source, &d.Filename, &d.ContentType, &d.objectKey, &d.Metadata, &c.id, &c.Name, &c.Model, &c.Dimensions)
	if errors.Is(err, pgx.ErrNoRows) {
		// Deleted or cancelled while it waited: nothing to do.
		s.log.Info("ingest skipped: the document is gone or cancelled", "document", docID, "job", jobID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("rag: start ingest: %w", err)
	}
	run.Model = c.Model
	run.Metadata["collection"] = c.Name
	chunks, tokens, err := s.ingestFile(ctx, d, c, run.Metadata)
	run.InputTokens = tokens
	if m, rerr := s.cfg.Models.Resolve(c.Model); rerr == nil {
		run.CostUSD = m.Cost(tokens, 0)
	}
	end := time.Now()
	ms := int(end.Sub(began).Milliseconds())
	run.FinishedAt, run.DurationMS = &end, &ms
	if err == nil {
		// The run commits with the chunks: a document never links to a run
		// that is not there yet.
		ok := run
		ok.Status = runs.StatusSucceeded
		err = s.commitIngest(ctx, docID, c.id, ok, chunks)
		if err == nil {
			s.log.Info("ingest succeeded", "document", docID, "job", jobID, "attempt", attempt, "chunks", len(chunks), "tokens", tokens, "ms", ms)
			return nil
		}
	}
	if errors.Is(err, errDocumentGone) {
		run.Status, run.ErrorCode = runs.StatusCancelled, "rag_document_deleted"
		s.recordRun(ctx, run)
		return nil
	}
	// Classify the failure for the document row, the run and River.
	code, msg := Code(err), err.Error()
	status, ret := StatusRetrying, err
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely):
		code, msg, status = "rag_cancelled", "an operator cancelled the ingest", StatusCancelled
		run.Status = runs.StatusCancelled
	case ctx.Err() != nil:
		// Shutdown or timeout: River tries again (or rescues the job).
		code, msg = "rag_interrupted", "the ingest was interrupted ("+ctx.Err().Error()+"); it will be retried"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code, msg = "rag_timeout", fmt.Sprintf("the ingest took longer than %s", s.cfg.IngestTimeout)
		}
	case permanent(err):
		status, ret = StatusFailed, river.JobCancel(err)
	case code == "":
		code, msg = "rag_internal", "internal error"
	}
	if status == StatusRetrying && attempt >= maxAttempts {
		status = StatusFailed
	}
	if run.Status == "" {
		run.Status = runs.StatusFailed
	}
	run.ErrorCode = code
	s.recordRun(ctx, run) // before the document links to it
	if _, uerr := s.cfg.Pool.Exec(context.WithoutCancel(ctx), `
		UPDATE stackbone_platform.rag_documents SET status = $2, error_code = $3, error_message = $4, run_id = $5, updated_at = now()
		WHERE id = $1`, docID, status, code, clip(msg, 500), run.ID); uerr != nil {
		s.log.Warn("record ingest failure", "document", docID, "error", uerr)
	}
	s.log.Warn("ingest failed", "document", docID, "job", jobID, "attempt", attempt, "code", code, "status", status, "ms", ms)
	return ret
}

var errDocumentGone = errors.New("rag: the document was deleted during its ingest")

func (s *Service) recordRun(ctx context.Context, run runs.Run) {
	if err := s.runs.Insert(context.WithoutCancel(ctx), run); err != nil {
		s.log.Warn("record ingest run", "run", run.ID, "error", err)
	}
}

// ingestFile reads, parses, chunks and embeds an uploaded file. meta
// receives counts for the run.
func (s *Service) ingestFile(ctx context.Context, d Document, c Collection, meta map[string]any) ([]chunkRow, int, error) {
	if s.cfg.Store == nil {
		return nil, 0, fmt.Errorf("%w: this box has no object store", ErrIngestUnavailable)
	}
	rc, _, err := s.cfg.Store.Get(ctx, d.objectKey)
	if err != nil {
		return nil, 0, fmt.Errorf("rag: read the original: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(rc, MaxUploadBytes+1))
	rc.Close()
	if err != nil {
		return nil, 0, fmt.Errorf("rag: read the original: %w", err)
	}
	if len(b) > MaxUploadBytes {
		return nil, 0, fmt.Errorf("%w: the original is over %d MB", ErrFileTooLarge, MaxUploadBytes>>20)
	}
	meta["bytes"] = len(b)
	pages, err := parse(d.ContentType, b, s.cfg.Parse)
	if err != nil {
		return nil, 0, err
	}
	meta["pages"] = len(pages)
	var rows []chunkRow
	for _, p := range pages {
		base := map[string]any{"source": d.Filename}
		if p.number > 0 {
			base["page"] = p.number
		}
		for _, text := range splitText(p.text, s.cfg.ChunkChars, s.cfg.OverlapChars, d.ContentType == kindMarkdown) {
			rows = append(rows, chunkRow{content: text, metadata: merge(base, d.Metadata)})
		}
		if len(rows) > MaxChunksPerDocument {
			return nil, 0, fmt.Errorf("%w: the document splits into more than %d chunks", ErrInvalidRequest, MaxChunksPerDocument)
		}
	}
	if len(rows) == 0 {
		return nil, 0, fmt.Errorf("%w: the document holds no text", ErrParseFailed)
	}
	meta["chunks"] = len(rows)
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.content
	}
	emb, err := s.embed(ctx, c, texts)
	if err != nil {
		return nil, 0, err
	}
	for i := range rows {
		rows[i].vector = emb.vectors[i]
	}
	return rows, emb.tokens, nil
}

// commitIngest stores the chunks and marks the document succeeded, in one
// transaction that first locks the document row: a document deleted
// meanwhile stays deleted.
func (s *Service) commitIngest(ctx context.Context, docID string, collID int64, run runs.Run, rows []chunkRow) error {
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM stackbone_platform.rag_documents WHERE id = $1 FOR UPDATE`, docID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return errDocumentGone
		}
		if err != nil {
			return err
		}
		if _, err := replaceChunks(ctx, tx, collID, docID, rows); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE stackbone_platform.rag_documents SET status = 'succeeded', chunk_count = $2, run_id = $3,
			  error_code = NULL, error_message = NULL, updated_at = now()
			WHERE id = $1`, docID, len(rows), run.ID)
		if err != nil {
			return err
		}
		if err := runs.InsertWith(ctx, tx, run); err != nil {
			return err
		}
		s.emitIngested(ctx, tx, docID, collID, len(rows), "upload")
		return nil
	})
	if err != nil && !errors.Is(err, errDocumentGone) && ctx.Err() == nil {
		return fmt.Errorf("%w: store chunks: %v", ErrUnavailable, err)
	}
	return err
}

// Job is an ingest job as River keeps it, with its document.
type Job struct {
	ID int64 `json:"id"`
	// State is River's: available, scheduled, running, retryable,
	// completed, cancelled or discarded.
	State          string     `json:"state"`
	Attempt        int        `json:"attempt"`
	MaxAttempts    int        `json:"maxAttempts"`
	DocumentID     string     `json:"documentId"`
	Collection     string     `json:"collection,omitempty"`
	Filename       string     `json:"filename,omitempty"`
	DocumentStatus string     `json:"documentStatus,omitempty"`
	Errors         []JobError `json:"errors"`
	CreatedAt      time.Time  `json:"createdAt"`
	AttemptedAt    *time.Time `json:"attemptedAt"`
	FinalizedAt    *time.Time `json:"finalizedAt"`
}

// JobError is the error of one failed attempt.
type JobError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// JobFilter narrows Jobs. Zero values do not filter.
type JobFilter struct {
	State      string
	Collection string
	// Limit defaults to 50, at most 500.
	Limit int
}

var jobStates = map[string]bool{"available": true, "scheduled": true, "running": true, "retryable": true,
	"completed": true, "cancelled": true, "discarded": true, "pending": true}

// Jobs lists ingest jobs, newest first. Errors: ErrInvalidRequest, ErrUnavailable.
func (s *Service) Jobs(ctx context.Context, f JobFilter) ([]Job, error) {
	if f.State != "" && !jobStates[f.State] {
		return nil, fmt.Errorf("%w: state %q is not a job state", ErrInvalidRequest, clip(f.State, 20))
	}
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 50
	}
	rows, err := s.cfg.Pool.Query(ctx, jobSelect+`
		WHERE j.kind = $1 AND ($2 = '' OR j.state::text = $2) AND ($3 = '' OR c.name = $3)
		ORDER BY j.id DESC LIMIT $4`, KindIngest, f.State, f.Collection, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("%w: list jobs: %v", ErrUnavailable, err)
	}
	out, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("%w: list jobs: %v", ErrUnavailable, err)
	}
	return out, nil
}

const jobSelect = `
	SELECT j.id, j.state::text, j.attempt, j.max_attempts, coalesce(j.args->>'document_id', ''),
	       coalesce(c.name, ''), coalesce(d.filename, ''), coalesce(d.status, ''),
	       coalesce(to_jsonb(j.errors), '[]'::jsonb), j.created_at, j.attempted_at, j.finalized_at
	FROM stackbone_platform.river_job j
	LEFT JOIN stackbone_platform.rag_documents d ON d.id = j.args->>'document_id'
	LEFT JOIN stackbone_platform.rag_collections c ON c.id = d.collection_id`

func scanJob(r pgx.CollectableRow) (Job, error) {
	var j Job
	var errs []struct {
		Attempt int       `json:"attempt"`
		At      time.Time `json:"at"`
		Error   string    `json:"error"`
	}
	err := r.Scan(&j.ID, &j.State, &j.Attempt, &j.MaxAttempts, &j.DocumentID, &j.Collection, &j.Filename, &j.DocumentStatus,
		&errs, &j.CreatedAt, &j.AttemptedAt, &j.FinalizedAt)
	j.Errors = []JobError{}
	for _, e := range errs {
		j.Errors = append(j.Errors, JobError{Attempt: e.Attempt, At: e.At, Error: e.Error})
	}
	return j, err
}

// Job returns one ingest job. Errors: ErrJobNotFound, ErrUnavailable.
func (s *Service) Job(ctx context.Context, id int64) (Job, error) {
	return s.job(ctx, s.cfg.Pool, id)
}

func (s *Service) job(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, id int64) (Job, error) {
	rows, err := q.Query(ctx, jobSelect+` WHERE j.id = $1 AND j.kind = $2`, id, KindIngest)
	if err != nil {
		return Job{}, fmt.Errorf("%w: read job: %v", ErrUnavailable, err)
	}
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, fmt.Errorf("%w: %d", ErrJobNotFound, id)
	}
	if err != nil {
		return Job{}, fmt.Errorf("%w: read job: %v", ErrUnavailable, err)
	}
	return j, nil
}

// RetryJob makes a failed, cancelled or finished ingest job run again now
// (a running one is left alone) and marks its document queued. Errors:
// ErrJobNotFound, ErrIngestUnavailable, ErrUnavailable.
//
// The job returned is as the retry left it (available), not as it is a
// moment later: a worker may have taken it up by the time the caller
// reads it, and "running" says the retry found it still running.
func (s *Service) RetryJob(ctx context.Context, id int64) (Job, error) {
	var retried *Job
	j, err := s.jobAction(ctx, id, "retry", func(tx pgx.Tx, client *jobs.Client, j Job) error {
		if j.State == "running" {
			return nil
		}
		if _, err := client.JobRetryTx(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.rag_documents SET status = 'queued', error_code = NULL,
			error_message = NULL, job_id = $2, updated_at = now() WHERE id = $1`, j.DocumentID, id); err != nil {
			return err
		}
		after, err := s.job(ctx, tx, id)
		retried = &after
		return err
	})
	if err == nil && retried != nil {
		return *retried, nil
	}
	return j, err
}

// CancelJob cancels an ingest job: a waiting one at once (its document
// marked cancelled), a running one by cancelling its context on whichever
// box runs it (the worker marks the document). Finished jobs are left as
// they are. Errors: ErrJobNotFound, ErrIngestUnavailable, ErrUnavailable.
func (s *Service) CancelJob(ctx context.Context, id int64) (Job, error) {
	return s.jobAction(ctx, id, "cancel", func(tx pgx.Tx, client *jobs.Client, j Job) error {
		row, err := client.JobCancelTx(ctx, tx, id)
		if err != nil {
			return err
		}
		if string(row.State) == "cancelled" {
			_, err = tx.Exec(ctx, `UPDATE stackbone_platform.rag_documents SET status = 'cancelled', error_code = 'rag_cancelled',
				error_message = 'an operator cancelled the ingest', updated_at = now()
				WHERE id = $1 AND status IN ('queued', 'retrying', 'running', 'failed')`, j.DocumentID)
		}
		return err
	})
}

func (s *Service) jobAction(ctx context.Context, id int64, what string, fn func(pgx.Tx, *jobs.Client, Job) error) (Job, error) {
	client := s.jobClient()
	if client == nil {
		return Job{}, fmt.Errorf("%w: this box has no job queue", ErrIngestUnavailable)
	}
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		j, err := s.job(ctx, tx, id)
		if err != nil {
			return err
		}
		return fn(tx, client, j)
	})
	if errors.Is(err, ErrJobNotFound) || errors.Is(err, ErrUnavailable) {
		return Job{}, err
	}
	if err != nil {
		if isJobNotFound(err) {
			return Job{}, fmt.Errorf("%w: %d", ErrJobNotFound, id)
		}
		return Job{}, fmt.Errorf("%w: %s job: %v", ErrUnavailable, what, err)
	}
	s.log.Info("job "+what, "job", id)
	return s.Job(ctx, id)
}

func isJobNotFound(err error) bool { return errors.Is(err, river.ErrNotFound) }
