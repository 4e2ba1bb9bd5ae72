package stores

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider"
)

// Learning states.
const (
	// StateWaiting: no useful reports yet.
	StateWaiting = "waiting"
	// StateIdle: memory is current; new sessions are reviewed as they finish.
	StateIdle = "idle"
	// StateUpdating: a learning run is in progress.
	StateUpdating = "updating"
	// StateDelayed: a learning run failed; it retries at next_retry_at.
	StateDelayed = "delayed"
)

// Why a learning run ran.
const (
	TriggerReports  = "reports"
	TriggerSchedule = "schedule"
	TriggerRetry    = "retry"
)

// Learning is an agent's learning setting.
type Learning struct {
	// MemoryModelRef is the memory model; nil uses the agent's model.
	MemoryModelRef *string `json:"memory_model_ref"`
}

// GetLearning returns the agent's learning setting. Errors: ErrNotFound,
// ErrUnavailable.
func (s *Service) GetLearning(ctx context.Context, agentName string) (Learning, error) {
	if _, err := s.learnedStore(ctx, agentName); err != nil {
		return Learning{}, err
	}
	var l Learning
	if err := s.cfg.Pool.QueryRow(ctx, `SELECT memory_model_ref FROM stackbone_platform.agent_learning WHERE agent_id = $1`,
		agentName).Scan(&l.MemoryModelRef); err != nil {
		return Learning{}, dbErr("get learning", err)
	}
	return l, nil
}

// SetMemoryModel chooses the model learning uses (reports and runs) for
// the agent; nil goes back to the agent's model. It applies from the next
// report or run. Errors: ErrInvalidRequest (not a provider/model id, or an
// unknown provider), ErrNotFound, ErrUnavailable.
func (s *Service) SetMemoryModel(ctx context.Context, agentName string, ref *string) (Learning, error) {
	if ref != nil {
		if _, _, err := config.SplitModel(*ref); err != nil {
			return Learning{}, invalid("memory_model_ref", "%v; copy an id from the model list, or send null", err)
		}
		if s.cfg.Models != nil {
			if _, err := s.cfg.Models.Resolve(*ref); errors.Is(err, provider.ErrUnknownProvider) || errors.Is(err, provider.ErrInvalidModel) {
				return Learning{}, invalid("memory_model_ref", "%v", err)
			}
		}
	}
	if _, err := s.learnedStore(ctx, agentName); err != nil {
		return Learning{}, err
	}
	var l Learning
	err := s.cfg.Pool.QueryRow(ctx, `UPDATE stackbone_platform.agent_learning SET memory_model_ref = $2, updated_at = now()
		WHERE agent_id = $1 RETURNING memory_model_ref`, agentName, ref).Scan(&l.MemoryModelRef)
	if err != nil {
		return Learning{}, dbErr("set memory model", err)
	}
	s.log.Info("memory model set", "agent", agentName, "inherit", ref == nil)
	return l, nil
}

// effectiveModel is the memory model of an agent for the next report or run.
func (s *Service) effectiveModel(ctx context.Context, agentName string) (string, error) {
	var ref *string
	err := s.cfg.Pool.QueryRow(ctx, `SELECT memory_model_ref FROM stackbone_platform.agent_learning WHERE agent_id = $1`, agentName).Scan(&ref)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", dbErr("read memory model", err)
	}
	if ref != nil {
		return *ref, nil
	}
	return s.cfg.Agents[agentName].Model.Primary(), nil
}

// AgentMemory is getAgentMemory: an agent's learned memory at a glance.
type AgentMemory struct {
	AgentID        string     `json:"agent_id"`
	AgentName      string     `json:"agent_name"`
	MemoryStoreID  uuid.UUID  `json:"memory_store_id"`
	MemoryCount    int        `json:"memory_count"`
	TotalBytes     int64      `json:"total_bytes"`
	Revision       int64      `json:"revision"`
	State          string     `json:"state"`
	NextRetryAt    *time.Time `json:"next_retry_at"`
	EffectiveModel string     `json:"effective_model"`
	// PendingSessionCount is finished sessions whose useful reports wait
	// for a learning run.
	PendingSessionCount int `json:"pending_session_count"`
	// FailedSessionCount is finished sessions whose report could not be
	// written (the model failed on every attempt).
	FailedSessionCount int        `json:"failed_session_count"`
	LastUpdatedAt      *time.Time `json:"last_updated_at"`
	LastCheckedAt      *time.Time `json:"last_checked_at"`
}

// GetAgentMemory summarizes an agent's learned memory and learning.
// Errors: ErrNotFound, ErrUnavailable.
func (s *Service) GetAgentMemory(ctx context.Context, agentName string) (AgentMemory, error) {
	st, err := s.learnedStore(ctx, agentName)
	if err != nil {
		return AgentMemory{}, err
	}
	am := AgentMemory{AgentID: agentName, AgentName: agentName, MemoryStoreID: st.ID, MemoryCount: st.MemoryCount,
		TotalBytes: st.TotalBytes, Revision: st.Revision}
	var ref *string
	err = s.cfg.Pool.QueryRow(ctx, `
		SELECT l.state, l.next_retry_at, l.memory_model_ref, l.last_updated_at, l.last_checked_at,
		  (SELECT count(*) FROM stackbone_platform.session_reports r WHERE r.agent_id = l.agent_id AND r.useful AND r.reflection_id IS NULL),
		  (SELECT count(*) FROM stackbone_platform.session_reports r WHERE r.agent_id = l.agent_id AND r.status = 'failed')
		FROM stackbone_platform.agent_learning l WHERE l.agent_id = $1`, agentName).Scan(
		&am.State, &am.NextRetryAt, &ref, &am.LastUpdatedAt, &am.LastCheckedAt, &am.PendingSessionCount, &am.FailedSessionCount)
	if err != nil {
		return AgentMemory{}, dbErr("get agent memory", err)
	}
	am.EffectiveModel = s.cfg.Agents[agentName].Model.Primary()
	if ref != nil {
		am.EffectiveModel = *ref
	}
	for _, t := range []**time.Time{&am.NextRetryAt, &am.LastUpdatedAt, &am.LastCheckedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	if am.State != StateDelayed {
		am.NextRetryAt = nil
	}
	return am, nil
}

// ListAgentMemorySummaries returns GetAgentMemory for every declared agent,
// by name.
func (s *Service) ListAgentMemorySummaries(ctx context.Context) ([]AgentMemory, error) {
	c := config.Config{Agents: s.cfg.Agents}
	out := []AgentMemory{}
	for _, name := range c.AgentNames() {
		am, err := s.GetAgentMemory(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, am)
	}
	return out, nil
}

// MemoryItem is a current memory without its content.
type MemoryItem struct {
	MemoryID uuid.UUID `json:"memory_id"`
	Path     string    `json:"path"`
	Summary  string    `json:"summary"`
	ByteSize int       `json:"byte_size"`
	// Topic is the first folder of the path (nil at the root).
	Topic     *string   `json:"topic"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Topic is a first-level folder of learned memory with its memory count.
type Topic struct {
	Topic string `json:"topic"`
	Count int    `json:"count"`
}

// AgentMemories is listAgentMemories.
type AgentMemories struct {
	Memories []MemoryItem `json:"memories"`
	// Topics come from the whole collection, whatever the filter.
	Topics     []Topic `json:"topics"`
	NextCursor *string `json:"next_cursor"`
}

// AgentMemoryFilter narrows ListAgentMemories.
type AgentMemoryFilter struct {
	// Query keeps memories matching these words (full-text).
	Query string
	// Topic keeps memories under /Topic/.
	Topic string
	// Sort is "updated" (newest first, the default) or "alphabetical".
	Sort   string
	Limit  int
	Cursor string
}

// ListAgentMemories lists an agent's current learned memories without
// content, with the topics of the whole collection. Errors:
// ErrInvalidRequest, ErrNotFound, ErrUnavailable.
func (s *Service) ListAgentMemories(ctx context.Context, agentName string, f AgentMemoryFilter) (AgentMemories, error) {
	limit, err := Page(f.Limit)
	if err != nil {
		return AgentMemories{}, err
	}
	if f.Sort == "" {
		f.Sort = "updated"
	}
	if f.Sort != "updated" && f.Sort != "alphabetical" {
		return AgentMemories{}, invalid("sort", "must be updated or alphabetical")
	}
	lo, hi := "/", prefixEnd("/")
	if f.Topic != "" {
		p, err := NormalizePrefix("topic", "/"+f.Topic)
		if err != nil {
			return AgentMemories{}, err
		}
		lo, hi = p, prefixEnd(p)
	}
	if len(f.Query) > 500 {
		return AgentMemories{}, invalid("query", "must be at most 500 characters")
	}
	c, has, err := decodeCursor(f.Cursor, "agent-memories-"+f.Sort)
	if err != nil {
		return AgentMemories{}, err
	}
	var afterT *time.Time
	var afterID *uuid.UUID
	var afterPath *string
	if has {
		if f.Sort == "alphabetical" {
			afterPath = &c.P
		} else {
			t, err1 := time.Parse(time.RFC3339Nano, c.T)
			id, err2 := uuid.Parse(c.I)
			if err1 != nil || err2 != nil {
				return AgentMemories{}, invalid("cursor", "is not a next_cursor of this list")
			}
			afterT, afterID = &t, &id
		}
	}
	st, err := s.learnedStore(ctx, agentName)
	if err != nil {
		return AgentMemories{}, err
	}
	// Conditions are added only when asked for, and the query is planned
	// for its own values, so the planner sees what it filters on.
	where, args := "", []any{pgx.QueryExecModeExec, st.ID, limit + 1}
	cond := func(sql string, vals ...any) {
		n := len(args) - 1
		for i, v := range vals {
			sql = strings.ReplaceAll(sql, fmt.Sprintf("$%c", 'a'+i), fmt.Sprintf("$%d", n+i+1))
			args = append(args, v)
		}
		where += " AND " + sql
	}
	if f.Topic != "" {
		cond("m.path >= $a AND m.path < $b", lo, hi)
	}
	if f.Query != "" {
		cond("m.search @@ websearch_to_tsquery('english', $a)", f.Query)
	}
	order := `m.updated_at DESC, m.id DESC`
	if f.Sort == "alphabetical" {
		order = `m.path`
		if afterPath != nil {
			cond("m.path > $a", *afterPath)
		}
	} else if afterT != nil {
		cond("(m.updated_at, m.id) < ($a, $b)", *afterT, *afterID)
	}
	rows, err := s.cfg.Pool.Query(ctx, `
		SELECT m.id, m.path, m.summary, m.byte_size, m.created_at, m.updated_at
		FROM stackbone_platform.memories m
		WHERE m.store_id = $1 AND m.status = 'active'`+where+`
		ORDER BY `+order+` LIMIT $2`, args...)
	if err != nil {
		return AgentMemories{}, dbErr("list agent memories", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MemoryItem, error) {
		var it MemoryItem
		err := r.Scan(&it.MemoryID, &it.Path, &it.Summary, &it.ByteSize, &it.CreatedAt, &it.UpdatedAt)
		it.CreatedAt, it.UpdatedAt, it.Topic = it.CreatedAt.UTC(), it.UpdatedAt.UTC(), topicOf(it.Path)
		return it, err
	})
	if err != nil {
		return AgentMemories{}, dbErr("list agent memories", err)
	}
	out := AgentMemories{Memories: items, Topics: []Topic{}}
	if out.Memories == nil {
		out.Memories = []MemoryItem{}
	}
	if len(items) > limit {
		out.Memories = items[:limit]
		last := out.Memories[limit-1]
		c := cursor{K: "agent-memories-" + f.Sort, T: last.UpdatedAt.Format(time.RFC3339Nano), I: last.MemoryID.String()}
		if f.Sort == "alphabetical" {
			c = cursor{K: "agent-memories-" + f.Sort, P: last.Path}
		}
		out.NextCursor = c.encode()
	}
	rows, err = s.cfg.Pool.Query(ctx, `SELECT substr(path, 2, length(path) - 2), count FROM stackbone_platform.memory_folders
		WHERE store_id = $1 AND parent = '/' ORDER BY path`, st.ID)
	if err != nil {
		return AgentMemories{}, dbErr("list topics", err)
	}
	topics, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Topic])
	if err != nil {
		return AgentMemories{}, dbErr("list topics", err)
	}
	if topics != nil {
		out.Topics = topics
	}
	return out, nil
}

func topicOf(path string) *string {
	rest := path[1:]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '/' {
			t := rest[:i]
			return &t
		}
	}
	return nil
}

// Reflection is a learning run (one attempt): why it ran, what it read and
// what it did.
type Reflection struct {
	ID            uuid.UUID `json:"reflection_id"`
	AgentID       string    `json:"agent_id"`
	MemoryStoreID uuid.UUID `json:"memory_store_id"`
	// Status is running, succeeded or failed.
	Status      string `json:"status"`
	TriggeredBy string `json:"triggered_by"`
	// Reason says why it ran, in words.
	Reason  string    `json:"reason"`
	Attempt int       `json:"attempt"`
	Model   string    `json:"model"`
	RunID   uuid.UUID `json:"run_id"`
	// DriverSessionID is null: a learning run is a job with its own run in
	// run history (RunID), not a conversation session.
	DriverSessionID *string `json:"driver_session_id"`
	ReportCount     int     `json:"report_count"`
	// LearnedFrom are the sessions whose reports back the changes.
	LearnedFrom []string `json:"learned_from_session_ids"`
	Added       int      `json:"added"`
	Updated     int      `json:"updated"`
	Merged      int      `json:"merged"`
	Retired     int      `json:"retired"`
	// Changes are what the memory update did, one per change.
	Changes json.RawMessage `json:"changes"`
	// Summary is the run's own account of the update.
	Summary    *string      `json:"summary"`
	Error      *ErrorInfo   `json:"error"`
	StartedAt  time.Time    `json:"started_at"`
	FinishedAt *time.Time   `json:"finished_at"`
	Reports    []ReportInfo `json:"reports_read,omitempty"`
	reportIDs  []uuid.UUID
}

// ErrorInfo is why a run failed.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ReportInfo is one session report a run read.
type ReportInfo struct {
	ReportID    uuid.UUID `json:"report_id"`
	SessionID   string    `json:"session_id"`
	FromTurn    int       `json:"from_turn"`
	ThroughTurn int       `json:"through_turn"`
	Useful      bool      `json:"useful"`
	Report      string    `json:"report"`
	CreatedAt   time.Time `json:"created_at"`
}

// ReflectionPage is one page of learning runs, newest first.
type ReflectionPage struct {
	Reflections []Reflection `json:"reflections"`
	NextCursor  *string      `json:"next_cursor"`
}

// ReflectionFilter narrows ListReflections.
type ReflectionFilter struct {
	AgentID     string
	Status      string
	TriggeredBy string
	Limit       int
	Cursor      string
}

const reflectionCols = `id, agent_id, store_id, status, triggered_by, reason, attempt, model, run_id, cardinality(report_ids),
	learned_from, added, updated, merged, retired, changes, summary, error_code, error_message, started_at, finished_at, report_ids`

func scanReflection(row pgx.Row) (Reflection, error) {
	var r Reflection
	var code, msg *string
	err := row.Scan(&r.ID, &r.AgentID, &r.MemoryStoreID, &r.Status, &r.TriggeredBy, &r.Reason, &r.Attempt, &r.Model, &r.RunID,
		&r.ReportCount, &r.LearnedFrom, &r.Added, &r.Updated, &r.Merged, &r.Retired, &r.Changes, &r.Summary, &code, &msg,
		&r.StartedAt, &r.FinishedAt, &r.reportIDs)
	if code != nil {
		r.Error = &ErrorInfo{Code: *code}
		if msg != nil {
			r.Error.Message = *msg
		}
	}
	r.StartedAt = r.StartedAt.UTC()
	if r.FinishedAt != nil {
		t := r.FinishedAt.UTC()
		r.FinishedAt = &t
	}
	if r.LearnedFrom == nil {
		r.LearnedFrom = []string{}
	}
	return r, err
}

// ListReflections lists learning runs newest first. Errors:
// ErrInvalidRequest, ErrNotFound (an unknown agent), ErrUnavailable.
func (s *Service) ListReflections(ctx context.Context, f ReflectionFilter) (ReflectionPage, error) {
	limit, err := Page(f.Limit)
	if err != nil {
		return ReflectionPage{}, err
	}
	if f.Status != "" && f.Status != "running" && f.Status != "succeeded" && f.Status != "failed" {
		return ReflectionPage{}, invalid("status", "must be running, succeeded or failed")
	}
	if f.TriggeredBy != "" && f.TriggeredBy != TriggerReports && f.TriggeredBy != TriggerSchedule && f.TriggeredBy != TriggerRetry {
		return ReflectionPage{}, invalid("triggered_by", "must be reports, schedule or retry")
	}
	if f.AgentID != "" && !s.agentExists(f.AgentID) {
		return ReflectionPage{}, notFound("no agent " + clip(f.AgentID, 64))
	}
	c, has, err := decodeCursor(f.Cursor, "reflections")
	if err != nil {
		return ReflectionPage{}, err
	}
	var beforeT *time.Time
	var beforeID *uuid.UUID
	if has {
		t, err1 := time.Parse(time.RFC3339Nano, c.T)
		id, err2 := uuid.Parse(c.I)
		if err1 != nil || err2 != nil {
			return ReflectionPage{}, invalid("cursor", "is not a next_cursor of this list")
		}
		beforeT, beforeID = &t, &id
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+reflectionCols+` FROM stackbone_platform.memory_reflections
		WHERE ($1 = '' OR agent_id = $1) AND ($2 = '' OR status = $2) AND ($3 = '' OR triggered_by = $3)
		  AND ($4::timestamptz IS NULL OR (started_at, id) < ($4, $5))
		ORDER BY started_at DESC, id DESC LIMIT $6`, f.AgentID, f.Status, f.TriggeredBy, beforeT, beforeID, limit+1)
	if err != nil {
		return ReflectionPage{}, dbErr("list reflections", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Reflection, error) { return scanReflection(r) })
	if err != nil {
		return ReflectionPage{}, dbErr("list reflections", err)
	}
	page := ReflectionPage{Reflections: list}
	if page.Reflections == nil {
		page.Reflections = []Reflection{}
	}
	if len(list) > limit {
		page.Reflections = list[:limit]
		last := page.Reflections[limit-1]
		page.NextCursor = cursor{K: "reflections", T: last.StartedAt.Format(time.RFC3339Nano), I: last.ID.String()}.encode()
	}
	return page, nil
}

// GetReflection returns one learning run with the reports it read.
// Errors: ErrNotFound, ErrUnavailable.
func (s *Service) GetReflection(ctx context.Context, id uuid.UUID) (Reflection, error) {
	r, err := scanReflection(s.cfg.Pool.QueryRow(ctx, `SELECT `+reflectionCols+` FROM stackbone_platform.memory_reflections WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Reflection{}, notFound("no reflection " + id.String())
	}
	if err != nil {
		return Reflection{}, dbErr("get reflection", err)
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT id, session_id, from_turn, through_turn, useful, report, created_at
		FROM stackbone_platform.session_reports WHERE id = ANY($1) ORDER BY created_at, id`, r.reportIDs)
	if err != nil {
		return Reflection{}, dbErr("get reflection reports", err)
	}
	r.Reports, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReportInfo, error) {
		var ri ReportInfo
		err := row.Scan(&ri.ReportID, &ri.SessionID, &ri.FromTurn, &ri.ThroughTurn, &ri.Useful, &ri.Report, &ri.CreatedAt)
		ri.CreatedAt = ri.CreatedAt.UTC()
		return ri, err
	})
	if err != nil {
		return Reflection{}, dbErr("get reflection reports", err)
	}
	if r.Reports == nil {
		r.Reports = []ReportInfo{}
	}
	return r, nil
}
