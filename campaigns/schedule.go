package campaigns

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/stackbone/box/postgres/notify"
)

// NotifyTopic is the notification topic that wakes every box's scheduler
// (a campaign started or resumed, a call of one ended): subscribe Wake to
// it.
const NotifyTopic = "campaigns"

// Run schedules attempts until ctx ends: every Tick, and Gather after it
// is woken (Wake).
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	gather := time.NewTimer(0)
	defer gather.Stop()
	for {
		start := time.Now()
		n, err := s.ScheduleOnce(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("campaigns: schedule", "error", err)
		}
		if n > 0 && s.cfg.OnPass != nil {
			s.cfg.OnPass(n, time.Since(start))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
			gather.Reset(s.cfg.Gather)
			select {
			case <-ctx.Done():
				return
			case <-gather.C:
			}
		}
	}
}

// ScheduleOnce queues the attempts due now in every running campaign, and
// returns how many.
func (s *Service) ScheduleOnce(ctx context.Context) (int, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT id FROM stackbone_platform.campaigns WHERE status = 'running'`)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	for _, id := range ids {
		n, err := s.schedule(ctx, id)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("campaign %s: %w", id, err))
		}
	}
	return total, errors.Join(errs...)
}

// scanBatch is how many due contacts one query looks at: contacts outside
// their window are moved to their next opening, so a batch seldom holds
// many of them twice.
const scanBatch = 200

// schedule queues the due attempts of campaign id under its row lock: the
// cap counts the contacts in flight on every box.
func (s *Service) schedule(ctx context.Context, id string) (int, error) {
	queued := 0
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		// The pass's updates of the contacts it queues or moves (joined
		// to their keys with unnest) are planned for those keys: a plan
		// the connection cached while the campaign held a few contacts
		// reads all of them, 20,000 at each statement once it holds
		// 20,000.
		if _, err := tx.Exec(ctx, `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`); err != nil {
			return err
		}
		// Waiting for the lock (not skipping): a pass never loses its turn
		// to the ends of calls that hold it a moment.
		c, err := scanCampaign(tx.QueryRow(ctx, `SELECT `+campaignColumns+` FROM stackbone_platform.campaigns
			WHERE id = $1 AND status = 'running' FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // no longer running
		}
		if err != nil {
			return err
		}
		var inFlight int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.campaign_contacts
			WHERE campaign_id = $1 AND state IN ('queued', 'calling')`, id).Scan(&inFlight); err != nil {
			return err
		}
		free := c.MaxConcurrent - inFlight
		now := s.cfg.Now()
		sched := parseSchedule(c.Windows)
		var claim, later []int
		var laterAt []time.Time
		var never []int
		after, afterSeq := time.Time{}, 0
		for free > len(claim) {
			batch, err := dueContacts(ctx, tx, id, now, after, afterSeq)
			if err != nil {
				return err
			}
			for _, d := range batch {
				locs, _ := locations(d.zones)
				switch next, ok := sched.next(now, locs); {
				case !ok:
					never = append(never, d.seq)
				case !next.After(now):
					if len(claim) < free {
						claim = append(claim, d.seq)
					}
				default:
					later, laterAt = append(later, d.seq), append(laterAt, next)
				}
				after, afterSeq = d.nextAt, d.seq
			}
			if len(batch) < scanBatch {
				break
			}
		}
		if err := s.queue(ctx, tx, id, claim); err != nil {
			return err
		}
		queued = len(claim)
		if len(later) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_contacts k SET next_at = l.at
				FROM unnest($2::int[], $3::timestamptz[]) AS l(seq, at) WHERE k.campaign_id = $1 AND k.seq = l.seq`, id, later, laterAt); err != nil {
				return err
			}
		}
		if len(never) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_contacts SET state = 'failed', updated_at = now(),
				reason = 'the contact''s zones share no calling time in the campaign''s windows'
				WHERE campaign_id = $1 AND seq = ANY($2)`, id, never); err != nil {
				return err
			}
		}
		return s.finishIfDone(ctx, tx, id)
	})
	if queued > 0 {
		s.log.Debug("campaign attempts queued", "campaign", id, "attempts", queued)
	}
	return queued, err
}

type due struct {
	seq    int
	zones  []string
	nextAt time.Time
}

// dueContacts is a batch of campaign id's waiting contacts due at now,
// the earliest first, after the contact seq due at after (zero: from the
// first).
func dueContacts(ctx context.Context, tx pgx.Tx, id string, now, after time.Time, seq int) ([]due, error) {
	rows, err := tx.Query(ctx, `SELECT seq, zones, next_at FROM stackbone_platform.campaign_contacts
		WHERE campaign_id = $1 AND state = 'waiting' AND next_at <= $2 AND (next_at, seq) > ($3, $4)
		ORDER BY next_at, seq LIMIT $5 FOR UPDATE`, id, now, after, seq, scanBatch)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		return d, r.Scan(&d.seq, &d.zones, &d.nextAt)
	})
}

// AttemptArgs is the job of one attempt: its id is the call's.
type AttemptArgs struct {
	ID string `json:"id"`
}

// KindAttempt is the River kind of an attempt's job.
const KindAttempt = "campaign_attempt"

const queueName = "campaigns"

// Kind is the job's kind.
func (AttemptArgs) Kind() string { return KindAttempt }

// InsertOpts puts attempts on the campaigns queue, one job per attempt id.
func (AttemptArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queueName, MaxAttempts: 50, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// queue marks contacts seqs of campaign id queued and inserts one attempt
// row and one job for each, in tx.
func (s *Service) queue(ctx context.Context, tx pgx.Tx, id string, seqs []int) error {
	if len(seqs) == 0 {
		return nil
	}
	ids := make([]string, len(seqs))
	for i := range ids {
		ids[i] = "call_" + uuid.NewString()
	}
	if _, err := tx.Exec(ctx, `WITH q AS (
			UPDATE stackbone_platform.campaign_contacts k SET state = 'queued', attempts = attempts + 1, updated_at = now()
			FROM unnest($2::int[]) AS s(seq) WHERE k.campaign_id = $1 AND k.seq = s.seq
			RETURNING k.seq, k.attempts)
		INSERT INTO stackbone_platform.campaign_attempts (id, campaign_id, seq, attempt)
		SELECT a.id, $1, q.seq, q.attempts FROM q JOIN unnest($2::int[], $3::text[]) AS a(seq, id) ON a.seq = q.seq`,
		id, seqs, ids); err != nil {
		return err
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, aid := range ids {
		params[i] = river.InsertManyParams{Args: AttemptArgs{ID: aid}}
	}
	if _, err := s.insert.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("queue attempts: %w", err)
	}
	return nil
}

// finishIfDone finishes campaign id when none of its contacts is waiting
// or in flight, recording campaign.finished, in tx. A paused campaign
// stays paused.
func (s *Service) finishIfDone(ctx context.Context, tx pgx.Tx, id string) error {
	var c Campaign
	var err error
	c, err = scanCampaign(tx.QueryRow(ctx, `UPDATE stackbone_platform.campaigns
		SET status = CASE WHEN status = 'cancelled' THEN status ELSE 'finished' END, finished_at = now()
		WHERE id = $1 AND status IN ('running', 'cancelled') AND finished_at IS NULL
		  AND NOT EXISTS (SELECT 1 FROM stackbone_platform.campaign_contacts
		                  WHERE campaign_id = $1 AND state IN ('waiting', 'queued', 'calling'))
		RETURNING `+campaignColumns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	s.log.Info("campaign finished", "campaign", id, "status", c.Status)
	if s.cfg.Events == nil {
		return nil
	}
	all, err := readProgress(ctx, tx, []string{id})
	if err != nil {
		return err
	}
	progress := all[id]
	data := map[string]any{"campaignId": c.ID, "name": c.Name, "agent": c.Agent, "status": c.Status,
		"startedAt": c.StartedAt, "finishedAt": c.FinishedAt, "progress": progress}
	if err := s.cfg.Events.Emit(ctx, tx, EventFinished, data, nil); err != nil {
		s.log.Warn("campaigns: event not recorded", "type", EventFinished, "error", err)
	}
	return nil
}

func (p *Progress) add(state, outcome string, n, attempts int) {
	p.Contacts += n
	p.Attempts += attempts
	p.ByState[state] += n
	if outcome != "" {
		p.ByOutcome[outcome] += n
	}
}

// wakeAll wakes the schedulers of every box once tx commits.
func wakeAll(ctx context.Context, tx pgx.Tx, id string) error {
	return notify.Send(ctx, tx, NotifyTopic, id)
}
