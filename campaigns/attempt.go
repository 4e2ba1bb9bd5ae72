package campaigns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/jobs"
)

// AddWorkers registers the attempts' worker and queue: attempts only
// dial (a call outlives its job), so a few workers keep up with many calls.
func (s *Service) AddWorkers(reg *jobs.Registry) {
	reg.Queue(queueName, 10)
	river.AddWorker(reg.Workers(), &attemptWorker{s: s})
}

type attemptWorker struct {
	river.WorkerDefaults[AttemptArgs]
	s *Service
}

// Timeout bounds a dial (opening the call: the contact's memory recalled,
// the call recorded) well inside the rescue of a dead box's jobs.
func (w *attemptWorker) Timeout(*river.Job[AttemptArgs]) time.Duration { return time.Minute }

// retryLater is how long an attempt waits when the box cannot dial now
// (at capacity, stopping).
const retryLater = 2 * time.Second

func (w *attemptWorker) Work(ctx context.Context, job *river.Job[AttemptArgs]) error {
	later, err := w.s.Attempt(ctx, job.Args.ID)
	if err != nil {
		return err
	}
	if later {
		return river.JobSnooze(retryLater)
	}
	return nil
}

// pending is an attempt as its job reads it.
type pending struct {
	state, campaign, status, agent, trunk, number string
	seq                                           int
	windows                                       []byte
	zones                                         []string
	identities                                    identity.Set
	variables                                     map[string]string
}

// Attempt dials attempt id unless it was dialled already, its campaign is
// no longer running (the attempt is withdrawn) or its contact is outside
// its window now (back to waiting until it opens). later is true when the
// box cannot dial now and the attempt should be tried again shortly.
func (s *Service) Attempt(ctx context.Context, id string) (later bool, err error) {
	err = pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var p pending
		err := tx.QueryRow(ctx, `SELECT a.state, a.campaign_id, a.seq, c.status, c.agent_id, c.trunk, c.windows,
			  k.number, k.zones, k.identities, k.variables
			FROM stackbone_platform.campaign_attempts a
			JOIN stackbone_platform.campaigns c ON c.id = a.campaign_id
			JOIN stackbone_platform.campaign_contacts k ON k.campaign_id = a.campaign_id AND k.seq = a.seq
			WHERE a.id = $1 FOR UPDATE OF a, k`, id).
			Scan(&p.state, &p.campaign, &p.seq, &p.status, &p.agent, &p.trunk, &p.windows, &p.number, &p.zones, &p.identities, &p.variables)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && p.state != "queued") {
			return nil // deleted or erased, or dialled already
		}
		if err != nil {
			return err
		}
		if p.status != StatusRunning {
			return s.withdraw(ctx, tx, id, p, time.Time{})
		}
		var ws []Window
		_ = json.Unmarshal(p.windows, &ws)
		locs, _ := locations(p.zones)
		sched := parseSchedule(ws)
		if next, ok := sched.next(s.cfg.Now(), locs); ok && next.After(s.cfg.Now()) {
			return s.withdraw(ctx, tx, id, p, next)
		}
		derr := s.cfg.Dial(ctx, DialRequest{ID: id, Agent: p.agent, To: p.number, Trunk: p.trunk, Identities: p.identities, Variables: p.variables})
		switch kind := fault.KindOf(derr); {
		case derr == nil || errors.Is(derr, s.cfg.CallExists):
			_, err = tx.Exec(ctx, `WITH a AS (UPDATE stackbone_platform.campaign_attempts SET state = 'dialled', dialled_at = now()
					WHERE id = $1 RETURNING campaign_id, seq)
				UPDATE stackbone_platform.campaign_contacts k SET state = 'calling', last_call_id = $1, updated_at = now()
				FROM a WHERE k.campaign_id = a.campaign_id AND k.seq = a.seq`, id)
			return err
		case kind == fault.Invalid || kind == fault.NotFound:
			reason := clipReason(derr.Error())
			if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_attempts SET state = 'failed', reason = $2, ended_at = now() WHERE id = $1`,
				id, reason); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_contacts SET state = 'failed', reason = $3, updated_at = now()
				WHERE campaign_id = $1 AND seq = $2`, p.campaign, p.seq, reason); err != nil {
				return err
			}
			s.log.Info("campaign attempt refused", "campaign", p.campaign, "call", id, "code", fault.Code(derr))
			return s.finishIfDone(ctx, tx, p.campaign)
		default:
			s.log.Info("campaign attempt deferred", "campaign", p.campaign, "call", id, "code", fault.Code(derr), "error", derr)
			later = true
			return nil
		}
	})
	if err != nil {
		return false, fmt.Errorf("campaigns: attempt %s: %w", id, err)
	}
	return later, nil
}

// withdraw takes back attempt id before it was dialled: its contact waits
// again (until at, or now) unless the campaign was cancelled. The
// campaign's row is read under a share lock so a Cancel running now either
// sees the contact waiting (and cancels it) or is seen here.
func (s *Service) withdraw(ctx context.Context, tx pgx.Tx, id string, p pending, at time.Time) error {
	if err := tx.QueryRow(ctx, `SELECT status FROM stackbone_platform.campaigns WHERE id = $1 FOR SHARE`, p.campaign).Scan(&p.status); err != nil {
		return err
	}
	if at.IsZero() {
		at = s.cfg.Now()
	}
	// Never dialled, the attempt leaves no trace: the contact's next one
	// takes its number.
	if _, err := tx.Exec(ctx, `DELETE FROM stackbone_platform.campaign_attempts WHERE id = $1`, id); err != nil {
		return err
	}
	state := StateWaiting
	if p.status == StatusCancelled || p.status == StatusFinished {
		state = StateCancelled
	}
	if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_contacts SET state = $3, next_at = $4,
		attempts = attempts - 1, updated_at = now() WHERE campaign_id = $1 AND seq = $2`, p.campaign, p.seq, state, at); err != nil {
		return err
	}
	return s.finishIfDone(ctx, tx, p.campaign)
}

// CallEnded records the end of a campaign's call in tx (the transaction
// that records the call's end; voice.Config.Ended) and decides its
// contact's next state: done, another attempt after the retry policy's
// delay, or failed. A call that is no campaign's attempt changes nothing.
func (s *Service) CallEnded(ctx context.Context, tx pgx.Tx, callID, outcome, answeredBy string, answered bool) error {
	// In a savepoint: a failure leaves the end's transaction usable.
	return pgx.BeginFunc(ctx, tx, func(tx pgx.Tx) error {
		var campaign string
		var seq int
		err := tx.QueryRow(ctx, `UPDATE stackbone_platform.campaign_attempts
			SET state = 'ended', outcome = $2, answered_by = NULLIF($3, ''), ended_at = now()
			WHERE id = $1 AND state IN ('queued', 'dialled') RETURNING campaign_id, seq`, callID, outcome, answeredBy).Scan(&campaign, &seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("campaigns: call ended: %w", err)
		}
		// The campaign's row lock orders the ends of its calls: each one's
		// check for the campaign's end sees the contacts the ones before
		// it moved on (ends that ran side by side could each see the other
		// still calling, and a cancelled campaign would never finish).
		var status string
		var retryRaw []byte
		var attempts int
		if err := tx.QueryRow(ctx, `SELECT status, retry FROM stackbone_platform.campaigns WHERE id = $1 FOR UPDATE`,
			campaign).Scan(&status, &retryRaw); err != nil {
			return fmt.Errorf("campaigns: call ended: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT attempts FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1 AND seq = $2
			FOR UPDATE`, campaign, seq).Scan(&attempts); err != nil {
			return fmt.Errorf("campaigns: call ended: %w", err)
		}
		var retry Retry
		_ = json.Unmarshal(retryRaw, &retry)
		kind := kindOf(outcome, answeredBy, answered)
		state, reason, next := StateDone, "", s.cfg.Now()
		switch rule := retry.rule(kind); {
		case kind == kindReached:
		case status == StatusCancelled:
			state, reason = StateCancelled, "the campaign was cancelled"
		case attempts <= rule.Attempts:
			state, next = StateWaiting, next.Add(retry.delay(rule))
		default:
			state, reason = StateFailed, fmt.Sprintf("out of attempts (%d); the last ended %s", attempts, outcome)
		}
		if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_contacts SET state = $3, last_outcome = $4, last_call_id = $5,
			reason = NULLIF($6, ''), next_at = $7, updated_at = now() WHERE campaign_id = $1 AND seq = $2`,
			campaign, seq, state, outcome, callID, reason, next); err != nil {
			return fmt.Errorf("campaigns: call ended: %w", err)
		}
		if err := s.finishIfDone(ctx, tx, campaign); err != nil {
			return fmt.Errorf("campaigns: call ended: %w", err)
		}
		// A slot is free: every box's scheduler looks once this commits.
		return wakeAll(ctx, tx, campaign)
	})
}

// clipReason bounds an error kept as a contact's reason.
func clipReason(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// EraseTx removes, in tx (memory's DeleteAll), the contacts of agentID's
// campaigns that name the person userID: by their number or one of their
// identities. Their calls are erased with the person's memory.
func EraseTx(ctx context.Context, tx pgx.Tx, agentID, userID string) error {
	_, err := tx.Exec(ctx, `DELETE FROM stackbone_platform.campaign_contacts k USING stackbone_platform.campaigns c
		WHERE c.id = k.campaign_id AND c.agent_id = $1
		  AND (k.number = $2 OR EXISTS (SELECT 1 FROM jsonb_each_text(k.identities) i WHERE i.value = $2))`, agentID, userID)
	if err != nil {
		return fmt.Errorf("campaigns: erase: %w", err)
	}
	return nil
}
