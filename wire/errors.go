package wire

import (
	"context"
	"errors"
	"net/http"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/identity"
)

// TurnError is an error of a turn as the OpenAI and Anthropic wires answer
// it; each words it in its own shape (the Chat Completions and Responses
// error object, Anthropic's error types).
type TurnError struct {
	Status int
	// Code is the box's code for the error (OpenAI's "code").
	Code    string
	Message string
	// Final: retrying cannot help (x-should-retry: false), though the
	// status alone would make the official clients retry.
	Final bool
}

// turnErrors is the one table from the errors a turn can end with (the
// runtime's, the identities', the box's headers') to statuses and codes.
// Messages of 5xx errors are fixed (no internal detail), except provider
// failures, whose message says what failed (such as no provider being
// configured).
var turnErrors = []struct {
	err    error
	status int
	code   string
	msg    string
	final  bool
}{
	{agent.ErrUnknownAgent, http.StatusNotFound, "model_not_found", "", false},
	{agent.ErrInvalidRequest, http.StatusBadRequest, "invalid_request", "", false},
	{agent.ErrSessionBusy, http.StatusConflict, "session_busy", "", false},
	{agent.ErrDecisionPending, http.StatusConflict, "decision_pending", "", true},
	{agent.ErrNoDecisionPending, http.StatusConflict, "no_decision_pending", "", true},
	{agent.ErrSessionNotFound, http.StatusNotFound, "session_not_found", "", false},
	{agent.ErrProviderTimeout, http.StatusGatewayTimeout, "provider_timeout", "", false},
	{agent.ErrProvider, http.StatusBadGateway, "provider_error", "", false},
	{agent.ErrMemory, http.StatusServiceUnavailable, "memory_unavailable", "memory storage is unavailable; the turn did not run without it", false},
	{agent.ErrStorage, http.StatusServiceUnavailable, "storage_unavailable", "session storage is unavailable", false},
	{identity.ErrInvalid, http.StatusBadRequest, "invalid_identities", "", false},
	{identity.ErrConflict, http.StatusBadRequest, "invalid_identities", "", false},
	{identity.ErrForbidden, http.StatusForbidden, "identity_forbidden", "", true},
	{ErrBadHeaders, http.StatusBadRequest, "invalid_headers", "", false},
	{context.DeadlineExceeded, http.StatusGatewayTimeout, "timeout", "the turn took longer than the box allows", false},
}

// Classify maps an error a turn ended with to its status and code. ok is
// false for an internal error (500, "internal error", nothing more).
func Classify(err error) (e TurnError, ok bool) {
	for _, row := range turnErrors {
		if errors.Is(err, row.err) {
			msg := row.msg
			if msg == "" {
				msg = err.Error()
			}
			return TurnError{Status: row.status, Code: row.code, Message: msg, Final: row.final}, true
		}
	}
	return TurnError{Status: http.StatusInternalServerError, Code: "internal_error", Message: "internal error"}, false
}
