package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/memory"
)

// Names of the built-in person-memory tools, reserved while memory is on.
const (
	ToolMemoryRead = "memory_read"
	ToolMemorySave = "memory_save"
)

// memorySnapshot is the memory a turn may use: taken from the effective
// settings when the turn (or the held turn a decision resumes) began.
type memorySnapshot struct {
	Read         bool    `json:"read"`
	Save         bool    `json:"save"`
	Instructions *string `json:"instructions,omitempty"`
	// Off says why the memory tools are not offered, for run history.
	Off string `json:"off,omitempty"`
}

// ServerTool is a tool the box runs itself (retrieval, memory stores, call
// control, HTTP and MCP tools...). Run gets the call and the scope it is
// bound to; the model can never choose the agent or the person. A Run error
// fails the turn, so return failures the model should see as a result
// instead, or as a *ToolError.
type ServerTool struct {
	Def Tool
	Run func(ctx context.Context, call ToolCall, scope Scope) (string, error)
	// Filler is what a caller hears while the tool runs long (see
	// EventToolRunning); empty: silence.
	Filler string
	// Unavailable, when set, says why the tool (or the server of tools
	// named Def.Name) is left out of this turn: it is not offered, and the
	// run records the reason under toolsLeftOut.
	Unavailable string
}

// ToolError is a failed tool call the model sees and can act on: Message
// is its result, Outcome the short code run history records for the call
// ("timeout", "http_503"). A Run that returns one does not fail the turn.
type ToolError struct {
	Outcome string
	Message string
}

func (e *ToolError) Error() string { return e.Outcome + ": " + e.Message }

// Outcomes of a server tool call in run history, beside ToolError's.
const (
	OutcomeOK        = "ok"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	OutcomeLimit     = "limit"
)

// ToolRun is one server tool call of a turn as run history keeps it: never
// its arguments or result.
type ToolRun struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Duration time.Duration `json:"-"`
	MS       int64         `json:"durationMs"`
	Outcome  string        `json:"outcome"`
}

// Scope is what a server tool is bound to in one turn.
type Scope struct {
	Agent string
	// RunID is the turn's run.
	RunID uuid.UUID
	// SessionID is "" for stateless turns.
	SessionID string
	// Identity is the person selected by the agent's fixed key, if any.
	Identity identity.Selection
}

// ToolSource gives the server tools an agent declares (beyond the
// built-in memory tools), resolved at the start of each turn.
type ToolSource func(ctx context.Context, agent string) ([]ServerTool, error)

// Sources combines tool sources; a nil source is skipped.
func Sources(sources ...ToolSource) ToolSource {
	return func(ctx context.Context, agent string) ([]ServerTool, error) {
		var out []ServerTool
		for _, src := range sources {
			if src == nil {
				continue
			}
			tools, err := src(ctx, agent)
			if err != nil {
				return nil, err
			}
			out = append(out, tools...)
		}
		return out, nil
	}
}

// memorySnapshotFor resolves the agent's effective settings and the
// identity its fixed key selects. A storage failure is ErrMemory, never a
// silent omission.
func (r *Runtime) memorySnapshotFor(ctx context.Context, agentName string, ids identity.Set) (memorySnapshot, identity.Selection, error) {
	v, err := r.cfg.Settings.Get(ctx, agentName)
	if err != nil {
		return memorySnapshot{}, identity.Selection{}, fault.Hide(fmt.Errorf("%w: read memory settings", ErrMemory), err)
	}
	key := ""
	if v.Binding != nil {
		key = v.Binding.IdentityKey
	}
	sel := identity.Select(ids, key)
	snap := memorySnapshot{Read: v.Value.Read, Save: v.Value.Save, Instructions: v.Value.Instructions}
	switch {
	case !snap.Read && !snap.Save:
		snap.Off = "read and save are off"
	case !sel.Ok():
		snap.Off, snap.Read, snap.Save = sel.Reason, false, false
	}
	return snap, sel, nil
}

var emptyObject = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// memoryTools are the tools the snapshot allows, bound to the agent and the
// selected person: the model can choose neither.
func (r *Runtime) memoryTools(snap memorySnapshot) []ServerTool {
	var out []ServerTool
	if snap.Read {
		out = append(out, ServerTool{
			Def: Tool{Name: ToolMemoryRead, Parameters: emptyObject,
				Description: "Read what is remembered about the person you are talking with: saved facts and summaries of recent calls. Takes no arguments."},
			Run: r.memoryRead,
		})
	}
	if snap.Save {
		out = append(out, ServerTool{
			Def: Tool{Name: ToolMemorySave,
				Parameters:  json.RawMessage(`{"type":"object","properties":{"content":{"type":"string","description":"The part of the conversation worth remembering, as text."}},"required":["content"],"additionalProperties":false}`),
				Description: "Remember durable facts about the person you are talking with (preferences, circumstances, commitments) from the conversation text you pass. Answers {\"saved\": true}."},
			Run: func(ctx context.Context, call ToolCall, scope Scope) (string, error) {
				return r.memorySave(ctx, call, scope, snap.Instructions)
			},
		})
	}
	return out
}

func (r *Runtime) memoryRead(ctx context.Context, _ ToolCall, scope Scope) (string, error) {
	rec, err := r.cfg.Memory.Recall(ctx, memory.RecallRequest{AgentID: scope.Agent, UserID: scope.Identity.Value})
	if err != nil {
		return "", fault.Hide(fmt.Errorf("%w: recall", ErrMemory), err)
	}
	type call struct {
		StartedAt string  `json:"startedAt"`
		Outcome   *string `json:"outcome,omitempty"`
		Summary   string  `json:"summary"`
	}
	out := struct {
		Facts       []string `json:"facts"`
		RecentCalls []call   `json:"recentCalls"`
	}{Facts: []string{}, RecentCalls: []call{}}
	for _, f := range rec.Facts {
		out.Facts = append(out.Facts, f.Content)
	}
	for _, c := range rec.Calls {
		out.RecentCalls = append(out.RecentCalls, call{StartedAt: c.StartedAt.Format("2006-01-02T15:04:05Z07:00"), Outcome: c.Outcome, Summary: c.Summary})
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// runMemorySave extracts with the effective instructions and answers only
// whether it saved: never the facts or old summaries.
func (r *Runtime) memorySave(ctx context.Context, call ToolCall, scope Scope, instructions *string) (string, error) {
	var a struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil || a.Content == "" {
		return `{"saved":false,"error":"content is required"}`, nil
	}
	runID := scope.RunID.String()
	_, err := r.cfg.Memory.Add(ctx, memory.AddRequest{
		AgentID: scope.Agent, UserID: scope.Identity.Value,
		Transcript:   memory.Transcript{Text: a.Content},
		Instructions: instructions,
		Call:         memory.CallMeta{RunID: &runID},
	})
	switch {
	case err == nil:
		return `{"saved":true}`, nil
	case errors.Is(err, memory.ErrUnavailable), errors.Is(err, memory.ErrSchemaMissing), errors.Is(err, memory.ErrPersistFailed):
		return "", fault.Hide(fmt.Errorf("%w: save", ErrMemory), err)
	}
	b, _ := json.Marshal(map[string]any{"saved": false, "error": fault.Code(err)})
	return string(b), nil
}
