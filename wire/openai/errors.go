package openaiwire

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/wire"
)

// apiError is OpenAI's error object; Param and Code are null when empty.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`

	status int
	// final: retrying cannot help (x-should-retry: false), though the
	// status alone would make the official clients retry.
	final bool
}

// Status is the HTTP status of the error.
func (e *apiError) Status() int { return e.status }

type errorBody struct {
	Error *apiError `json:"error"`
}

func newError(status int, typ, code, param, msg string) *apiError {
	e := &apiError{Message: msg, Type: typ, status: status}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	return e
}

// runtimeErrors is the one table from the runtime's errors to this wire's
// status, type and code. Messages of 5xx errors are fixed (no internal
// detail), except provider failures, whose message says what failed (such
// as no provider being configured).
var runtimeErrors = []struct {
	err    error
	status int
	typ    string
	code   string
	msg    string
	final  bool
}{
	{agent.ErrUnknownAgent, http.StatusNotFound, "invalid_request_error", "model_not_found", "", false},
	{agent.ErrInvalidRequest, http.StatusBadRequest, "invalid_request_error", "invalid_request", "", false},
	{agent.ErrSessionBusy, http.StatusConflict, "invalid_request_error", "session_busy", "", false},
	{agent.ErrDecisionPending, http.StatusConflict, "invalid_request_error", "decision_pending", "", true},
	{agent.ErrNoDecisionPending, http.StatusConflict, "invalid_request_error", "no_decision_pending", "", true},
	{agent.ErrSessionNotFound, http.StatusNotFound, "invalid_request_error", "session_not_found", "", false},
	{agent.ErrProvider, http.StatusBadGateway, "server_error", "provider_error", "", false},
	{agent.ErrMemory, http.StatusServiceUnavailable, "server_error", "memory_unavailable", "memory storage is unavailable; the turn did not run without it", false},
	{agent.ErrStorage, http.StatusServiceUnavailable, "server_error", "storage_unavailable", "session storage is unavailable", false},
	{identity.ErrInvalid, http.StatusBadRequest, "invalid_request_error", "invalid_identities", "", false},
	{identity.ErrConflict, http.StatusBadRequest, "invalid_request_error", "invalid_identities", "", false},
	{wire.ErrBadHeaders, http.StatusBadRequest, "invalid_request_error", "invalid_headers", "", false},
}

// classify maps err to the wire's error. ok is false for an internal error.
func classify(err error) (e *apiError, ok bool) {
	var fe *fieldError
	if errors.As(err, &fe) {
		return newError(http.StatusBadRequest, "invalid_request_error", "", fe.param, fe.msg), true
	}
	var de *wire.DecodeError
	if errors.As(err, &de) {
		switch de.Kind {
		case wire.DecodeTooLarge:
			return newError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "", de.Error()), true
		case wire.DecodeType, wire.DecodeUnknown:
			return newError(http.StatusBadRequest, "invalid_request_error", "", de.Field, de.Error()), true
		}
		return newError(http.StatusBadRequest, "invalid_request_error", "", "", de.Error()), true
	}
	for _, row := range runtimeErrors {
		if errors.Is(err, row.err) {
			msg := row.msg
			if msg == "" {
				msg = err.Error()
			}
			e := newError(row.status, row.typ, row.code, "", msg)
			e.final = row.final
			if row.err == agent.ErrUnknownAgent {
				e.Param = ptr("model")
			}
			return e, true
		}
	}
	return newError(http.StatusInternalServerError, "server_error", "internal_error", "", "internal error"), false
}

// refusal turns the API's authentication refusal into this wire's error.
func refusal(rf *api.Refusal) *apiError {
	switch rf.Status {
	case http.StatusUnauthorized:
		return newError(rf.Status, "authentication_error", "invalid_api_key", "", rf.Message)
	case http.StatusForbidden:
		return newError(rf.Status, "permission_error", "insufficient_scope", "", rf.Message)
	}
	return newError(rf.Status, "server_error", rf.Code, "", rf.Message)
}

func writeError(w http.ResponseWriter, e *apiError) { e.Write(w) }

// Write answers the error.
func (e *apiError) Write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="stackbone"`)
	}
	if e.final {
		h.Set("x-should-retry", "false")
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: e})
}

func ptr[T any](v T) *T { return &v }
