package anthropicwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/wire"
)

// apiError is Anthropic's error object.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`

	status int
	// final: retrying cannot help (x-should-retry: false), though the
	// status alone would make the official clients retry.
	final bool
}

// Status is the HTTP status of the error.
func (e *apiError) Status() int { return e.status }

type errorBody struct {
	Type  string    `json:"type"` // "error"
	Error *apiError `json:"error"`
}

// errorType is Anthropic's error type for each status the wire answers.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusConflict:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	return "api_error"
}

func newError(status int, msg string) *apiError {
	return &apiError{Type: errorType(status), Message: msg, status: status}
}

// runtimeErrors is the one table from the runtime's errors to this wire's
// status. Messages of 5xx errors are fixed (no internal detail), except
// provider failures, whose message says what failed (such as no provider
// being configured); 409s say why in the message, as Anthropic's error
// types have no conflict.
var runtimeErrors = []struct {
	err    error
	status int
	msg    string
	final  bool
}{
	{agent.ErrUnknownAgent, http.StatusNotFound, "", false},
	{agent.ErrInvalidRequest, http.StatusBadRequest, "", false},
	{agent.ErrSessionBusy, http.StatusConflict, "session busy: another turn on this session is running", false},
	{agent.ErrDecisionPending, http.StatusConflict, "decision pending: a held tool on this session waits for a person's decision", true},
	{agent.ErrNoDecisionPending, http.StatusConflict, "", true},
	{agent.ErrSessionNotFound, http.StatusNotFound, "", false},
	{agent.ErrProvider, http.StatusBadGateway, "", false},
	{agent.ErrMemory, http.StatusServiceUnavailable, "memory storage is unavailable; the turn did not run without it", false},
	{agent.ErrStorage, http.StatusServiceUnavailable, "session storage is unavailable", false},
	{identity.ErrInvalid, http.StatusBadRequest, "", false},
	{identity.ErrConflict, http.StatusBadRequest, "", false},
	{wire.ErrBadHeaders, http.StatusBadRequest, "", false},
}

// classify maps err to the wire's error. ok is false for an internal error.
func classify(err error) (e *apiError, ok bool) {
	var fe *fieldError
	if errors.As(err, &fe) {
		return newError(http.StatusBadRequest, fe.msg), true
	}
	var de *wire.DecodeError
	if errors.As(err, &de) {
		switch de.Kind {
		case wire.DecodeTooLarge:
			return newError(http.StatusRequestEntityTooLarge, de.Error()), true
		case wire.DecodeType:
			return newError(http.StatusBadRequest, fmt.Sprintf("%s: wrong type (%s)", de.Field, de.Value)), true
		case wire.DecodeUnknown:
			return newError(http.StatusBadRequest, de.Field+": Extra inputs are not permitted"), true
		}
		return newError(http.StatusBadRequest, de.Error()), true
	}
	for _, row := range runtimeErrors {
		if errors.Is(err, row.err) {
			msg := row.msg
			if msg == "" {
				msg = err.Error()
			}
			e := newError(row.status, msg)
			e.final = row.final
			return e, true
		}
	}
	return newError(http.StatusInternalServerError, "internal error"), false
}

// refusal turns the API's authentication refusal into this wire's error.
func refusal(rf *api.Refusal) *apiError {
	msg := rf.Message
	if rf.Status == http.StatusUnauthorized {
		msg = "send x-api-key or Authorization: Bearer with a valid API key (" + rf.Message + ")"
	}
	return newError(rf.Status, msg)
}

// Write answers the error.
func (e *apiError) Write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.final {
		h.Set("x-should-retry", "false")
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(errorBody{Type: "error", Error: e})
}
