package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/telemetry"
)

// Models resolves provider/model ids. *provider.Registry implements it.
type Models interface {
	Resolve(id string) (provider.Model, error)
}

// RunRecorder writes run history. *runs.Store implements it.
type RunRecorder interface {
	Insert(ctx context.Context, r runs.Run) error
}

// Config wires a Service.
type Config struct {
	// Pool is the box's database. Required.
	Pool *pgxpool.Pool
	// Models resolves the extraction model. Required for Add.
	Models Models
	// Logger receives ids, sizes, codes and timings, never content.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// Metrics records each operation's latency and outcome (nil: none).
	Metrics *telemetry.Metrics
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// FallbackModel is the extraction model after a System selection and the
	// request's model: STACKBONE_MEMORY_MODEL or the config file. Empty means
	// PlatformDefaultModel.
	FallbackModel string
	// FallbackReasoningEffort likewise; empty means
	// PlatformDefaultReasoningEffort.
	FallbackReasoningEffort string
	// ModelTimeout bounds one extraction request. Defaults to 2 minutes.
	ModelTimeout time.Duration
	// Events records memory.saved in the transaction of each add that
	// changed memory (nil: none).
	Events Events
	// Erase, when set, erases in DeleteAll's transaction what other parts
	// of the box keep of the person (their calls' recordings).
	Erase func(ctx context.Context, tx pgx.Tx, agentID, userID string) error
}

// Events publishes what memory did (package webhooks).
type Events interface {
	// Emit records an event of type typ in tx, so it exists only if tx
	// commits; an error leaves tx usable.
	Emit(ctx context.Context, tx pgx.Tx, typ string, data, content any) error
}

// savedEvent is the data of memory.saved: counts and ids, never a fact.
type savedEvent struct {
	AgentID      string    `json:"agentId"`
	UserID       string    `json:"userId"`
	CallRecordID uuid.UUID `json:"callRecordId"`
	RunID        *string   `json:"runId,omitempty"`
	Added        int       `json:"added"`
	Updated      int       `json:"updated"`
	Deleted      int       `json:"deleted"`
	Facts        int       `json:"facts"`
}

// Platform defaults of the extraction model.
const (
	PlatformDefaultModel           = "openai/gpt-5.6-luna"
	PlatformDefaultReasoningEffort = "high"
)

// Service is person memory. It is safe for concurrent use.
type Service struct {
	cfg Config
	log *slog.Logger
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ModelTimeout == 0 {
		cfg.ModelTimeout = 2 * time.Minute
	}
	if cfg.FallbackModel == "" {
		cfg.FallbackModel = PlatformDefaultModel
	}
	if cfg.FallbackReasoningEffort == "" {
		cfg.FallbackReasoningEffort = PlatformDefaultReasoningEffort
	}
	return &Service{cfg: cfg, log: cfg.Logger.With("component", "memory")}
}

// observe records an operation's latency and outcome code.
func (s *Service) observe(op string, start time.Time, err *error) {
	code := ""
	if *err != nil {
		code = fault.Code(*err)
		if code == "" {
			code = "error"
		}
	}
	s.cfg.Metrics.Memory(op, code, time.Since(start))
}

// Add updates a person's memory from one conversation and stores one call
// record. It returns ErrInvalidRequest, ErrModelFailed, ErrInvalidModelOutput,
// ErrConflict (the memory changed while the model was asked), ErrPersistFailed,
// ErrSchemaMissing or ErrUnavailable; on any error nothing is written.
func (s *Service) Add(ctx context.Context, req AddRequest) (_ AddResult, err error) {
	defer s.observe("add", time.Now(), &err)
	if err := validateAdd(&req); err != nil {
		return AddResult{}, err
	}
	if req.IdempotencyKey != "" {
		if res, ok, err := s.replay(ctx, req); err != nil || ok {
			return res, err
		}
	}
	settings, revision, facts, err := s.snapshot(ctx, req.AgentID, req.UserID)
	if err != nil {
		return AddResult{}, err
	}
	ex, err := s.extraction(settings, req.Model, req.ReasoningEffort)
	if err != nil {
		return AddResult{}, err
	}
	policy := GenericPolicy
	if req.Instructions != nil {
		policy = *req.Instructions
	}
	pr, err := buildPrompt(ex.guidance, policy, facts, req.Transcript)
	if err != nil {
		return AddResult{}, fmt.Errorf("%w: build prompt: %v", ErrInvalidRequest, err)
	}

	run := runs.Run{ID: uuid.New(), Kind: runs.KindMemoryExtraction, AgentID: req.AgentID, Model: ex.model, StartedAt: s.cfg.Now()}
	answer, usage, model, err := s.ask(ctx, ex, pr)
	finish := func(code string) {
		end := s.cfg.Now()
		ms := int(end.Sub(run.StartedAt).Milliseconds())
		run.FinishedAt, run.DurationMS = &end, &ms
		run.InputTokens, run.OutputTokens = usage.PromptTokens, usage.CompletionTokens
		run.CostUSD = model.Cost(usage.PromptTokens, usage.CompletionTokens)
		run.Status, run.ErrorCode = runs.StatusSucceeded, code
		if code != "" {
			run.Status = runs.StatusFailed
		}
	}
	// recordFailure keeps the failed run in history; the add's own error
	// matters more than a failure to record it.
	recordFailure := func(cause error) error {
		finish(fault.Code(cause))
		if rerr := s.insertRun(context.WithoutCancel(ctx), run); rerr != nil {
			s.log.Warn("memory: record failed run", "run", run.ID, "error", rerr)
		}
		s.log.Info("memory add failed", "agent", req.AgentID, "run", run.ID, "code", fault.Code(cause), "facts", len(facts))
		return cause
	}
	if err != nil {
		return AddResult{}, recordFailure(err)
	}
	p, err := parseAnswer(answer, len(facts))
	if err != nil {
		return AddResult{}, recordFailure(err)
	}
	kept, updates, deletes, adds, err := applyPlan(facts, p)
	if err != nil {
		return AddResult{}, recordFailure(err)
	}
	finish("")
	run.Metadata = map[string]any{
		"factsBefore": len(facts), "factsAfter": len(kept) + len(adds),
		"added": len(adds), "updated": len(updates), "deleted": len(deletes),
		"transcriptChars": req.Transcript.chars(),
	}

	// Postgres keeps microseconds; what add returns must equal what recall reads.
	now := s.cfg.Now().UTC().Truncate(time.Microsecond)
	call := Call{
		ID:              uuid.New(),
		StartedAt:       now,
		DurationSeconds: req.Call.DurationSeconds,
		Outcome:         req.Call.Outcome,
		Summary:         p.summary,
		RunID:           req.Call.RunID,
	}
	if req.Call.StartedAt != nil {
		call.StartedAt = req.Call.StartedAt.UTC().Truncate(time.Microsecond)
	}
	result, err := s.commit(ctx, req, revision, facts, kept, updates, deletes, adds, call, run, now)
	if errors.Is(err, errReplayed) || (errors.Is(err, ErrConflict) && req.IdempotencyKey != "") {
		// An add with the same key committed while this one asked the
		// model (its revision bump or its key came first): its result
		// stands, this one changed nothing.
		if res, ok, rerr := s.replay(ctx, req); rerr != nil || ok {
			return res, rerr
		}
	}
	if err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrPersistFailed) || errors.Is(err, ErrSchemaMissing) {
			run.Status, run.ErrorCode = runs.StatusFailed, fault.Code(err)
			if rerr := s.insertRun(context.WithoutCancel(ctx), run); rerr != nil {
				s.log.Warn("memory: record failed run", "run", run.ID, "error", rerr)
			}
		}
		s.log.Info("memory add failed", "agent", req.AgentID, "run", run.ID, "code", fault.Code(err))
		return AddResult{}, err
	}
	s.log.Info("memory add", "agent", req.AgentID, "run", run.ID, "added", len(adds), "updated", len(updates),
		"deleted", len(deletes), "facts", len(result.Facts), "model_ms", *run.DurationMS)
	return result, nil
}

func (t Transcript) chars() int {
	if t.Messages == nil {
		return utf8.RuneCountInString(t.Text)
	}
	n := 0
	for _, m := range t.Messages {
		n += utf8.RuneCountInString(m.Content)
	}
	return n
}

// snapshot reads, in one round trip, the extraction settings and then the
// person's revision and facts in one statement, so those two come from one
// consistent view of the database.
func (s *Service) snapshot(ctx context.Context, agentID, userID string) (map[string][]byte, int64, []Fact, error) {
	var b pgx.Batch
	b.Queue(settingsQuery, settingsKeys)
	b.Queue(`
		SELECT coalesce((SELECT revision FROM stackbone_platform.memory_revisions
		                 WHERE agent_id = $1 AND user_id = $2), 0),
		       f.id, f.content, f.created_at, f.updated_at
		FROM (SELECT 1) AS one
		LEFT JOIN stackbone_platform.memory_facts f ON f.agent_id = $1 AND f.user_id = $2
		ORDER BY f.seq`, agentID, userID)
	br := s.cfg.Pool.SendBatch(ctx, &b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, nil, dbError(ErrUnavailable, "read extraction settings", err)
	}
	settings, err := readSettings(rows)
	if err != nil {
		return nil, 0, nil, err
	}
	if rows, err = br.Query(); err != nil {
		return nil, 0, nil, dbError(ErrUnavailable, "read memory", err)
	}
	var rev int64
	var facts []Fact
	var id *uuid.UUID
	var content *string
	var created, updated *time.Time
	_, err = pgx.ForEachRow(rows, []any{&rev, &id, &content, &created, &updated}, func() error {
		if id != nil {
			facts = append(facts, Fact{ID: *id, Content: *content, CreatedAt: *created, UpdatedAt: *updated})
		}
		return nil
	})
	if err != nil {
		return nil, 0, nil, dbError(ErrUnavailable, "read memory", err)
	}
	return settings, rev, facts, nil
}

// ask sends the extraction request.
func (s *Service) ask(ctx context.Context, ex extraction, pr prompt) (string, openai.Usage, provider.Model, error) {
	m, err := s.cfg.Models.Resolve(ex.model)
	if err != nil {
		return "", openai.Usage{}, m, fmt.Errorf("%w: %v", ErrModelFailed, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ModelTimeout)
	defer cancel()
	resp, err := m.Client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: m.Name,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: pr.System},
			{Role: openai.ChatMessageRoleUser, Content: pr.User},
		},
		ResponseFormat:  &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
		ReasoningEffort: ex.reasoningEffort,
	})
	if err != nil {
		return "", openai.Usage{}, m, fmt.Errorf("%w: %s", ErrModelFailed, provider.Describe(err))
	}
	if len(resp.Choices) == 0 {
		return "", resp.Usage, m, badOutput("the model returned no choice")
	}
	return resp.Choices[0].Message.Content, resp.Usage, m, nil
}

// commit applies a validated plan as one pipelined batch, which Postgres
// runs as one implicit transaction and one round trip. Its first statement
// bumps the person's revision (taking the row lock) and raises SBC01 unless
// the revision is still the snapshot's: then another add or an erasure
// committed since the snapshot, and the whole batch is rolled back.
func (s *Service) commit(ctx context.Context, req AddRequest, revision int64, snapshot, kept []Fact,
	updates map[int]string, deletes []int, adds []string, call Call, run runs.Run, now time.Time) (AddResult, error) {
	var b pgx.Batch
	b.Queue(`SELECT stackbone_platform.memory_bump_revision($1, $2, $3)`, req.AgentID, req.UserID, revision)
	if len(deletes) > 0 {
		ids := make([]uuid.UUID, len(deletes))
		for i, idx := range deletes {
			ids[i] = snapshot[idx].ID
		}
		b.Queue(`DELETE FROM stackbone_platform.memory_facts WHERE agent_id = $1 AND user_id = $2 AND id = ANY($3)`,
			req.AgentID, req.UserID, ids)
	}
	for i := range kept {
		if _, ok := updates[indexOf(snapshot, kept[i].ID)]; ok {
			kept[i].UpdatedAt = now
			b.Queue(`UPDATE stackbone_platform.memory_facts SET content = $4, updated_at = $5
			         WHERE agent_id = $1 AND user_id = $2 AND id = $3`,
				req.AgentID, req.UserID, kept[i].ID, kept[i].Content, now)
		}
	}
	for _, c := range adds {
		f := Fact{ID: uuid.New(), Content: c, CreatedAt: now, UpdatedAt: now}
		kept = append(kept, f)
		b.Queue(`INSERT INTO stackbone_platform.memory_facts (id, agent_id, user_id, content, created_at, updated_at)
		         VALUES ($1, $2, $3, $4, $5, $5)`, f.ID, req.AgentID, req.UserID, f.Content, now)
	}
	b.Queue(`INSERT INTO stackbone_platform.memory_calls
	           (id, agent_id, user_id, started_at, duration_seconds, outcome, summary, run_id)
	         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		call.ID, req.AgentID, req.UserID, call.StartedAt, call.DurationSeconds, call.Outcome, call.Summary, call.RunID)
	queueRun(&b, run)
	if kept == nil {
		kept = []Fact{}
	}
	result := AddResult{Facts: kept, Call: call}
	if req.IdempotencyKey != "" {
		raw, _ := json.Marshal(result)
		b.Queue(`INSERT INTO stackbone_platform.memory_idempotency (agent_id, user_id, key, result) VALUES ($1, $2, $3, $4)`,
			req.AgentID, req.UserID, req.IdempotencyKey, raw)
	}

	// Close reads every result and returns the first error; the implicit
	// transaction commits only if there was none. With events wired the
	// batch runs in an explicit transaction that records memory.saved too.
	send := func() error { return s.cfg.Pool.SendBatch(ctx, &b).Close() }
	if s.cfg.Events != nil {
		send = func() error {
			return pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
				if err := tx.SendBatch(ctx, &b).Close(); err != nil {
					return err
				}
				ev := savedEvent{AgentID: req.AgentID, UserID: req.UserID, CallRecordID: call.ID, RunID: call.RunID,
					Added: len(adds), Updated: len(updates), Deleted: len(deletes), Facts: len(kept)}
				if err := s.cfg.Events.Emit(ctx, tx, "memory.saved", ev, nil); err != nil {
					s.log.Warn("memory: event not recorded", "type", "memory.saved", "error", err)
				}
				return nil
			})
		}
	}
	if err := send(); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == conflictSQLState {
			return AddResult{}, fmt.Errorf("%w: the memory changed while the model was asked", ErrConflict)
		}
		if errors.As(err, &pe) && pe.Code == "23505" && pe.TableName == "memory_idempotency" {
			return AddResult{}, errReplayed
		}
		return AddResult{}, dbError(ErrPersistFailed, "write", err)
	}
	return result, nil
}

// errReplayed: an add with the same idempotency key committed first.
var errReplayed = errors.New("memory: idempotency key already used")

// replay returns the stored result of an add made with req's idempotency
// key, if there was one.
func (s *Service) replay(ctx context.Context, req AddRequest) (AddResult, bool, error) {
	var raw []byte
	err := s.cfg.Pool.QueryRow(ctx, `SELECT result FROM stackbone_platform.memory_idempotency
		WHERE agent_id = $1 AND user_id = $2 AND key = $3`, req.AgentID, req.UserID, req.IdempotencyKey).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return AddResult{}, false, nil
	}
	if err != nil {
		return AddResult{}, false, dbError(ErrUnavailable, "read idempotency key", err)
	}
	var res AddResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return AddResult{}, false, dbError(ErrUnavailable, "read idempotency key", err)
	}
	return res, true, nil
}

// conflictSQLState is raised by stackbone_platform.memory_bump_revision.
const conflictSQLState = "SBC01"

func indexOf(facts []Fact, id uuid.UUID) int {
	for i := range facts {
		if facts[i].ID == id {
			return i
		}
	}
	return -1
}

func queueRun(b *pgx.Batch, r runs.Run) { runs.QueueInsert(b, r) }

func (s *Service) insertRun(ctx context.Context, r runs.Run) error {
	var b pgx.Batch
	queueRun(&b, r)
	return s.cfg.Pool.SendBatch(ctx, &b).Close()
}

// Recall returns every fact of the person (oldest first) and their newest
// call records first. An unknown person has two empty lists. It returns
// ErrInvalidRequest, ErrSchemaMissing or ErrUnavailable.
func (s *Service) Recall(ctx context.Context, req RecallRequest) (_ RecallResult, err error) {
	defer s.observe("recall", time.Now(), &err)
	if err := validateScope(req.AgentID, req.UserID); err != nil {
		return RecallResult{}, err
	}
	n := DefaultRecallCalls
	if req.Calls != nil {
		n = *req.Calls
		if n < 0 || n > MaxRecallCalls {
			return RecallResult{}, invalid("calls must be an integer from 0 to %d", MaxRecallCalls)
		}
	}
	// One round trip, one snapshot: both queries in one pipelined batch inside
	// a repeatable-read transaction, so the facts and the calls come from the
	// same moment (never the facts before an add and its call after).
	var b pgx.Batch
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	b.Queue(`SELECT id, content, created_at, updated_at FROM stackbone_platform.memory_facts
	         WHERE agent_id = $1 AND user_id = $2 ORDER BY seq`, req.AgentID, req.UserID)
	b.Queue(`SELECT id, started_at, duration_seconds, outcome, summary, run_id FROM stackbone_platform.memory_calls
	         WHERE agent_id = $1 AND user_id = $2 ORDER BY started_at DESC, seq DESC LIMIT $3`, req.AgentID, req.UserID, n)
	b.Queue(`COMMIT`)
	br := s.cfg.Pool.SendBatch(ctx, &b)
	defer br.Close()
	res := RecallResult{Facts: []Fact{}, Calls: []Call{}}
	if _, err := br.Exec(); err != nil {
		return RecallResult{}, dbError(ErrUnavailable, "recall", err)
	}
	rows, err := br.Query()
	if err != nil {
		return RecallResult{}, dbError(ErrUnavailable, "recall facts", err)
	}
	var f Fact
	_, err = pgx.ForEachRow(rows, []any{&f.ID, &f.Content, &f.CreatedAt, &f.UpdatedAt}, func() error {
		res.Facts = append(res.Facts, f)
		return nil
	})
	if err != nil {
		return RecallResult{}, dbError(ErrUnavailable, "recall facts", err)
	}
	if rows, err = br.Query(); err != nil {
		return RecallResult{}, dbError(ErrUnavailable, "recall calls", err)
	}
	var c Call
	_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.StartedAt, &c.DurationSeconds, &c.Outcome, &c.Summary, &c.RunID}, func() error {
		res.Calls = append(res.Calls, c)
		c = Call{}
		return nil
	})
	if err != nil {
		return RecallResult{}, dbError(ErrUnavailable, "recall calls", err)
	}
	if _, err := br.Exec(); err != nil {
		return RecallResult{}, dbError(ErrUnavailable, "recall", err)
	}
	return res, nil
}

// DeleteAll erases every fact and call record of one (agent, person) and
// bumps the revision, so an add already in flight fails with ErrConflict
// instead of restoring erased data. It returns the number of rows deleted, or
// ErrInvalidRequest, ErrSchemaMissing or ErrUnavailable.
func (s *Service) DeleteAll(ctx context.Context, agentID, userID string) (_ int64, err error) {
	defer s.observe("delete_all", time.Now(), &err)
	if err := validateScope(agentID, userID); err != nil {
		return 0, err
	}
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, dbError(ErrUnavailable, "begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var b pgx.Batch
	b.Queue(`INSERT INTO stackbone_platform.memory_revisions AS r (agent_id, user_id, revision) VALUES ($1, $2, 1)
	         ON CONFLICT (agent_id, user_id) DO UPDATE SET revision = r.revision + 1`, agentID, userID)
	b.Queue(`DELETE FROM stackbone_platform.memory_facts WHERE agent_id = $1 AND user_id = $2`, agentID, userID)
	b.Queue(`DELETE FROM stackbone_platform.memory_calls WHERE agent_id = $1 AND user_id = $2`, agentID, userID)
	b.Queue(`DELETE FROM stackbone_platform.memory_idempotency WHERE agent_id = $1 AND user_id = $2`, agentID, userID)
	br := tx.SendBatch(ctx, &b)
	var deleted int64
	for i := 0; i < 3; i++ {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return 0, dbError(ErrUnavailable, "erase", err)
		}
		if i > 0 {
			deleted += tag.RowsAffected()
		}
	}
	if err := br.Close(); err != nil {
		return 0, dbError(ErrUnavailable, "erase", err)
	}
	if s.cfg.Erase != nil {
		if err := s.cfg.Erase(ctx, tx, agentID, userID); err != nil {
			return 0, dbError(ErrUnavailable, "erase", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, dbError(ErrUnavailable, "commit", err)
	}
	s.log.Info("memory erased", "agent", agentID, "rows", deleted)
	return deleted, nil
}

func validateScope(agentID, userID string) error {
	if agentID == "" {
		return invalid("agentId is required")
	}
	if utf8.RuneCountInString(agentID) > MaxAgentIDChars || !utf8.ValidString(agentID) || strings.ContainsRune(agentID, 0) {
		return invalid("agentId must be valid text of at most %d characters", MaxAgentIDChars)
	}
	if userID == "" {
		return invalid("userId is required")
	}
	if utf8.RuneCountInString(userID) > MaxUserIDChars || !utf8.ValidString(userID) || strings.ContainsRune(userID, 0) {
		return invalid("userId must be valid text of at most %d characters without NUL", MaxUserIDChars)
	}
	return nil
}

func validateAdd(req *AddRequest) error {
	if err := validateScope(req.AgentID, req.UserID); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(req.IdempotencyKey); n > 200 || !utf8.ValidString(req.IdempotencyKey) ||
		strings.ContainsRune(req.IdempotencyKey, 0) {
		return invalid("the idempotency key must be valid text of at most 200 characters")
	}
	t := req.Transcript
	if t.Messages == nil {
		if strings.TrimSpace(t.Text) == "" {
			return invalid("content is required: a transcript string or an array of messages")
		}
	} else {
		if len(t.Messages) == 0 {
			return invalid("content must not be an empty array")
		}
		if len(t.Messages) > MaxMessages {
			return invalid("content has %d messages, more than %d", len(t.Messages), MaxMessages)
		}
		for i, m := range t.Messages {
			switch m.Role {
			case "system", "developer", "user", "assistant", "tool", "function":
			default:
				return invalid("content[%d].role must be system, developer, user, assistant, tool or function", i)
			}
		}
	}
	if c := t.chars(); c > MaxTranscriptChars {
		return invalid("content has %d characters, more than %d", c, MaxTranscriptChars)
	}
	if !utf8.ValidString(t.Text) {
		return invalid("content must be valid UTF-8")
	}
	for _, m := range t.Messages {
		if !utf8.ValidString(m.Content) {
			return invalid("content must be valid UTF-8")
		}
	}
	if in := req.Instructions; in != nil {
		if c := utf8.RuneCountInString(*in); c < 1 || c > MaxInstructionsChars || strings.TrimSpace(*in) == "" {
			return invalid("instructions must be 1 to %d characters", MaxInstructionsChars)
		}
	}
	c := req.Call
	if d := c.DurationSeconds; d != nil && (*d < 0 || *d > 7*24*3600 || *d != *d) {
		return invalid("call.durationSeconds must be a number from 0 to %d", 7*24*3600)
	}
	if o := c.Outcome; o != nil && (*o == "" || utf8.RuneCountInString(*o) > MaxOutcomeChars || strings.ContainsRune(*o, 0)) {
		return invalid("call.outcome must be 1 to %d characters", MaxOutcomeChars)
	}
	if r := c.RunID; r != nil && (*r == "" || utf8.RuneCountInString(*r) > MaxRunIDChars || strings.ContainsRune(*r, 0)) {
		return invalid("call.runId must be 1 to %d characters", MaxRunIDChars)
	}
	if st := c.StartedAt; st != nil && (st.Year() < 1970 || st.Year() > 9999) {
		return invalid("call.startedAt is out of range")
	}
	return nil
}
