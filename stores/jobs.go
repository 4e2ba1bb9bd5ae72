package stores

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/stackbone/box/jobs"
)

// Queue is the job queue of memory stores' background work.
const Queue = "stores"

// pendingStates keep a learning job unique while it waits, runs or
// retries, and let the next one in once it has finished.
var pendingStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRunning, rivertype.JobStateScheduled, rivertype.JobStateRetryable}

// ReportArgs is the job that writes the report of a finished session.
type ReportArgs struct {
	SessionID   string `json:"session_id" river:"unique"`
	ThroughTurn int    `json:"through_turn" river:"unique"`
}

// Kind names the job.
func (ReportArgs) Kind() string { return "stores_session_report" }

// InsertOpts puts the job on Queue, unique per session stretch.
func (ReportArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// LearnArgs is a learning run of one agent.
type LearnArgs struct {
	Agent       string `json:"agent" river:"unique"`
	TriggeredBy string `json:"triggered_by"`
	Reason      string `json:"reason"`
}

// Kind names the job.
func (LearnArgs) Kind() string { return "stores_learning_run" }

// InsertOpts puts the job on Queue, one pending run per agent. After its
// last attempt the agent stays delayed and the tick starts a new run at
// next_retry_at.
func (LearnArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pendingStates}}
}

// TickArgs is one pass of the learning scheduler.
type TickArgs struct{}

// Kind names the job.
func (TickArgs) Kind() string { return "stores_tick" }

// InsertOpts: one tick at a time.
func (TickArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: pendingStates}}
}

// PruneArgs applies version retention.
type PruneArgs struct{}

// Kind names the job.
func (PruneArgs) Kind() string { return "stores_prune" }

// InsertOpts: one prune at a time.
func (PruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: pendingStates}}
}

type reportWorker struct {
	river.WorkerDefaults[ReportArgs]
	s *Service
}

func (w *reportWorker) Work(ctx context.Context, job *river.Job[ReportArgs]) error {
	return w.s.WriteReport(ctx, job.Args.SessionID, job.Args.ThroughTurn, job.Attempt >= job.MaxAttempts)
}

func (w *reportWorker) Timeout(*river.Job[ReportArgs]) time.Duration {
	return w.s.cfg.ModelTimeout + time.Minute
}

type learnWorker struct {
	river.WorkerDefaults[LearnArgs]
	s *Service
}

func (w *learnWorker) Work(ctx context.Context, job *river.Job[LearnArgs]) error {
	trigger, reason := job.Args.TriggeredBy, job.Args.Reason
	if job.Attempt > 1 {
		trigger, reason = TriggerRetry, "automatic retry of a failed run (first ran for: "+reason+")"
	}
	return w.s.runLearning(ctx, job.Args.Agent, trigger, reason, job.Attempt, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
}

// NextRetry matches the next_retry_at the failed run recorded.
func (w *learnWorker) NextRetry(job *river.Job[LearnArgs]) time.Time {
	return time.Now().Add(w.s.cfg.RetryDelay(job.Attempt))
}

func (w *learnWorker) Timeout(*river.Job[LearnArgs]) time.Duration {
	return w.s.cfg.ModelTimeout + time.Minute
}

type tickWorker struct {
	river.WorkerDefaults[TickArgs]
	s *Service
}

func (w *tickWorker) Work(ctx context.Context, _ *river.Job[TickArgs]) error {
	return w.s.Tick(ctx, river.ClientFromContext[pgx.Tx](ctx))
}

type pruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	s *Service
}

func (w *pruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	_, err := w.s.Prune(ctx)
	return err
}

func (w *pruneWorker) Timeout(*river.Job[PruneArgs]) time.Duration { return 10 * time.Minute }

// AddWorkers registers the report, learning, tick and prune workers and
// the Queue (2 workers) on reg, before jobs.NewClient.
func (s *Service) AddWorkers(reg *jobs.Registry) error {
	if err := river.AddWorkerSafely(reg.Workers(), &reportWorker{s: s}); err != nil {
		return err
	}
	if err := river.AddWorkerSafely(reg.Workers(), &learnWorker{s: s}); err != nil {
		return err
	}
	if err := river.AddWorkerSafely(reg.Workers(), &tickWorker{s: s}); err != nil {
		return err
	}
	if err := river.AddWorkerSafely(reg.Workers(), &pruneWorker{s: s}); err != nil {
		return err
	}
	reg.Queue(Queue, 2)
	return nil
}

// PeriodicJobs are the scheduler tick (every TickInterval, and once at
// start) and retention (every PruneInterval). Add them to the client:
// client.PeriodicJobs().AddMany(svc.PeriodicJobs()).
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(s.cfg.TickInterval),
			func() (river.JobArgs, *river.InsertOpts) { return TickArgs{}, nil },
			&river.PeriodicJobOpts{ID: "stores_tick", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(s.cfg.PruneInterval),
			func() (river.JobArgs, *river.InsertOpts) { return PruneArgs{}, nil },
			&river.PeriodicJobOpts{ID: "stores_prune"}),
	}
}
