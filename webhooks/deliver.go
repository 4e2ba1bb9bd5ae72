package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/stackbone/box/jobs"
)

// KindDeliver is the River job kind of a delivery attempt.
const KindDeliver = "webhook_deliver"

// queue is the River queue of deliveries, so receivers that hang never
// hold up document ingests or learning runs.
const queue = "webhooks"

// DeliverArgs are a delivery job's arguments. Replay marks a delivery sent
// again on an operator's request: one attempt, whatever the delivery's
// state.
type DeliverArgs struct {
	DeliveryID string `json:"delivery_id"`
	Replay     bool   `json:"replay,omitempty"`
}

// Kind is the job kind.
func (DeliverArgs) Kind() string { return KindDeliver }

// InsertOpts puts deliveries on their queue.
func (DeliverArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queue} }

// AddWorkers registers the delivery worker and its queue on reg, before
// the box's River client is built.
func (s *Service) AddWorkers(reg *jobs.Registry) {
	river.AddWorker(reg.Workers(), &deliverWorker{s: s})
	river.AddWorker(reg.Workers(), &pruneWorker{s: s})
	reg.Queue(queue, s.cfg.Workers)
}

// scheduled is the default backoff: Schedule with ±10% jitter, its last
// step repeated.
func scheduled(attempt int) time.Duration {
	i := min(max(attempt-1, 0), len(Schedule)-1)
	d := Schedule[i]
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}

type deliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	s *Service
}

// Timeout leaves the attempt room to record its result after the
// receiver's timeout.
func (w *deliverWorker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return w.s.cfg.Timeout + 10*time.Second
}

func (w *deliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return time.Now().Add(w.s.cfg.Backoff(job.Attempt))
}

// errDelivery is a failed attempt, as River records it: the status or a
// short cause, never the receiver's body or the payload.
type errDelivery struct{ msg string }

func (e *errDelivery) Error() string { return "webhooks: " + e.msg }

func (w *deliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	s := w.s
	var (
		status, subID, target, secret, evID, evType string
		include                                     bool
		created                                     time.Time
		data, content                               []byte
	)
	err := s.cfg.Pool.QueryRow(ctx, `SELECT d.status, s.id, s.url, s.secret, s.include_transcript, e.id, e.type, e.created_at, e.data, e.content
		FROM stackbone_platform.webhook_deliveries d
		JOIN stackbone_platform.webhook_subscriptions s ON s.id = d.subscription_id
		JOIN stackbone_platform.webhook_events e ON e.id = d.event_id
		WHERE d.id = $1`, job.Args.DeliveryID).
		Scan(&status, &subID, &target, &secret, &include, &evID, &evType, &created, &data, &content)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // the subscription was deleted
	}
	if err != nil {
		return fmt.Errorf("webhooks: load delivery: %w", err)
	}
	if status == StatusDelivered && !job.Args.Replay {
		return nil // a job run again after its box died, once it had delivered
	}
	body, err := payload(evID, evType, created, data, content, include)
	if err != nil {
		return river.JobCancel(fmt.Errorf("webhooks: build payload: %w", err))
	}
	code, latency, cause := s.send(ctx, target, secret, evID, body)
	ok := cause == "" && code >= 200 && code < 300
	next := StatusRetrying
	switch {
	case ok:
		next = StatusDelivered
	case job.Args.Replay && status == StatusDelivered:
		next = StatusDelivered // a failed replay does not undo a delivery
	case job.Args.Replay || job.Attempt >= job.MaxAttempts:
		next = StatusFailed
	}
	// The result is recorded even when the attempt's own time ran out.
	rctx := context.WithoutCancel(ctx)
	var attempt int
	err = pgx.BeginFunc(rctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(rctx, `UPDATE stackbone_platform.webhook_deliveries SET attempts = attempts + 1, status = $2, updated_at = now()
			WHERE id = $1 RETURNING attempts`, job.Args.DeliveryID, next).Scan(&attempt); err != nil {
			return err
		}
		var sc *int
		if cause == "" {
			sc = &code
		}
		var errText *string
		if !ok {
			msg := cause
			if msg == "" {
				msg = fmt.Sprintf("the receiver answered %d", code)
			}
			errText = &msg
		}
		_, err := tx.Exec(rctx, `INSERT INTO stackbone_platform.webhook_attempts (delivery_id, attempt, replay, status_code, latency_ms, error)
			VALUES ($1, $2, $3, $4, $5, $6)`, job.Args.DeliveryID, attempt, job.Args.Replay, sc, latency.Milliseconds(), errText)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // deleted while it was sent
	}
	if err != nil {
		s.log.Warn("webhook delivery not recorded", "delivery", job.Args.DeliveryID, "error", err)
	}
	s.log.Info("webhook delivery", "delivery", job.Args.DeliveryID, "subscription", subID, "event", evID, "type", evType,
		"attempt", attempt, "replay", job.Args.Replay, "status", code, "error", cause, "ms", latency.Milliseconds(), "outcome", next)
	if ok {
		return nil
	}
	if job.Args.Replay {
		return nil // one attempt, recorded in the log
	}
	if cause == "" {
		cause = fmt.Sprintf("the receiver answered %d", code)
	}
	return &errDelivery{cause}
}

// payload is the body every attempt sends: the event's id, type, time and
// data, with content's fields added when the subscription includes them.
// The same event gives the same bytes on every attempt.
func payload(id, typ string, created time.Time, data, content []byte, include bool) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	if include && len(content) > 0 {
		extra := map[string]json.RawMessage{}
		if err := json.Unmarshal(content, &extra); err != nil {
			return nil, err
		}
		for k, v := range extra {
			fields[k] = v
		}
	}
	return json.Marshal(struct {
		ID        string                     `json:"id"`
		Type      string                     `json:"type"`
		Timestamp string                     `json:"timestamp"`
		Data      map[string]json.RawMessage `json:"data"`
	}{id, typ, created.UTC().Format(time.RFC3339Nano), fields})
}

// send posts body, signed, and returns the status, the time to the status
// line, and a short cause when no status came ("timeout", "connection
// refused", ...).
func (s *Service) send(ctx context.Context, target, secret, id string, body []byte) (int, time.Duration, string) {
	now := time.Now()
	sig, err := Sign(secret, id, now, body)
	if err != nil {
		return 0, 0, "the subscription's secret is invalid"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, 0, "the subscription's url is invalid"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stackbone-webhooks")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, fmt.Sprint(now.Unix()))
	req.Header.Set(HeaderSignature, sig)
	start := time.Now()
	resp, err := s.cfg.Client.Do(req)
	latency := time.Since(start)
	if err != nil {
		return 0, latency, describe(err)
	}
	// The body is not kept; read a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, latency, ""
}

// describe is why a request got no answer, without its URL (which may
// hold a token).
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		if oe.Err != nil {
			return oe.Op + ": " + oe.Err.Error()
		}
		return oe.Op
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return "dns: " + de.Err
	}
	return err.Error()
}
