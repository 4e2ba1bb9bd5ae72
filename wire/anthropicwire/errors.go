package anthropicwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/stackbone/box/api"
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
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	return "api_error"
}

func newError(status int, msg string) *apiError {
	return &apiError{Type: errorType(status), Message: msg, status: status}
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
	te, ok := wire.Classify(err)
	e = newError(te.Status, te.Message)
	e.final = te.Final
	return e, ok
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
