package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// Register adds person memory's routes to the API server: adds, recalls
// and erasures for one person (any key holding the memory scopes, a
// restricted key only for its own person), each agent's memory settings,
// System's extraction settings and guidance, and the operator activity log
// those settings write.
func Register(srv *api.Server, svc *Service, settings *Settings, pool *pgxpool.Pool) {
	h := &handlers{svc: svc, settings: settings, pool: pool}
	srv.PersonRoute("POST /api/memory/add", auth.ScopeMemoryWrite, h.memoryAdd)
	srv.PersonRoute("POST /api/memory/recall", auth.ScopeMemoryRead, h.memoryRecall)
	srv.PersonRoute("POST /api/memory/delete-all", auth.ScopeMemoryWrite, h.memoryDeleteAll)
	srv.Route("GET /api/memory/settings/{agentId}", auth.ScopeConfigRead, h.settingsGet)
	srv.Route("PUT /api/memory/settings/{agentId}", auth.ScopeConfigWrite, h.settingsPut)
	srv.Route("DELETE /api/memory/settings/{agentId}", auth.ScopeConfigWrite, h.settingsDelete)

	srv.Route("GET /api/system/memory-extraction", auth.ScopeConfigRead, h.extractionGet)
	srv.Route("PUT /api/system/memory-extraction", auth.ScopeConfigWrite, h.extractionPut)
	srv.Route("PUT /api/system/memory-extraction/prompt", auth.ScopeConfigWrite, h.promptPut)
	srv.Route("POST /api/system/memory-extraction/prompt/publish", auth.ScopeConfigWrite, h.promptPublish)
	srv.Route("DELETE /api/system/memory-extraction/prompt", auth.ScopeConfigWrite, h.promptReset)
	srv.Route("GET /api/activity", auth.ScopeConfigRead, h.activityList)
}

type handlers struct {
	svc      *Service
	settings *Settings
	pool     *pgxpool.Pool
}

// maxMemoryBody bounds add bodies: a 200,000-character transcript with JSON
// escaping fits comfortably.
const maxMemoryBody = 4 << 20

type addBody struct {
	Content         json.RawMessage     `json:"content"`
	AgentID         api.Field[string]   `json:"agentId"`
	UserID          api.Field[string]   `json:"userId"`
	Call            api.Field[callBody] `json:"call"`
	Instructions    api.Field[string]   `json:"instructions"`
	Model           api.Field[string]   `json:"model"`
	ReasoningEffort api.Field[string]   `json:"reasoningEffort"`
}

type callBody struct {
	StartedAt       api.Field[string]  `json:"startedAt"`
	DurationSeconds api.Field[float64] `json:"durationSeconds"`
	Outcome         api.Field[string]  `json:"outcome"`
	RunID           api.Field[string]  `json:"runId"`
}

// messageBody is an OpenAI-shaped chat message. Members a chat client may
// send are accepted; only role and text content reach the extractor.
type messageBody struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Name         json.RawMessage `json:"name"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	ToolCallID   json.RawMessage `json:"tool_call_id"`
	Refusal      json.RawMessage `json:"refusal"`
	FunctionCall json.RawMessage `json:"function_call"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (h *handlers) memoryAdd(w http.ResponseWriter, r *http.Request) error {
	var b addBody
	if err := api.Decode(w, r, maxMemoryBody, &b); err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	req, err := b.request()
	if err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	// A retried add with the same Idempotency-Key returns the first result.
	req.IdempotencyKey = r.Header.Get("Idempotency-Key")
	if err := h.admitPerson(r.Context(), req.AgentID, req.UserID); err != nil {
		return err
	}
	res, err := h.svc.Add(r.Context(), req)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, res)
	return nil
}

func (b addBody) request() (AddRequest, error) {
	var req AddRequest
	var err error
	if req.AgentID, err = requiredString(b.AgentID, "agentId"); err != nil {
		return req, err
	}
	if req.UserID, err = requiredString(b.UserID, "userId"); err != nil {
		return req, err
	}
	if req.Transcript, err = transcript(b.Content); err != nil {
		return req, err
	}
	if req.Instructions, err = b.Instructions.Value("instructions"); err != nil {
		return req, err
	}
	if req.Instructions != nil && *req.Instructions == "" {
		return req, fmt.Errorf("instructions must be 1 to %d characters", MaxInstructionsChars)
	}
	if m, err := b.Model.Value("model"); err != nil {
		return req, err
	} else if m != nil {
		req.Model = *m
	}
	if e, err := b.ReasoningEffort.Value("reasoningEffort"); err != nil {
		return req, err
	} else if e != nil {
		req.ReasoningEffort = *e
	}
	if b.Call.Set && !b.Call.Null {
		c := b.Call.V
		if st, err := c.StartedAt.Value("call.startedAt"); err != nil {
			return req, err
		} else if st != nil {
			t, err := time.Parse(time.RFC3339Nano, *st)
			if err != nil {
				return req, fmt.Errorf("call.startedAt must be an RFC 3339 timestamp such as 2026-10-26T09:00:00.000Z")
			}
			req.Call.StartedAt = &t
		}
		if req.Call.DurationSeconds, err = c.DurationSeconds.Value("call.durationSeconds"); err != nil {
			return req, err
		}
		if req.Call.Outcome, err = c.Outcome.Value("call.outcome"); err != nil {
			return req, err
		}
		if req.Call.RunID, err = c.RunID.Value("call.runId"); err != nil {
			return req, err
		}
	}
	return req, nil
}

func requiredString(f api.Field[string], name string) (string, error) {
	if !f.Set || f.Null || f.V == "" {
		return "", fmt.Errorf("%s is required", name)
	}
	return f.V, nil
}

// transcript reads content: a string, or an array of chat messages whose
// content is a string, null, or an array of parts (text parts are kept).
func transcript(raw json.RawMessage) (Transcript, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return Transcript{}, fmt.Errorf("content is required: a transcript string or an array of messages")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Transcript{}, fmt.Errorf("content is not a valid string")
		}
		return Transcript{Text: s}, nil
	case '[':
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var msgs []messageBody
		if err := dec.Decode(&msgs); err != nil {
			return Transcript{}, fmt.Errorf("content must be an array of {role, content} messages: %s", api.DescribeDecode(err, maxMemoryBody))
		}
		out := make([]Message, 0, len(msgs))
		for i, m := range msgs {
			text, err := messageText(m.Content)
			if err != nil {
				return Transcript{}, fmt.Errorf("content[%d].content %v", i, err)
			}
			out = append(out, Message{Role: m.Role, Content: text})
		}
		return Transcript{Messages: out}, nil
	}
	return Transcript{}, fmt.Errorf("content must be a transcript string or an array of messages")
}

func messageText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	if raw[0] != '[' {
		return "", fmt.Errorf("must be a string, null or an array of parts")
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("must be a string, null or an array of parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

type scopeBody struct {
	AgentID api.Field[string] `json:"agentId"`
	UserID  api.Field[string] `json:"userId"`
	Calls   api.Field[int]    `json:"calls"`
}

func (h *handlers) memoryRecall(w http.ResponseWriter, r *http.Request) error {
	var b scopeBody
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	req := RecallRequest{AgentID: b.AgentID.V, UserID: b.UserID.V}
	calls, err := b.Calls.Value("calls")
	if err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	req.Calls = calls
	if err := h.admitPerson(r.Context(), req.AgentID, req.UserID); err != nil {
		return err
	}
	res, err := h.svc.Recall(r.Context(), req)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, res)
	return nil
}

func (h *handlers) memoryDeleteAll(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		AgentID api.Field[string] `json:"agentId"`
		UserID  api.Field[string] `json:"userId"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	if err := h.admitPerson(r.Context(), b.AgentID.V, b.UserID.V); err != nil {
		return err
	}
	n, err := h.svc.DeleteAll(r.Context(), b.AgentID.V, b.UserID.V)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, map[string]int64{"deleted": n})
	return nil
}

type settingsBody struct {
	Read         api.Field[bool]   `json:"read"`
	Save         api.Field[bool]   `json:"save"`
	Instructions api.Field[string] `json:"instructions"`
	IdentityKey  api.Field[string] `json:"identityKey"`
}

func (h *handlers) settingsGet(w http.ResponseWriter, r *http.Request) error {
	v, err := h.settings.Get(r.Context(), r.PathValue("agentId"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (h *handlers) settingsPut(w http.ResponseWriter, r *http.Request) error {
	var b settingsBody
	if err := api.Decode(w, r, 256<<10, &b); err != nil {
		return fault.Recode(ErrInvalidRequest, err)
	}
	var p Patch
	var err error
	for _, step := range []func() error{
		func() error { p.Read, err = b.Read.Value("read"); return err },
		func() error { p.Save, err = b.Save.Value("save"); return err },
		func() error { p.Instructions, err = b.Instructions.Value("instructions"); return err },
		func() error { p.IdentityKey, err = b.IdentityKey.Value("identityKey"); return err },
	} {
		if err := step(); err != nil {
			return fault.Recode(ErrInvalidRequest, fmt.Errorf("%v; use DELETE to reset a field", err))
		}
	}
	v, err := h.settings.Put(r.Context(), api.Actor(r), r.PathValue("agentId"), p)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (h *handlers) settingsDelete(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	field := ""
	if q.Has("field") {
		field = q.Get("field")
		if field == "" {
			return fmt.Errorf("%w: %s", ErrInvalidRequest, "field must be read, save or instructions")
		}
	}
	v, err := h.settings.Reset(r.Context(), api.Actor(r), r.PathValue("agentId"), field)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

type selectionBody struct {
	Model           api.Field[string] `json:"model"`
	ReasoningEffort api.Field[string] `json:"reasoningEffort"`
}

func (h *handlers) extractionGet(w http.ResponseWriter, r *http.Request) error {
	v, err := h.svc.ExtractionSettings(r.Context())
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

// extractionPut stores the System selection; null clears a field.
func (h *handlers) extractionPut(w http.ResponseWriter, r *http.Request) error {
	var b selectionBody
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return err
	}
	p := SelectionPatch{ClearModel: b.Model.Null, ClearReasoningEffort: b.ReasoningEffort.Null}
	if b.Model.Set && !b.Model.Null {
		p.Model = &b.Model.V
	}
	if b.ReasoningEffort.Set && !b.ReasoningEffort.Null {
		p.ReasoningEffort = &b.ReasoningEffort.V
	}
	v, err := h.svc.SetSelection(r.Context(), api.Actor(r), p)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (h *handlers) promptPut(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Text api.Field[string] `json:"text"`
	}
	if err := api.Decode(w, r, 256<<10, &b); err != nil {
		return err
	}
	if !b.Text.Set || b.Text.Null {
		return fmt.Errorf("%w: %s", api.ErrInvalidRequest, "text is required (blank text publishes the built-in guidance)")
	}
	v, err := h.svc.SaveGuidanceDraft(r.Context(), api.Actor(r), b.Text.V)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (h *handlers) promptPublish(w http.ResponseWriter, r *http.Request) error {
	v, err := h.svc.PublishGuidance(r.Context(), api.Actor(r))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (h *handlers) promptReset(w http.ResponseWriter, r *http.Request) error {
	v, err := h.svc.ResetGuidance(r.Context(), api.Actor(r))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

// admitPerson checks, before any memory is read or written, that the agent
// is declared (404 agent_not_found, as the settings routes answer) and that
// the caller's key may act for userId: a restricted key only for the person
// its identity policy allows, under the agent's fixed identity key.
func (h *handlers) admitPerson(ctx context.Context, agentID, userID string) error {
	if h.settings == nil || agentID == "" {
		return nil // the memory service reports a missing agentId
	}
	v, err := h.settings.Get(ctx, agentID)
	if err != nil {
		return err
	}
	p := identity.PolicyFrom(ctx)
	if !p.Restricted() {
		return nil
	}
	if v.Binding == nil {
		return fmt.Errorf("%w: agent %s has no fixed identity key, so a restricted key cannot reach its memory", identity.ErrForbidden, agentID)
	}
	return p.AdmitValue(v.Binding.IdentityKey, userID)
}

type activityEntry struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Subject string    `json:"subject"`
	Fields  []string  `json:"fields"`
}

// activityList shows the operator activity log, newest first, optionally for
// one subject ("agent:support", "system").
func (h *handlers) activityList(w http.ResponseWriter, r *http.Request) error {
	limit, err := api.QueryInt(r, "limit", 50, 1, 200)
	if err != nil {
		return err
	}
	rows, err := h.pool.Query(r.Context(), `
		SELECT id, at, actor, action, subject, fields FROM stackbone_platform.activity_log
		WHERE ($1 = '' OR subject = $1) ORDER BY id DESC LIMIT $2`, r.URL.Query().Get("subject"), limit)
	if err != nil {
		return fault.Hide(fmt.Errorf("%w: activity log", ErrUnavailable), err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[activityEntry])
	if err != nil {
		return fault.Hide(fmt.Errorf("%w: activity log", ErrUnavailable), err)
	}
	if list == nil {
		list = []activityEntry{}
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}
