package stores

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider"
)

// Models resolves provider/model ids. *provider.Registry implements it.
type Models interface {
	Resolve(id string) (provider.Model, error)
}

// Config wires a Service. Zero durations and counts take the default named
// in their comment.
type Config struct {
	// Pool holds stores, memories, versions and learning. Required.
	Pool *pgxpool.Pool
	// Agents are the declared agents: each gets a learned store, its model
	// is the default memory model, and its memoryStores are attached to its
	// sessions. Required (may be empty).
	Agents map[string]config.Agent
	// Models resolves memory models for reports and learning runs. Required
	// for learning.
	Models Models
	// Logger receives ids, sizes, codes and timings, never memory content,
	// reports or transcripts. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock for finished-session detection, retries and
	// retention. Defaults to time.Now.
	Now func() time.Time

	// IdleAfter is when a session counts as finished: no turn for this
	// long, not running, not waiting for a decision. Default 30 minutes.
	IdleAfter time.Duration
	// ReportLookback bounds how far back finished sessions are looked for.
	// Default 7 days.
	ReportLookback time.Duration
	// ReportsPerRun useful reports waiting start a learning run at once.
	// Default 3.
	ReportsPerRun int
	// Schedule is the regular schedule: a run for any useful report that
	// has waited this long since the last check. Default 6 hours.
	Schedule time.Duration
	// MaxReportsPerRun is how many reports one run reads. Default 20.
	MaxReportsPerRun int
	// MaxChangesPerRun is the most changes one run may apply. Default 20.
	MaxChangesPerRun int
	// RetryDelay is the wait before retry n (1-based) of a failed learning
	// run. Default 1 minute doubling to at most 1 hour.
	RetryDelay func(attempt int) time.Duration
	// TickInterval is how often the scheduler looks for finished sessions
	// and due runs. Default 1 minute.
	TickInterval time.Duration
	// PruneInterval is how often old versions are pruned. Default 1 hour.
	PruneInterval time.Duration
	// Retention is how long versions are kept. Default 30 days.
	Retention time.Duration
	// KeepRecentVersions of each live memory are kept regardless of age.
	// Default 10.
	KeepRecentVersions int
	// ModelTimeout bounds one model request. Default 2 minutes.
	ModelTimeout time.Duration
}

// Service is memory stores: the Go API behind the HTTP routes, the session
// tools and the learning jobs. It is safe for concurrent use.
type Service struct {
	cfg   Config
	log   *slog.Logger
	tools toolCache
}

// New returns a Service; it does no I/O (call Sync at start).
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Agents == nil {
		cfg.Agents = map[string]config.Agent{}
	}
	durDefault := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	intDefault := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	durDefault(&cfg.IdleAfter, 30*time.Minute)
	durDefault(&cfg.ReportLookback, 7*24*time.Hour)
	durDefault(&cfg.Schedule, 6*time.Hour)
	durDefault(&cfg.TickInterval, time.Minute)
	durDefault(&cfg.PruneInterval, time.Hour)
	durDefault(&cfg.Retention, 30*24*time.Hour)
	durDefault(&cfg.ModelTimeout, 2*time.Minute)
	intDefault(&cfg.ReportsPerRun, 3)
	intDefault(&cfg.MaxReportsPerRun, 20)
	intDefault(&cfg.MaxChangesPerRun, 20)
	intDefault(&cfg.KeepRecentVersions, 10)
	if cfg.RetryDelay == nil {
		cfg.RetryDelay = DefaultRetryDelay
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "stores")}
}

// DefaultRetryDelay is 1 minute for the first retry, doubling to at most
// an hour.
func DefaultRetryDelay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 7 {
		return time.Hour
	}
	return min(time.Minute<<(attempt-1), time.Hour)
}

// Sync creates the learned store and the learning row of every declared
// agent that lacks them. Call it once at start; it is idempotent and safe
// with several boxes starting together.
func (s *Service) Sync(ctx context.Context) error {
	for name := range s.cfg.Agents {
		if _, err := s.learnedStore(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) agentExists(name string) bool {
	_, ok := s.cfg.Agents[name]
	return ok
}

const storeCols = `id, name, slug, description, agent_id, origin, status, memory_count, total_bytes, revision, created_at, updated_at, archived_at`

func scanStore(row pgx.Row) (Store, error) {
	var st Store
	err := row.Scan(&st.ID, &st.Name, &st.Slug, &st.Description, &st.AgentID, &st.Origin, &st.Status, &st.MemoryCount,
		&st.TotalBytes, &st.Revision, &st.CreatedAt, &st.UpdatedAt, &st.ArchivedAt)
	st.CreatedAt, st.UpdatedAt = st.CreatedAt.UTC(), st.UpdatedAt.UTC()
	if st.ArchivedAt != nil {
		t := st.ArchivedAt.UTC()
		st.ArchivedAt = &t
	}
	return st, err
}

// learnedStore returns the agent's learned store, creating it (and the
// agent's learning row) on first use. It returns ErrNotFound for an agent
// the configuration does not declare.
func (s *Service) learnedStore(ctx context.Context, agentName string) (Store, error) {
	if !s.agentExists(agentName) {
		return Store{}, notFound("no agent " + clip(agentName, 64))
	}
	st, err := scanStore(s.cfg.Pool.QueryRow(ctx, `SELECT `+storeCols+` FROM stackbone_platform.memory_stores
		WHERE agent_id = $1 AND origin = 'reflection'`, agentName))
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Store{}, dbErr("read learned store", err)
	}
	if _, err := s.cfg.Pool.Exec(ctx, `INSERT INTO stackbone_platform.agent_learning (agent_id) VALUES ($1) ON CONFLICT DO NOTHING`, agentName); err != nil {
		return Store{}, dbErr("create learning row", err)
	}
	desc := fmt.Sprintf("What the agent %s learned from its finished sessions: tactics that worked, conventions, and pitfalls to avoid. Look here before you start a task like one the agent has done before.", agentName)
	base := Slugify("learned " + agentName)
	for i := 1; i <= 50; i++ {
		slug := base
		if i > 1 {
			slug = fmt.Sprintf("%s-%d", base, i)
		}
		st, err = scanStore(s.cfg.Pool.QueryRow(ctx, `INSERT INTO stackbone_platform.memory_stores
			  (id, name, slug, description, agent_id, origin) VALUES ($1, $2, $3, $4, $5, 'reflection')
			ON CONFLICT DO NOTHING RETURNING `+storeCols, uuid.New(), "Learned memory", slug, desc, agentName))
		if err == nil {
			s.log.Info("learned store created", "agent", agentName, "store", st.ID)
			return st, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return Store{}, dbErr("create learned store", err)
		}
		// Another box created it, or the slug is taken.
		st, err = scanStore(s.cfg.Pool.QueryRow(ctx, `SELECT `+storeCols+` FROM stackbone_platform.memory_stores
			WHERE agent_id = $1 AND origin = 'reflection'`, agentName))
		if err == nil {
			return st, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return Store{}, dbErr("read learned store", err)
		}
	}
	return Store{}, fmt.Errorf("%w: no free slug for the learned store of %s", ErrUnavailable, agentName)
}

// inTx runs fn in a transaction, committing when it returns nil.
func (s *Service) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return dbErr(op, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return dbErr(op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return dbErr(op, err)
	}
	return nil
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
