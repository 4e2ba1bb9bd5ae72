package rag

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/objectstore"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/telemetry"
)

// Defaults of a collection created without a model.
const (
	DefaultModel      = "openai/text-embedding-3-small"
	DefaultDimensions = 1536
	DefaultCollection = "default"
)

// Limits.
const (
	// MaxUploadBytes is the largest file an upload takes (25 MB).
	MaxUploadBytes = 25 << 20
	// MaxChunkChars is the longest chunk, in characters.
	MaxChunkChars = 24000
	// MaxChunksPerIngest is the most chunks one code ingest takes.
	MaxChunksPerIngest = 2000
	// MaxChunksPerDocument is the most chunks an uploaded file may split into.
	MaxChunksPerDocument = 50000
	// MaxTopK is the most hits one retrieval answers.
	MaxTopK = 100
	// MaxQueryChars is the longest retrieval text.
	MaxQueryChars = 8000
	// MaxMetadataBytes bounds the JSON metadata of a document or chunk.
	MaxMetadataBytes = 16 << 10
)

// Models resolves provider/model ids. *provider.Registry implements it.
type Models interface {
	Resolve(id string) (provider.Model, error)
}

// Config wires a Service. Required: Pool and Models.
type Config struct {
	Pool   *pgxpool.Pool
	Models Models
	// Store keeps uploaded originals. Nil: uploads answer rag_ingest_unavailable.
	Store objectstore.Store
	// Runs records one run per ingest job attempt. Defaults to runs.NewStore(Pool).
	Runs *runs.Store
	// Logger receives ids, counts, codes and timings, never document or
	// query text. Defaults to slog.Default().
	Logger *slog.Logger
	// Hybrid fuses full-text ranking into retrievals that do not say.
	Hybrid bool
	// Metrics records retrievals and ingest attempts (nil: none).
	Metrics *telemetry.Metrics
	// Events records rag.document.ingested in the transaction that stores
	// a document's chunks (nil: none).
	Events Events
	// IngestMaxAttempts is how often River tries an ingest job before it
	// is failed for good (a retry route starts it again). Default 5.
	IngestMaxAttempts int
	// RetryBackoff is the wait before attempt n+1 of a failed ingest job.
	// Nil: River's default (n⁴ seconds, with jitter).
	RetryBackoff func(attempt int) time.Duration
	// IngestTimeout bounds one ingest attempt. Default 10 minutes.
	IngestTimeout time.Duration
	// Parse bounds what parsing one uploaded file may inflate (pages,
	// bytes, text runs, time); zero fields take their defaults.
	Parse ParseLimits
	// SpoolDir holds uploads while they arrive (default os.TempDir()).
	// Spool files a killed box left there, untouched for an hour, are
	// removed at Start and then every SpoolSweepEvery while the box runs
	// (default 10 minutes), so a box that is not restarted sweeps them too.
	SpoolDir        string
	SpoolSweepEvery time.Duration
	// EmbedBatch is how many texts go in one embeddings request. Default 128.
	EmbedBatch int
	// ChunkChars and OverlapChars shape the chunks of uploaded files.
	// Defaults 1200 and 200.
	ChunkChars, OverlapChars int
	// ExactBelow: collections (or filtered subsets) with fewer live chunks
	// are searched exactly, and their graph is not built. Default 2000.
	ExactBelow int
	// EfSearch is the beam width of the graph search. Default 96.
	EfSearch int
	// SyncInterval is how often every loaded index checks its collection's
	// version, in case a notification was missed. Default 30 seconds.
	SyncInterval time.Duration
}

// spoolSweepAge is how long a spool file must have been untouched before
// it is taken for a killed box's: far past any upload's read timeout.
const spoolSweepAge = time.Hour

// Service holds collections, documents and chunks, ingests and retrieves.
// It is safe for concurrent use.
type Service struct {
	cfg  Config
	log  *slog.Logger
	runs *runs.Store
	idx  *indexes

	mu   sync.RWMutex
	jobs *jobs.Client
}

// New returns a Service. Call AddWorkers before the job client is built,
// and Start once it is.
func New(cfg Config) (*Service, error) {
	if cfg.Pool == nil || cfg.Models == nil {
		return nil, errors.New("rag: Config needs Pool and Models")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Runs == nil {
		cfg.Runs = runs.NewStore(cfg.Pool)
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = os.TempDir()
	}
	setDefault(&cfg.IngestMaxAttempts, 5)
	setDefault(&cfg.EmbedBatch, 128)
	setDefault(&cfg.ChunkChars, 1200)
	setDefault(&cfg.OverlapChars, 200)
	setDefault(&cfg.ExactBelow, 2000)
	setDefault(&cfg.EfSearch, 96)
	if cfg.IngestTimeout <= 0 {
		cfg.IngestTimeout = 10 * time.Minute
	}
	if cfg.SyncInterval <= 0 {
		cfg.SyncInterval = 30 * time.Second
	}
	if cfg.SpoolSweepEvery <= 0 {
		cfg.SpoolSweepEvery = 10 * time.Minute
	}
	if cfg.OverlapChars >= cfg.ChunkChars {
		return nil, errors.New("rag: OverlapChars must be less than ChunkChars")
	}
	log := cfg.Logger.With("component", "rag")
	s := &Service{cfg: cfg, log: log, runs: cfg.Runs}
	s.idx = newIndexes(cfg.Pool, log, cfg.ExactBelow)
	return s, nil
}

// sweepSpool removes the spool files a killed box left (sweepSpool).
func (s *Service) sweepSpool() {
	if n, err := sweepSpool(s.cfg.SpoolDir, spoolSweepAge); err != nil {
		s.log.Warn("sweep upload spool", "error", err)
	} else if n > 0 {
		s.log.Info("removed upload spool files a stopped box left", "files", n)
	}
}

func setDefault(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

// Start gives the service its job client (for uploads, retry, cancel and
// the jobs list; nil leaves uploads unavailable) and starts the indexes:
// every collection is loaded from Postgres in the background, kept current
// by notifications from every box, and linked into its graph. The
// goroutines end with ctx.
func (s *Service) Start(ctx context.Context, client *jobs.Client) error {
	s.mu.Lock()
	s.jobs = client
	s.mu.Unlock()
	s.sweepSpool()
	go func() {
		t := time.NewTicker(s.cfg.SpoolSweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sweepSpool()
			}
		}
	}()
	var pgvector bool
	if err := s.cfg.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&pgvector); err == nil && pgvector {
		// Measured: the in-memory graph answers in about a millisecond at
		// 100,000 chunks, so the extension is not needed; embeddings are
		// real[] and can be cast to vector if an operator wants its index.
		s.log.Info("pgvector is available on this server; retrieval uses the box's own in-memory HNSW index, which needs no extension")
	}
	return s.idx.start(ctx, s.cfg.SyncInterval)
}

func (s *Service) jobClient() *jobs.Client {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.jobs
}

// Collection is a named set of documents embedded with one model.
type Collection struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Model       string    `json:"model"`
	Dimensions  int       `json:"dimensions"`
	Documents   int       `json:"documents"`
	Chunks      int       `json:"chunks"`
	CreatedAt   time.Time `json:"createdAt"`

	id      int64
	version int64
}

// CreateCollection is the body of a collection creation.
type CreateCollection struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Model defaults to openai/text-embedding-3-small, Dimensions to 1536
	// for it (a model of your own needs its dimension).
	Model      string `json:"model,omitempty"`
	Dimensions int    `json:"dimensions,omitempty"`
}

// CreateCollection creates a collection. Errors: ErrInvalidRequest,
// ErrCollectionExists.
func (s *Service) CreateCollection(ctx context.Context, req CreateCollection) (Collection, error) {
	if !config.ValidCollectionName(req.Name) {
		return Collection{}, fmt.Errorf("%w: name must be 1 to 64 lower-case letters, digits, '_', '.' or '-', starting with a letter or digit", ErrInvalidRequest)
	}
	if utf8.RuneCountInString(req.Description) > 1000 {
		return Collection{}, fmt.Errorf("%w: description is longer than 1000 characters", ErrInvalidRequest)
	}
	if req.Model == "" {
		req.Model = DefaultModel
	}
	if _, _, err := config.SplitModel(req.Model); err != nil {
		return Collection{}, fmt.Errorf("%w: model: %v", ErrInvalidRequest, err)
	}
	if req.Dimensions == 0 {
		if d, ok := knownDimensions[req.Model]; ok {
			req.Dimensions = d
		} else {
			return Collection{}, fmt.Errorf("%w: dimensions is required for model %s", ErrInvalidRequest, req.Model)
		}
	}
	if req.Dimensions < 1 || req.Dimensions > 16000 {
		return Collection{}, fmt.Errorf("%w: dimensions must be 1 to 16000", ErrInvalidRequest)
	}
	c := Collection{Name: req.Name, Description: req.Description, Model: req.Model, Dimensions: req.Dimensions}
	err := s.cfg.Pool.QueryRow(ctx, `
		INSERT INTO stackbone_platform.rag_collections (name, description, model, dimensions)
		VALUES ($1, $2, $3, $4) RETURNING id, created_at`, c.Name, c.Description, c.Model, c.Dimensions).Scan(&c.id, &c.CreatedAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return Collection{}, fmt.Errorf("%w: %s", ErrCollectionExists, c.Name)
	}
	if err != nil {
		return Collection{}, fmt.Errorf("%w: create collection: %v", ErrUnavailable, err)
	}
	s.log.Info("collection created", "collection", c.Name, "model", c.Model, "dimensions", c.Dimensions)
	return c, nil
}

// knownDimensions are the native dimensions of common embedding models.
var knownDimensions = map[string]int{
	"openai/text-embedding-3-small": 1536,
	"openai/text-embedding-3-large": 3072,
	"openai/text-embedding-ada-002": 1536,
}

// Collections lists every collection by name, with counts.
func (s *Service) Collections(ctx context.Context) ([]Collection, error) {
	rows, err := s.cfg.Pool.Query(ctx, `
		SELECT c.id, c.name, c.description, c.model, c.dimensions, c.version, c.created_at,
		       (SELECT count(*) FROM stackbone_platform.rag_documents d WHERE d.collection_id = c.id),
		       (SELECT count(*) FROM stackbone_platform.rag_chunks k WHERE k.collection_id = c.id)
		FROM stackbone_platform.rag_collections c ORDER BY c.name`)
	if err != nil {
		return nil, fmt.Errorf("%w: list collections: %v", ErrUnavailable, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Collection, error) {
		var c Collection
		err := r.Scan(&c.id, &c.Name, &c.Description, &c.Model, &c.Dimensions, &c.version, &c.CreatedAt, &c.Documents, &c.Chunks)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: list collections: %v", ErrUnavailable, err)
	}
	return out, nil
}

// collection reads one collection by name (no counts).
func (s *Service) collection(ctx context.Context, q querier, name string) (Collection, error) {
	if name == "" {
		name = DefaultCollection
	}
	if !config.ValidCollectionName(name) {
		return Collection{}, fmt.Errorf("%w: %q is not a collection name", ErrCollectionNotFound, clip(name, 80))
	}
	var c Collection
	err := q.QueryRow(ctx, `
		SELECT id, name, description, model, dimensions, version, created_at
		FROM stackbone_platform.rag_collections WHERE name = $1`, name).
		Scan(&c.id, &c.Name, &c.Description, &c.Model, &c.Dimensions, &c.version, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Collection{}, fmt.Errorf("%w: %s (create it with POST /api/rag/collections)", ErrCollectionNotFound, name)
	}
	if err != nil {
		return Collection{}, fmt.Errorf("%w: read collection: %v", ErrUnavailable, err)
	}
	return c, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// checkModel refuses a model other than the collection's.
func checkModel(c Collection, model string) error {
	if model != "" && model != c.Model {
		return fmt.Errorf("%w: collection %s is embedded with %s (%d dimensions), not %s; one collection holds one model's vectors, so re-ingest into a collection of that model",
			ErrModelMismatch, c.Name, c.Model, c.Dimensions, clip(model, 100))
	}
	return nil
}

func isModelFamily3(name string) bool { return strings.HasPrefix(name, "text-embedding-3") }
