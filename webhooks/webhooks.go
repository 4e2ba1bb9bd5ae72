package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/jobs"
)

// Event types.
const (
	CallStarted          = "call.started"
	CallAnswered         = "call.answered"
	CallEnded            = "call.ended"
	CallAnalyzed         = "call.analyzed"
	MemorySaved          = "memory.saved"
	RAGDocumentIngested  = "rag.document.ingested"
	CampaignFinished     = "campaign.finished"
	maxEventsPerSub      = 20
	maxURLLength         = 2000
	maxDescriptionLength = 200
)

// Types are the event types a subscription may ask for.
var Types = []string{CallStarted, CallAnswered, CallEnded, CallAnalyzed, MemorySaved, RAGDocumentIngested, CampaignFinished}

// Errors of the package, with their kinds and codes (package fault).
var (
	// ErrInvalidRequest: a subscription breaks a rule (webhook_invalid_request, 400).
	ErrInvalidRequest = fault.New(fault.Invalid, "webhook_invalid_request", "webhooks: invalid request")
	// ErrNotFound: no subscription or delivery with that id (webhook_not_found, 404).
	ErrNotFound = fault.New(fault.NotFound, "webhook_not_found", "webhooks: not found")
	// ErrUnavailable: the database failed (webhook_unavailable, 503).
	ErrUnavailable = fault.New(fault.Unavailable, "webhook_unavailable", "webhooks: unavailable")
)

// Config wires a Service. Zero fields take the defaults in their comments.
type Config struct {
	// Pool holds the webhook tables and River's. Required.
	Pool *pgxpool.Pool
	// Logger receives ids, types, statuses and timings; never a secret, a
	// payload or a receiver's answer. Defaults to slog.Default().
	Logger *slog.Logger
	// Timeout bounds one delivery attempt, from connecting to the
	// receiver's status line (default 10 s).
	Timeout time.Duration
	// Workers is how many deliveries one box sends at once (default 10): a
	// receiver that hangs holds one of them, for at most Timeout.
	Workers int
	// Backoff is the wait before attempt n+1 of a delivery that failed
	// (default: Schedule, with ±10% jitter).
	Backoff func(attempt int) time.Duration
	// MaxAttempts is how many times a delivery is tried before it is
	// failed (default len(Schedule)+1: about 24 hours of retries).
	MaxAttempts int
	// Client sends the deliveries (default: an http.Client that follows no
	// redirects). Its timeout is Timeout either way.
	Client *http.Client
}

// Schedule is the default wait before each retry of a delivery: about 24
// hours from the first attempt to the last.
var Schedule = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour}

// Service is the box's webhooks. It is safe for concurrent use.
type Service struct {
	cfg    Config
	log    *slog.Logger
	insert *river.Client[pgx.Tx]
	wanted wantedTypes
}

// New returns the service. It can record events at once; deliveries are
// sent once the box's River client works the webhooks queue (AddWorkers).
func New(cfg Config) (*Service, error) {
	if cfg.Pool == nil {
		return nil, errors.New("webhooks: a pool is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 10
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = len(Schedule) + 1
	}
	if cfg.Backoff == nil {
		cfg.Backoff = scheduled
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	c := *cfg.Client
	c.Timeout = cfg.Timeout
	cfg.Client = &c
	// An insert-only client: jobs are inserted in the caller's transaction
	// and worked by the box's one River client.
	insert, err := river.NewClient(riverpgxv5.New(cfg.Pool), &river.Config{Schema: jobs.Schema, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "webhooks"), insert: insert}, nil
}

// Emit records an event of type typ and one delivery for each subscription
// to that type, in tx when tx is not nil (the event then exists only if tx
// commits), else in a transaction of its own. data and content are JSON
// objects: data goes to every subscriber; content's fields are added to
// data only for subscriptions that include the transcript. With no
// subscriber nothing is written. A failure leaves tx usable (Emit works in
// a savepoint) and is returned for the caller to log: an event never
// stops the change it reports.
func (s *Service) Emit(ctx context.Context, tx pgx.Tx, typ string, data, content any) error {
	if tx == nil {
		if !s.Wanted(ctx, typ) {
			return nil
		}
		return pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error { return s.emit(ctx, tx, typ, data, content, true) })
	}
	// In the caller's transaction only the types already known are
	// consulted: reading them takes a second connection while tx holds
	// one, and callers holding every connection of the pool would each
	// wait for another forever. When they are not known, emit's own
	// statement finds the subscriptions.
	if wanted, known := s.wanted.known(typ); known && !wanted {
		return nil
	}
	return s.emit(ctx, tx, typ, data, content, true)
}

// emitSavepoint is where a failed emit rolls tx back to: the change it
// reports stays.
const emitSavepoint = "webhooks_emit"

// emit writes the event and its deliveries in tx; in a savepoint when
// saved, taken in the same round trip as the event's statement and never
// released (the transaction's commit does), so an event costs the
// caller's transaction one round trip when nobody subscribed to it.
func (s *Service) emit(ctx context.Context, tx pgx.Tx, typ string, data, content any, saved bool) error {
	rawData, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("webhooks: emit %s: %w", typ, err)
	}
	var rawContent []byte
	if content != nil {
		if rawContent, err = json.Marshal(content); err != nil {
			return fmt.Errorf("webhooks: emit %s: %w", typ, err)
		}
	}
	id := "evt_" + uuid.NewString()
	var b pgx.Batch
	if saved {
		b.Queue("SAVEPOINT " + emitSavepoint)
	}
	// One statement: the event and its deliveries, only if someone
	// subscribed.
	var deliveries []string
	b.Queue(`
		WITH subs AS (SELECT id FROM stackbone_platform.webhook_subscriptions WHERE $2 = ANY(events)),
		ev AS (INSERT INTO stackbone_platform.webhook_events (id, type, data, content)
		       SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM subs) RETURNING id)
		INSERT INTO stackbone_platform.webhook_deliveries (id, subscription_id, event_id)
		SELECT 'dlv_' || gen_random_uuid(), subs.id, ev.id FROM subs, ev RETURNING id`, id, typ, rawData, rawContent).
		Query(func(rows pgx.Rows) error {
			var err error
			deliveries, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
	err = tx.SendBatch(ctx, &b).Close()
	if err == nil && len(deliveries) > 0 {
		params := make([]river.InsertManyParams, len(deliveries))
		for i, d := range deliveries {
			params[i] = river.InsertManyParams{Args: DeliverArgs{DeliveryID: d}, InsertOpts: &river.InsertOpts{MaxAttempts: s.cfg.MaxAttempts}}
		}
		if _, err = s.insert.InsertManyTx(ctx, tx, params); err != nil {
			err = fmt.Errorf("webhooks: enqueue %s: %w", typ, err)
		}
	} else if err != nil {
		err = fmt.Errorf("webhooks: emit %s: %w", typ, err)
	}
	if err != nil && saved {
		if _, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+emitSavepoint); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// Subscription is one receiver of events.
type Subscription struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// IncludeTranscript adds what was said (a call's heard transcript) to
	// the events that carry it.
	IncludeTranscript bool      `json:"includeTranscript"`
	Description       string    `json:"description"`
	CreatedAt         time.Time `json:"createdAt"`
	CreatedBy         string    `json:"createdBy"`
	// Secret signs the deliveries; only Create returns it.
	Secret string `json:"secret,omitempty"`
}

// NewSubscription is what Create takes.
type NewSubscription struct {
	URL               string   `json:"url"`
	Events            []string `json:"events"`
	IncludeTranscript bool     `json:"includeTranscript"`
	Description       string   `json:"description"`
}

func (n *NewSubscription) validate() error {
	u, err := url.Parse(n.URL)
	switch {
	case n.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%w: url must be an http or https URL", ErrInvalidRequest)
	case len(n.URL) > maxURLLength:
		return fmt.Errorf("%w: url is over %d characters", ErrInvalidRequest, maxURLLength)
	case u.User != nil:
		return fmt.Errorf("%w: url must not hold credentials; the signature authenticates the box", ErrInvalidRequest)
	case len(n.Events) == 0:
		return fmt.Errorf("%w: events must name at least one event type (%s)", ErrInvalidRequest, strings.Join(Types, ", "))
	case len(n.Events) > maxEventsPerSub:
		return fmt.Errorf("%w: at most %d event types", ErrInvalidRequest, maxEventsPerSub)
	case utf8.RuneCountInString(n.Description) > maxDescriptionLength:
		return fmt.Errorf("%w: description is over %d characters", ErrInvalidRequest, maxDescriptionLength)
	}
	seen := map[string]bool{}
	for _, e := range n.Events {
		if !slices.Contains(Types, e) {
			return fmt.Errorf("%w: unknown event type %q (one of %s)", ErrInvalidRequest, e, strings.Join(Types, ", "))
		}
		if seen[e] {
			return fmt.Errorf("%w: event type %q named twice", ErrInvalidRequest, e)
		}
		seen[e] = true
	}
	return nil
}

const subscriptionColumns = `id, url, events, include_transcript, description, created_at, created_by`

func scanSubscription(row pgx.Row) (Subscription, error) {
	var s Subscription
	err := row.Scan(&s.ID, &s.URL, &s.Events, &s.IncludeTranscript, &s.Description, &s.CreatedAt, &s.CreatedBy)
	return s, err
}

// Create adds a subscription and returns it with its secret, the only time
// the secret is shown. Errors: ErrInvalidRequest, ErrUnavailable.
func (s *Service) Create(ctx context.Context, n NewSubscription, by string) (Subscription, error) {
	if err := n.validate(); err != nil {
		return Subscription{}, err
	}
	secret := newSecret()
	sub, err := scanSubscription(s.cfg.Pool.QueryRow(ctx, `INSERT INTO stackbone_platform.webhook_subscriptions
		(id, url, events, secret, include_transcript, description, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+subscriptionColumns, "whk_"+uuid.NewString(), n.URL, n.Events, secret, n.IncludeTranscript, n.Description, by))
	s.wanted.invalidate() // at once on this box; the others hear the trigger's notification
	if err != nil {
		return Subscription{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	sub.Secret = secret
	s.log.Info("webhook subscription created", "subscription", sub.ID, "events", strings.Join(sub.Events, ","), "by", by)
	return sub, nil
}

// List returns every subscription, newest first, without secrets.
func (s *Service) List(ctx context.Context) ([]Subscription, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM stackbone_platform.webhook_subscriptions
		ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	out := []Subscription{}
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		out = append(out, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return out, nil
}

// Get returns one subscription without its secret. Errors: ErrNotFound,
// ErrUnavailable.
func (s *Service) Get(ctx context.Context, id string) (Subscription, error) {
	sub, err := scanSubscription(s.cfg.Pool.QueryRow(ctx, `SELECT `+subscriptionColumns+`
		FROM stackbone_platform.webhook_subscriptions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscription{}, fmt.Errorf("%w: no subscription %s", ErrNotFound, id)
	}
	if err != nil {
		return Subscription{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return sub, nil
}

// EraseCallsTx removes, in tx (a person's erasure), the events recorded
// for the calls ids, with their deliveries and their log: their data names
// the caller and their content may hold the heard transcript.
func (s *Service) EraseCallsTx(ctx context.Context, tx pgx.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM stackbone_platform.webhook_events WHERE data->>'callId' = ANY($1)`, ids); err != nil {
		return fmt.Errorf("webhooks: erase: %w", err)
	}
	return nil
}

// Delete removes a subscription with its deliveries and their log;
// deliveries still queued are dropped. Errors: ErrNotFound, ErrUnavailable.
func (s *Service) Delete(ctx context.Context, id, by string) error {
	tag, err := s.cfg.Pool.Exec(ctx, `DELETE FROM stackbone_platform.webhook_subscriptions WHERE id = $1`, id)
	s.wanted.invalidate()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: no subscription %s", ErrNotFound, id)
	}
	s.log.Info("webhook subscription deleted", "subscription", id, "by", by)
	return nil
}
