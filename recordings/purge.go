package recordings

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/stackbone/box/jobs"
)

// KindPurge is the River job kind that removes erased and expired
// recordings.
const KindPurge = "recordings.purge"

const queue = "recordings"

// PurgeArgs are the purge job's (none).
type PurgeArgs struct{}

// Kind is KindPurge.
func (PurgeArgs) Kind() string { return KindPurge }

// InsertOpts puts the job on the recordings queue (one worker: purges
// never race; a purge is idempotent).
func (PurgeArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue} }

type purgeWorker struct {
	river.WorkerDefaults[PurgeArgs]
	s *Service
}

func (w *purgeWorker) Work(ctx context.Context, _ *river.Job[PurgeArgs]) error {
	n, err := w.s.Purge(ctx, time.Now())
	if n > 0 {
		w.s.log.Info("recordings removed", "count", n)
	}
	return err
}

// AddWorkers registers the purge worker and its queue on reg, before the
// box's River client is built.
func (s *Service) AddWorkers(reg *jobs.Registry) {
	river.AddWorker(reg.Workers(), &purgeWorker{s: s})
	reg.Queue(queue, 1)
}

// PurgeEvery is how often expired recordings are looked for.
const PurgeEvery = 10 * time.Minute

// PeriodicJobs are the recordings' periodic jobs for the box's River
// client: the purge every PurgeEvery, and once as the client starts.
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(PurgeEvery),
		func() (river.JobArgs, *river.InsertOpts) { return PurgeArgs{}, nil },
		&river.PeriodicJobOpts{ID: KindPurge, RunOnStart: true})}
}
