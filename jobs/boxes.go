package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// BoxLease is how long a box counts as alive after its last heartbeat.
const BoxLease = 15 * time.Second

// Heartbeat keeps box boxID alive in stackbone_platform.boxes until ctx
// ends, and every third of the lease hands back to the queue the jobs still
// running under a box whose lease ran out: River would rescue them only
// after RescueAfter, since it cannot tell a dead box from a slow job. Run
// it beside the client made by NewBoxClient with the same id.
func Heartbeat(ctx context.Context, pool *pgxpool.Pool, boxID string, logger *slog.Logger) {
	t := time.NewTicker(BoxLease / 3)
	defer t.Stop()
	for {
		if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.boxes (id, lease_until) VALUES ($1, now() + make_interval(secs => $2))
			ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until`, boxID, BoxLease.Seconds()); err != nil && ctx.Err() == nil {
			logger.Warn("jobs: box heartbeat", "error", err)
		}
		if n, err := RescueFromDeadBoxes(ctx, pool); err != nil && ctx.Err() == nil {
			logger.Warn("jobs: rescue jobs of dead boxes", "error", err)
		} else if n > 0 {
			logger.Info("jobs: jobs of a dead box handed back", "jobs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RescueFromDeadBoxes makes the jobs running under a box whose lease ran
// out available again at once (their attempt counts, as a crash does), and
// forgets boxes dead for a day. It returns how many jobs it handed back.
func RescueFromDeadBoxes(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	tag, err := pool.Exec(ctx, `UPDATE `+Schema+`.river_job j SET state = 'available', scheduled_at = now()
		FROM stackbone_platform.boxes b
		WHERE j.state = 'running' AND b.id = j.attempted_by[cardinality(j.attempted_by)] AND b.lease_until < now()`)
	if err != nil {
		return 0, err
	}
	_, _ = pool.Exec(ctx, `DELETE FROM stackbone_platform.boxes WHERE lease_until < now() - interval '1 day'`)
	return tag.RowsAffected(), nil
}
