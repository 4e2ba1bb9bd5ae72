// Package recordings keeps calls' audio: two channels (the caller left,
// the agent right) on the schedule the agent's audio went out on, so the
// recording lines up with the heard transcript. A call's recording is
// written to a spool file while the call runs, then stored in the object
// store with a row in call_recordings when the call completes; it is
// hidden at once and removed by a job on the person's erasure, and when
// its retention ends.
//
//	svc, _ := recordings.New(recordings.Config{Pool: pool, Store: store})
//	take, _ := svc.Begin(callID, 8000)
//	take.Caller(frame)                  // as the caller's audio arrives
//	take.Agent(frame)                   // on each frame the agent plays
//	info, err := take.Keep(ctx, recordings.Meta{AgentID: "support", UserID: "+1555", Retention: 30 * 24 * time.Hour})
//	rc, info, err := svc.Open(ctx, callID)
package recordings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/objectstore"
)

// ErrNotFound: the call has no recording (never made, declined, erased or
// expired).
var ErrNotFound = errors.New("recordings: not found")

// Config wires a Service.
type Config struct {
	// Pool holds call_recordings. Required.
	Pool *pgxpool.Pool
	// Store keeps the audio. Required.
	Store objectstore.Store
	// SpoolDir holds recordings while their calls run (default
	// stackbone-recordings in the system's temporary directory).
	SpoolDir string
	// Logger receives call ids, sizes and errors, never audio.
	Logger *slog.Logger
}

// Service makes, keeps, serves and removes recordings. It is safe for
// concurrent use.
type Service struct {
	cfg    Config
	log    *slog.Logger
	insert *jobs.Client
}

// New returns the service; it creates the spool directory.
func New(cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = filepath.Join(os.TempDir(), "stackbone-recordings")
	}
	if err := os.MkdirAll(cfg.SpoolDir, 0o700); err != nil {
		return nil, fmt.Errorf("recordings: spool: %w", err)
	}
	// An insert-only client: the purge after an erasure is queued in the
	// erasure's transaction.
	insert, err := jobs.NewInserter(cfg.Pool, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("recordings: %w", err)
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "recordings"), insert: insert}, nil
}

// Mark is where one heard transcript entry sits in a recording.
type Mark struct {
	Turn    int    `json:"turn"`
	Role    string `json:"role"`
	StartMs int64  `json:"startMs"`
	EndMs   int64  `json:"endMs"`
}

// Meta is what a kept recording is filed under.
type Meta struct {
	AgentID string
	// UserID is the person the call was with ("" for none): their erasure
	// removes the recording.
	UserID    string
	Retention time.Duration
	Marks     []Mark
}

// Info describes a kept recording.
type Info struct {
	CallID     string    `json:"callId"`
	Format     string    `json:"format"`
	SampleRate int       `json:"sampleRate"`
	Channels   []string  `json:"channels"`
	DurationMs int64     `json:"durationMs"`
	SizeBytes  int64     `json:"sizeBytes"`
	Marks      []Mark    `json:"marks"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// Channels of a recording, left to right.
var Channels = []string{"caller", "agent"}

// objectKey is where a call's recording is kept in the store.
func objectKey(callID, format string) string { return "recordings/" + callID + "." + format }

// Get describes call id's recording; ErrNotFound when it has none.
func (s *Service) Get(ctx context.Context, callID string) (Info, error) {
	in := Info{CallID: callID, Channels: Channels}
	err := s.cfg.Pool.QueryRow(ctx, `SELECT format, sample_rate, duration_ms, size_bytes, marks, created_at, expires_at
		FROM stackbone_platform.call_recordings WHERE call_id = $1 AND erased_at IS NULL AND expires_at > now()`, callID).
		Scan(&in.Format, &in.SampleRate, &in.DurationMs, &in.SizeBytes, &in.Marks, &in.CreatedAt, &in.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("recordings: %w", err)
	}
	if in.Marks == nil {
		in.Marks = []Mark{}
	}
	return in, nil
}

// Open returns call id's audio (the caller closes it) and its description.
func (s *Service) Open(ctx context.Context, callID string) (io.ReadCloser, Info, error) {
	in, err := s.Get(ctx, callID)
	if err != nil {
		return nil, Info{}, err
	}
	rc, _, err := s.cfg.Store.Get(ctx, objectKey(callID, in.Format))
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, Info{}, ErrNotFound
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("recordings: %w", err)
	}
	return rc, in, nil
}

// EraseTx hides every recording made with one person of one agent, in
// the erasure's transaction tx, and queues the job that removes their
// audio (see Purge).
func (s *Service) EraseTx(ctx context.Context, tx pgx.Tx, agentID, userID string) error {
	tag, err := tx.Exec(ctx, `UPDATE stackbone_platform.call_recordings SET erased_at = now()
		WHERE agent_id = $1 AND user_id = $2 AND erased_at IS NULL`, agentID, userID)
	if err != nil {
		return fmt.Errorf("recordings: erase: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	if _, err := s.insert.InsertTx(ctx, tx, PurgeArgs{}, nil); err != nil {
		return fmt.Errorf("recordings: erase: %w", err)
	}
	return nil
}

// Purge removes the audio and rows of the recordings erased or past their
// retention at now, and reports how many.
func (s *Service) Purge(ctx context.Context, now time.Time) (int, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT call_id, format FROM stackbone_platform.call_recordings
		WHERE erased_at IS NOT NULL OR expires_at <= $1 LIMIT 1000`, now)
	if err != nil {
		return 0, fmt.Errorf("recordings: purge: %w", err)
	}
	type gone struct{ id, format string }
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gone, error) {
		var g gone
		return g, r.Scan(&g.id, &g.format)
	})
	if err != nil {
		return 0, fmt.Errorf("recordings: purge: %w", err)
	}
	n := 0
	for _, g := range list {
		// The object first: a row left behind is tried again, an object
		// left without its row would never be.
		if err := s.cfg.Store.Delete(ctx, objectKey(g.id, g.format)); err != nil {
			return n, fmt.Errorf("recordings: purge: %w", err)
		}
		if _, err := s.cfg.Pool.Exec(ctx, `DELETE FROM stackbone_platform.call_recordings WHERE call_id = $1`, g.id); err != nil {
			return n, fmt.Errorf("recordings: purge: %w", err)
		}
		n++
	}
	return n, nil
}

// keep stores a finished spool file and files it; the spool file is
// removed whatever happens.
func (s *Service) keep(ctx context.Context, t *Take, meta Meta) (Info, error) {
	defer os.Remove(t.path)
	st, err := os.Stat(t.path)
	if err != nil {
		return Info{}, fmt.Errorf("recordings: %w", err)
	}
	f, err := os.Open(t.path)
	if err != nil {
		return Info{}, fmt.Errorf("recordings: %w", err)
	}
	defer f.Close()
	key := objectKey(t.callID, t.format)
	if err := s.cfg.Store.Put(ctx, key, f, st.Size(), ContentType(t.format)); err != nil {
		return Info{}, fmt.Errorf("recordings: store: %w", err)
	}
	if meta.Marks == nil {
		meta.Marks = []Mark{}
	}
	in := Info{CallID: t.callID, Format: t.format, SampleRate: t.rate, Channels: Channels,
		DurationMs: t.frames * 20, SizeBytes: st.Size(), Marks: meta.Marks}
	err = s.cfg.Pool.QueryRow(ctx, `INSERT INTO stackbone_platform.call_recordings
		(call_id, agent_id, user_id, object_key, format, sample_rate, duration_ms, size_bytes, marks, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + $10::interval)
		ON CONFLICT (call_id) DO UPDATE SET duration_ms = EXCLUDED.duration_ms, size_bytes = EXCLUDED.size_bytes,
		  marks = EXCLUDED.marks
		RETURNING created_at, expires_at`,
		t.callID, meta.AgentID, meta.UserID, key, t.format, t.rate, in.DurationMs, in.SizeBytes, meta.Marks,
		fmt.Sprintf("%d milliseconds", meta.Retention.Milliseconds())).Scan(&in.CreatedAt, &in.ExpiresAt)
	if err != nil {
		_ = s.cfg.Store.Delete(context.WithoutCancel(ctx), key)
		return Info{}, fmt.Errorf("recordings: file: %w", err)
	}
	s.log.Info("recording kept", "call", t.callID, "format", t.format, "ms", in.DurationMs, "bytes", in.SizeBytes)
	return in, nil
}
