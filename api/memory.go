package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/memory"
)

// maxMemoryBody bounds add bodies: a 200,000-character transcript with JSON
// escaping fits comfortably.
const maxMemoryBody = 4 << 20

// field is a JSON member that records whether it was present and whether it
// was null, so a route can tell "omitted" from "null" from a value.
type field[T any] struct {
	Set  bool
	Null bool
	V    T
}

func (f *field[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		f.Null = true
		return nil
	}
	// Nested objects are as strict as the body: unknown members are errors.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(&f.V)
}

// value returns a pointer to the value, nil when omitted; null is an error
// for fields that must not be null.
func (f field[T]) value(name string) (*T, error) {
	if !f.Set {
		return nil, nil
	}
	if f.Null {
		return nil, fmt.Errorf("%s must not be null", name)
	}
	v := f.V
	return &v, nil
}

type addBody struct {
	Content         json.RawMessage `json:"content"`
	AgentID         field[string]   `json:"agentId"`
	UserID          field[string]   `json:"userId"`
	Call            field[callBody] `json:"call"`
	Instructions    field[string]   `json:"instructions"`
	Model           field[string]   `json:"model"`
	ReasoningEffort field[string]   `json:"reasoningEffort"`
}

type callBody struct {
	StartedAt       field[string]  `json:"startedAt"`
	DurationSeconds field[float64] `json:"durationSeconds"`
	Outcome         field[string]  `json:"outcome"`
	RunID           field[string]  `json:"runId"`
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

func (s *Server) memoryAdd(w http.ResponseWriter, r *http.Request) {
	var b addBody
	if err := decode(w, r, maxMemoryBody, &b); err != nil {
		writeError(w, http.StatusBadRequest, "memory_invalid_request", err.Error())
		return
	}
	req, err := b.request()
	if err != nil {
		writeError(w, http.StatusBadRequest, "memory_invalid_request", err.Error())
		return
	}
	// A retried add with the same Idempotency-Key returns the first result.
	req.IdempotencyKey = r.Header.Get("Idempotency-Key")
	if err := s.admitPerson(r.Context(), req.AgentID, req.UserID); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Memory.Add(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, res)
}

func (b addBody) request() (memory.AddRequest, error) {
	var req memory.AddRequest
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
	if req.Instructions, err = b.Instructions.value("instructions"); err != nil {
		return req, err
	}
	if req.Instructions != nil && *req.Instructions == "" {
		return req, fmt.Errorf("instructions must be 1 to %d characters", memory.MaxInstructionsChars)
	}
	if m, err := b.Model.value("model"); err != nil {
		return req, err
	} else if m != nil {
		req.Model = *m
	}
	if e, err := b.ReasoningEffort.value("reasoningEffort"); err != nil {
		return req, err
	} else if e != nil {
		req.ReasoningEffort = *e
	}
	if b.Call.Set && !b.Call.Null {
		c := b.Call.V
		if st, err := c.StartedAt.value("call.startedAt"); err != nil {
			return req, err
		} else if st != nil {
			t, err := time.Parse(time.RFC3339Nano, *st)
			if err != nil {
				return req, fmt.Errorf("call.startedAt must be an RFC 3339 timestamp such as 2026-10-26T09:00:00.000Z")
			}
			req.Call.StartedAt = &t
		}
		if req.Call.DurationSeconds, err = c.DurationSeconds.value("call.durationSeconds"); err != nil {
			return req, err
		}
		if req.Call.Outcome, err = c.Outcome.value("call.outcome"); err != nil {
			return req, err
		}
		if req.Call.RunID, err = c.RunID.value("call.runId"); err != nil {
			return req, err
		}
	}
	return req, nil
}

func requiredString(f field[string], name string) (string, error) {
	if !f.Set || f.Null || f.V == "" {
		return "", fmt.Errorf("%s is required", name)
	}
	return f.V, nil
}

// transcript reads content: a string, or an array of chat messages whose
// content is a string, null, or an array of parts (text parts are kept).
func transcript(raw json.RawMessage) (memory.Transcript, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return memory.Transcript{}, fmt.Errorf("content is required: a transcript string or an array of messages")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return memory.Transcript{}, fmt.Errorf("content is not a valid string")
		}
		return memory.Transcript{Text: s}, nil
	case '[':
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var msgs []messageBody
		if err := dec.Decode(&msgs); err != nil {
			return memory.Transcript{}, fmt.Errorf("content must be an array of {role, content} messages: %s", describeDecode(err, maxMemoryBody))
		}
		out := make([]memory.Message, 0, len(msgs))
		for i, m := range msgs {
			text, err := messageText(m.Content)
			if err != nil {
				return memory.Transcript{}, fmt.Errorf("content[%d].content %v", i, err)
			}
			out = append(out, memory.Message{Role: m.Role, Content: text})
		}
		return memory.Transcript{Messages: out}, nil
	}
	return memory.Transcript{}, fmt.Errorf("content must be a transcript string or an array of messages")
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
	AgentID field[string] `json:"agentId"`
	UserID  field[string] `json:"userId"`
	Calls   field[int]    `json:"calls"`
}

func (s *Server) memoryRecall(w http.ResponseWriter, r *http.Request) {
	var b scopeBody
	if err := decode(w, r, 64<<10, &b); err != nil {
		writeError(w, http.StatusBadRequest, "memory_invalid_request", err.Error())
		return
	}
	req := memory.RecallRequest{AgentID: b.AgentID.V, UserID: b.UserID.V}
	calls, err := b.Calls.value("calls")
	if err != nil {
		writeError(w, http.StatusBadRequest, "memory_invalid_request", err.Error())
		return
	}
	req.Calls = calls
	if err := s.admitPerson(r.Context(), req.AgentID, req.UserID); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.cfg.Memory.Recall(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, res)
}

func (s *Server) memoryDeleteAll(w http.ResponseWriter, r *http.Request) {
	var b struct {
		AgentID field[string] `json:"agentId"`
		UserID  field[string] `json:"userId"`
	}
	if err := decode(w, r, 64<<10, &b); err != nil {
		writeError(w, http.StatusBadRequest, "memory_invalid_request", err.Error())
		return
	}
	if err := s.admitPerson(r.Context(), b.AgentID.V, b.UserID.V); err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.cfg.Memory.DeleteAll(r.Context(), b.AgentID.V, b.UserID.V)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]int64{"deleted": n})
}

type settingsBody struct {
	Read         field[bool]   `json:"read"`
	Save         field[bool]   `json:"save"`
	Instructions field[string] `json:"instructions"`
	IdentityKey  field[string] `json:"identityKey"`
}

func (s *Server) settingsGet(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Settings.Get(r.Context(), r.PathValue("agentId"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) settingsPut(w http.ResponseWriter, r *http.Request) {
	var b settingsBody
	if err := decode(w, r, 256<<10, &b); err != nil {
		writeError(w, http.StatusBadRequest, "memory_invalid_request", err.Error())
		return
	}
	var p memory.Patch
	var err error
	for _, step := range []func() error{
		func() error { p.Read, err = b.Read.value("read"); return err },
		func() error { p.Save, err = b.Save.value("save"); return err },
		func() error { p.Instructions, err = b.Instructions.value("instructions"); return err },
		func() error { p.IdentityKey, err = b.IdentityKey.value("identityKey"); return err },
	} {
		if err := step(); err != nil {
			writeError(w, http.StatusBadRequest, "memory_invalid_request", err.Error()+"; use DELETE to reset a field")
			return
		}
	}
	v, err := s.cfg.Settings.Put(r.Context(), actor(r), r.PathValue("agentId"), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) settingsDelete(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	field := ""
	if q.Has("field") {
		field = q.Get("field")
		if field == "" {
			writeError(w, http.StatusBadRequest, "memory_invalid_request", "field must be read, save or instructions")
			return
		}
	}
	v, err := s.cfg.Settings.Reset(r.Context(), actor(r), r.PathValue("agentId"), field)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

type selectionBody struct {
	Model           field[string] `json:"model"`
	ReasoningEffort field[string] `json:"reasoningEffort"`
}

func (s *Server) extractionGet(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Memory.ExtractionSettings(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

// extractionPut stores the System selection; null clears a field.
func (s *Server) extractionPut(w http.ResponseWriter, r *http.Request) {
	var b selectionBody
	if err := decode(w, r, 64<<10, &b); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	p := memory.SelectionPatch{ClearModel: b.Model.Null, ClearReasoningEffort: b.ReasoningEffort.Null}
	if b.Model.Set && !b.Model.Null {
		p.Model = &b.Model.V
	}
	if b.ReasoningEffort.Set && !b.ReasoningEffort.Null {
		p.ReasoningEffort = &b.ReasoningEffort.V
	}
	v, err := s.cfg.Memory.SetSelection(r.Context(), actor(r), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) promptPut(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Text field[string] `json:"text"`
	}
	if err := decode(w, r, 256<<10, &b); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if !b.Text.Set || b.Text.Null {
		writeError(w, http.StatusBadRequest, "invalid_request", "text is required (blank text publishes the built-in guidance)")
		return
	}
	v, err := s.cfg.Memory.SaveGuidanceDraft(r.Context(), actor(r), b.Text.V)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) promptPublish(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Memory.PublishGuidance(r.Context(), actor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func (s *Server) promptReset(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Memory.ResetGuidance(r.Context(), actor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, v)
}

func queryInt(r *http.Request, name string, def, min, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%s must be an integer from %d to %d", name, min, max)
	}
	return n, nil
}

// admitPerson checks, before any memory is read or written, that the agent
// is declared (404 agent_not_found, as the settings routes answer) and that
// the caller's key may act for userId: a restricted key only for the person
// its identity policy allows, under the agent's fixed identity key.
func (s *Server) admitPerson(ctx context.Context, agentID, userID string) error {
	if s.cfg.Settings == nil || agentID == "" {
		return nil // the memory service reports a missing agentId
	}
	v, err := s.cfg.Settings.Get(ctx, agentID)
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
