package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
)

// Retention is how long an event, its deliveries and their log are kept
// once no delivery of it is still being tried.
const Retention = 30 * 24 * time.Hour

// KindPrune is the River job kind that removes events past Retention.
const KindPrune = "webhook_prune"

// PruneArgs are the prune job's (none).
type PruneArgs struct{}

// Kind is the job kind.
func (PruneArgs) Kind() string { return KindPrune }

// InsertOpts puts the prune on the webhooks queue, once at a time.
func (PruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue, UniqueOpts: river.UniqueOpts{ByPeriod: time.Hour}}
}

type pruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	s *Service
}

func (w *pruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	n, err := w.s.Prune(ctx, time.Now().Add(-Retention))
	if err != nil {
		return err
	}
	w.s.log.Info("webhook events pruned", "events", n)
	return nil
}

// Prune removes the events recorded before before, with their deliveries
// and log, except those with a delivery still pending or retrying. It
// returns how many events went.
func (s *Service) Prune(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.cfg.Pool.Exec(ctx, `DELETE FROM stackbone_platform.webhook_events e WHERE e.created_at < $1
		AND NOT EXISTS (SELECT 1 FROM stackbone_platform.webhook_deliveries d WHERE d.event_id = e.id AND d.status IN ('pending', 'retrying'))`, before)
	if err != nil {
		return 0, fmt.Errorf("webhooks: prune: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PeriodicJobs are the webhooks' periodic jobs for the box's River client:
// the prune, every hour.
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return PruneArgs{}, nil },
		&river.PeriodicJobOpts{ID: KindPrune})}
}
