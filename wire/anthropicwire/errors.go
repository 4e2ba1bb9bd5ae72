package anthropicwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/wire"
)

// apiError is Anthropic's error object.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`

	status int // the kind's (api.Status)
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

// errorType is Anthropic's error type for each kind of error the wire
// answers.
func errorType(kind fault.Kind) string {
	switch kind {
	case fault.Invalid, fault.Conflict:
		return "invalid_request_error"
	case fault.Unauthenticated:
		return "authentication_error"
	case fault.Forbidden:
		return "permission_error"
	case fault.NotFound:
		return "not_found_error"
	case fault.TooLarge:
		return "request_too_large"
	case fault.Unavailable:
		return "overloaded_error"
	case fault.Timeout:
		return "timeout_error"
	}
	return "api_error"
}

func newError(kind fault.Kind, msg string) *apiError {
	return &apiError{Type: errorType(kind), Message: msg, status: api.Status(kind)}
}

// classify maps err to the wire's error. ok is false for an internal error.
func classify(err error) (e *apiError, ok bool) {
	var fe *fieldError
	if errors.As(err, &fe) {
		return newError(fault.Invalid, fe.msg), true
	}
	var de *wire.DecodeError
	if errors.As(err, &de) {
		switch de.Kind {
		case wire.DecodeType:
			return newError(fault.KindOf(de), fmt.Sprintf("%s: wrong type (%s)", de.Field, de.Value)), true
		case wire.DecodeUnknown:
			return newError(fault.KindOf(de), de.Field+": Extra inputs are not permitted"), true
		}
		return newError(fault.KindOf(de), de.Error()), true
	}
	te, ok := wire.Classify(err)
	e = newError(te.Kind, te.Message)
	e.final = te.Final
	return e, ok
}

// refusal turns the API's authentication refusal into this wire's error.
func refusal(rf *api.Refusal) *apiError {
	msg := rf.Message
	if rf.Kind == fault.Unauthenticated {
		msg = "send x-api-key or Authorization: Bearer with a valid API key (" + rf.Message + ")"
	}
	return newError(rf.Kind, msg)
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
