package campaigns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/jobs"
)

// Errors of the package, with their kinds and codes (package fault).
var (
	// ErrInvalidRequest: a campaign or its contacts break a rule
	// (campaign_invalid_request, 400); contact errors name their lines.
	ErrInvalidRequest = fault.New(fault.Invalid, "campaign_invalid_request", "campaigns: invalid request")
	// ErrNotFound: no campaign with that id (campaign_not_found, 404).
	ErrNotFound = fault.New(fault.NotFound, "campaign_not_found", "campaigns: not found")
	// ErrConflict: the campaign's status does not allow the action
	// (campaign_conflict, 409), e.g. starting a finished one.
	ErrConflict = fault.New(fault.Conflict, "campaign_conflict", "campaigns: not allowed in this status")
	// ErrUnavailable: the database failed (campaign_unavailable, 503).
	ErrUnavailable = fault.New(fault.Unavailable, "campaign_unavailable", "campaigns: unavailable")
)

// Statuses of a campaign.
const (
	StatusDraft     = "draft"
	StatusRunning   = "running"
	StatusPaused    = "paused"
	StatusCancelled = "cancelled"
	StatusFinished  = "finished"
)

// States of a contact: waiting, queued and calling are in progress; done,
// failed and cancelled are final.
const (
	StateWaiting   = "waiting"
	StateQueued    = "queued"
	StateCalling   = "calling"
	StateDone      = "done"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
)

// States lists every contact state, in progress first.
var States = []string{StateWaiting, StateQueued, StateCalling, StateDone, StateFailed, StateCancelled}

// Limits.
const (
	MaxContacts      = 100_000 // per campaign
	MaxConcurrent    = 1000
	maxNameLen       = 200
	maxVariables     = 32
	maxVariableChars = 500
	maxErrorsShown   = 100
)

// DialRequest is one attempt's call.
type DialRequest struct {
	// ID is the call's id: the attempt's.
	ID         string
	Agent      string
	To         string
	Trunk      string
	Identities identity.Set
	// Variables fill {name} in the agent's instructions for this call.
	Variables map[string]string
}

// Config wires a Service. Zero fields take the defaults in their comments.
type Config struct {
	// Pool holds the campaign tables and River's. Required.
	Pool *pgxpool.Pool
	// Dial places a call and returns once it rings (sip.Server.Dial).
	// Errors of kind fault.Invalid or fault.NotFound fail the contact;
	// voice.ErrCallExists means the attempt was dialled already; any other
	// is tried again shortly. Required.
	Dial func(ctx context.Context, req DialRequest) error
	// CallExists tells Dial's "this call id is taken" error apart
	// (errors.Is with voice.ErrCallExists). Required with Dial.
	CallExists error
	// Agents and Trunks are the names a campaign may use (nil: any).
	Agents []string
	Trunks []string
	// Events records campaign.finished (nil: no events).
	Events Emitter
	// Logger receives ids, counts and outcomes, never a number or a
	// variable. Defaults to slog.Default().
	Logger *slog.Logger
	// Tick is how often the scheduler looks for due contacts when nothing
	// woke it sooner (default 500 ms).
	Tick time.Duration
	// Gather is how long the scheduler waits after being woken before it
	// looks (default 100 ms), so the ends of calls that end together free
	// their slots to one pass instead of one pass each.
	Gather time.Duration
	// Now is the clock (default time.Now): windows are read at Now.
	Now func() time.Time
	// OnPass, when set, observes each scheduling pass that queued
	// attempts: how many and how long it took (the load tool's figures).
	OnPass func(queued int, took time.Duration)
}

// Emitter records an event in a transaction (webhooks.Service).
type Emitter interface {
	Emit(ctx context.Context, tx pgx.Tx, typ string, data, content any) error
}

// EventFinished is the type of the event a finished campaign records.
const EventFinished = "campaign.finished"

// Service runs campaigns. It is safe for concurrent use.
type Service struct {
	cfg    Config
	log    *slog.Logger
	insert *river.Client[pgx.Tx]
	wake   chan struct{}
}

// New returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Pool == nil || cfg.Dial == nil || cfg.CallExists == nil {
		return nil, errors.New("campaigns: a pool, Dial and CallExists are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Gather <= 0 {
		cfg.Gather = 100 * time.Millisecond
	}
	insert, err := river.NewClient(riverpgxv5.New(cfg.Pool), &river.Config{Schema: jobs.Schema, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "campaigns"), insert: insert, wake: make(chan struct{}, 1)}, nil
}

// Campaign is one campaign as the API shows it.
type Campaign struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Agent         string     `json:"agent"`
	Trunk         string     `json:"trunk"`
	Status        string     `json:"status"`
	MaxConcurrent int        `json:"maxConcurrent"`
	Windows       []Window   `json:"windows"`
	Zone          string     `json:"zone"`
	Retry         Retry      `json:"retry"`
	CreatedAt     time.Time  `json:"createdAt"`
	CreatedBy     string     `json:"createdBy"`
	StartedAt     *time.Time `json:"startedAt"`
	FinishedAt    *time.Time `json:"finishedAt"`
	// Progress counts the contacts by state and by their last call's
	// outcome.
	Progress Progress `json:"progress"`
}

// Progress is how far a campaign is.
type Progress struct {
	Contacts int            `json:"contacts"`
	ByState  map[string]int `json:"byState"`
	// ByOutcome counts contacts by their last attempt's outcome (absent
	// before their first call ended).
	ByOutcome map[string]int `json:"byOutcome"`
	Attempts  int            `json:"attempts"`
}

// NewCampaign is a request to create one.
type NewCampaign struct {
	Name  string `json:"name"`
	Agent string `json:"agent"`
	// Trunk names the outbound trunk ("": the first).
	Trunk string `json:"trunk,omitempty"`
	// MaxConcurrent caps the campaign's calls up at once, across boxes
	// (default 5).
	MaxConcurrent int `json:"maxConcurrent,omitempty"`
	// Windows are when contacts may be called, in their own zones (default
	// every day 09:00-20:00).
	Windows []Window `json:"windows,omitempty"`
	// Zone is the zone of contacts whose number names none and who give
	// none (an IANA name, e.g. Europe/Paris).
	Zone string `json:"zone,omitempty"`
	// Retry changes the default policy (DefaultRetry) where it says.
	Retry *RetryChange `json:"retry,omitempty"`
	retry Retry
}

func (s *Service) validate(n *NewCampaign) error {
	var problems []string
	switch l := utf8.RuneCountInString(n.Name); {
	case strings.TrimSpace(n.Name) == "":
		problems = append(problems, "name is required")
	case l > maxNameLen:
		problems = append(problems, fmt.Sprintf("name is too long (%d characters; at most %d)", l, maxNameLen))
	}
	switch {
	case n.Agent == "":
		problems = append(problems, "agent is required")
	case s.cfg.Agents != nil && !slices.Contains(s.cfg.Agents, n.Agent):
		problems = append(problems, fmt.Sprintf("agent %q is not configured", clip(n.Agent)))
	}
	if n.Trunk != "" && s.cfg.Trunks != nil && !slices.Contains(s.cfg.Trunks, n.Trunk) {
		problems = append(problems, fmt.Sprintf("trunk %q is not a configured outbound trunk", clip(n.Trunk)))
	}
	if n.Trunk == "" && s.cfg.Trunks != nil && len(s.cfg.Trunks) == 0 {
		problems = append(problems, "the box has no outbound trunk (sip.outbound)")
	}
	if n.MaxConcurrent == 0 {
		n.MaxConcurrent = 5
	}
	if n.MaxConcurrent < 1 || n.MaxConcurrent > MaxConcurrent {
		problems = append(problems, fmt.Sprintf("maxConcurrent is 1 to %d", MaxConcurrent))
	}
	if len(n.Windows) == 0 {
		n.Windows = DefaultWindows()
	}
	problems = append(problems, checkWindows(n.Windows)...)
	if n.Zone != "" {
		if _, err := loadZone(n.Zone); err != nil {
			problems = append(problems, fmt.Sprintf("zone %q is not a known time zone", clip(n.Zone)))
		}
	}
	n.retry = n.Retry.apply(DefaultRetry())
	problems = append(problems, n.retry.check()...)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(problems, "; "))
	}
	return nil
}

// Create records a draft campaign; contacts are added with AddContacts,
// then Start runs it.
func (s *Service) Create(ctx context.Context, n NewCampaign, by string) (Campaign, error) {
	if err := s.validate(&n); err != nil {
		return Campaign{}, err
	}
	windows, _ := json.Marshal(n.Windows)
	retry, _ := json.Marshal(n.retry)
	id := "cmp_" + uuid.NewString()
	if _, err := s.cfg.Pool.Exec(ctx, `INSERT INTO stackbone_platform.campaigns
		(id, name, agent_id, trunk, max_concurrent, windows, default_zone, retry, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, id, n.Name, n.Agent, n.Trunk, n.MaxConcurrent, windows, n.Zone, retry, by); err != nil {
		return Campaign{}, fault.Hide(ErrUnavailable, err)
	}
	return s.Get(ctx, id)
}

const campaignColumns = `id, name, agent_id, trunk, status, max_concurrent, windows, default_zone, retry,
	created_at, created_by, started_at, finished_at`

func scanCampaign(row pgx.Row) (Campaign, error) {
	var c Campaign
	var windows, retry []byte
	err := row.Scan(&c.ID, &c.Name, &c.Agent, &c.Trunk, &c.Status, &c.MaxConcurrent, &windows, &c.Zone, &retry,
		&c.CreatedAt, &c.CreatedBy, &c.StartedAt, &c.FinishedAt)
	if err != nil {
		return c, err
	}
	_ = json.Unmarshal(windows, &c.Windows)
	_ = json.Unmarshal(retry, &c.Retry)
	return c, nil
}

// Get returns campaign id with its progress. Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (Campaign, error) {
	c, err := scanCampaign(s.cfg.Pool.QueryRow(ctx, `SELECT `+campaignColumns+` FROM stackbone_platform.campaigns WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("%w: %q", ErrNotFound, clip(id))
	}
	if err != nil {
		return c, fault.Hide(ErrUnavailable, err)
	}
	progress, err := s.progress(ctx, []string{id})
	if err != nil {
		return c, err
	}
	c.Progress = progress[id]
	return c, nil
}

// List returns the campaigns, newest first, with their progress.
func (s *Service) List(ctx context.Context) ([]Campaign, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+campaignColumns+` FROM stackbone_platform.campaigns ORDER BY created_at DESC, id LIMIT 500`)
	if err != nil {
		return nil, fault.Hide(ErrUnavailable, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Campaign, error) { return scanCampaign(r) })
	if err != nil {
		return nil, fault.Hide(ErrUnavailable, err)
	}
	ids := make([]string, len(list))
	for i, c := range list {
		ids[i] = c.ID
	}
	progress, err := s.progress(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Progress = progress[list[i].ID]
	}
	return list, nil
}

// progress counts the contacts of campaigns ids by state and last outcome.
func (s *Service) progress(ctx context.Context, ids []string) (map[string]Progress, error) {
	out, err := readProgress(ctx, s.cfg.Pool, ids)
	if err != nil {
		return nil, fault.Hide(ErrUnavailable, err)
	}
	return out, nil
}

// querier runs a query (a pool or a transaction).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readProgress is progress for campaigns ids, read through q.
func readProgress(ctx context.Context, q querier, ids []string) (map[string]Progress, error) {
	out := make(map[string]Progress, len(ids))
	for _, id := range ids {
		out[id] = Progress{ByState: map[string]int{}, ByOutcome: map[string]int{}}
	}
	rows, err := q.Query(ctx, `SELECT campaign_id, state, coalesce(last_outcome, ''), count(*), sum(attempts)
		FROM stackbone_platform.campaign_contacts WHERE campaign_id = ANY($1) GROUP BY 1, 2, 3`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, state, outcome string
		var n, attempts int
		if err := rows.Scan(&id, &state, &outcome, &n, &attempts); err != nil {
			return nil, err
		}
		p := out[id]
		p.add(state, outcome, n, attempts)
		out[id] = p
	}
	return out, rows.Err()
}

// Start runs a draft campaign that has contacts. Errors: ErrNotFound,
// ErrConflict.
func (s *Service) Start(ctx context.Context, id string) (Campaign, error) {
	return s.transition(ctx, id, StatusRunning, []string{StatusDraft}, func(ctx context.Context, tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: the campaign has no contacts", ErrConflict)
		}
		_, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaigns SET started_at = now() WHERE id = $1`, id)
		return err
	})
}

// Pause stops new attempts of a running campaign: none is dialled once
// Pause returned (an attempt already queued is withdrawn); calls up go on.
func (s *Service) Pause(ctx context.Context, id string) (Campaign, error) {
	return s.transition(ctx, id, StatusPaused, []string{StatusRunning}, nil)
}

// Resume runs a paused campaign again.
func (s *Service) Resume(ctx context.Context, id string) (Campaign, error) {
	return s.transition(ctx, id, StatusRunning, []string{StatusPaused}, nil)
}

// Cancel ends a campaign: its waiting contacts are cancelled, queued
// attempts withdrawn; calls up go on and end their contacts without
// retries.
func (s *Service) Cancel(ctx context.Context, id string) (Campaign, error) {
	return s.transition(ctx, id, StatusCancelled, []string{StatusDraft, StatusRunning, StatusPaused}, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_contacts SET state = 'cancelled', updated_at = now()
			WHERE campaign_id = $1 AND state = 'waiting'`, id); err != nil {
			return err
		}
		return s.finishIfDone(ctx, tx, id)
	})
}

// Delete removes a campaign that is not running, with its contacts and
// attempts (the calls stay in the calls' history).
func (s *Service) Delete(ctx context.Context, id string) error {
	var status string
	err := s.cfg.Pool.QueryRow(ctx, `DELETE FROM stackbone_platform.campaigns WHERE id = $1 AND status <> 'running'
		RETURNING status`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, gerr := s.Get(ctx, id); gerr != nil {
			return gerr
		}
		return fmt.Errorf("%w: pause or cancel a running campaign before deleting it", ErrConflict)
	}
	if err != nil {
		return fault.Hide(ErrUnavailable, err)
	}
	return nil
}

// transition moves campaign id from one of from to status under its row
// lock, running also (when not nil) in the same transaction.
func (s *Service) transition(ctx context.Context, id, status string, from []string, also func(context.Context, pgx.Tx) error) (Campaign, error) {
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var cur string
		err := tx.QueryRow(ctx, `SELECT status FROM stackbone_platform.campaigns WHERE id = $1 FOR UPDATE`, id).Scan(&cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrNotFound, clip(id))
		}
		if err != nil {
			return err
		}
		if !slices.Contains(from, cur) {
			return fmt.Errorf("%w: the campaign is %s", ErrConflict, cur)
		}
		if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaigns SET status = $2 WHERE id = $1`, id, status); err != nil {
			return err
		}
		if also != nil {
			return also(ctx, tx)
		}
		return nil
	})
	if err != nil {
		if fault.Of(err) == nil {
			return Campaign{}, fault.Hide(ErrUnavailable, err)
		}
		return Campaign{}, err
	}
	s.Wake()
	s.log.Info("campaign "+status, "campaign", id)
	return s.Get(ctx, id)
}

// Wake makes the scheduler look for due contacts now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// clip bounds a value quoted in an error.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}
