package wire

import (
	"context"
	"errors"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// TurnError is an error of a turn as the OpenAI and Anthropic wires answer
// it; each words it in its own shape (the Chat Completions and Responses
// error object, Anthropic's error types).
type TurnError struct {
	Kind fault.Kind
	// Status is the kind's (api.Status).
	Status int
	// Code is the box's code for the error (OpenAI's "code").
	Code    string
	Message string
	// Final: retrying cannot help (x-should-retry: false), though the
	// status alone would make the official clients retry.
	Final bool
}

// Errors of a request body a wire cannot read (DecodeError unwraps to
// one); each wire words them in its own shape.
var (
	// ErrInvalidRequest: a body that is not one JSON object of the wire's
	// shape (400).
	ErrInvalidRequest = fault.New(fault.Invalid, "invalid_request", "wire: invalid request")
	// ErrTooLarge: a body over the wire's limit (413).
	ErrTooLarge = fault.New(fault.TooLarge, "request_too_large", "wire: request too large")
)

// errTurnTimeout: the turn ran past the box's turn timeout.
var errTurnTimeout = fault.New(fault.Timeout, "timeout", "the turn took longer than the box allows")

// final are the errors retrying cannot help, though their status would
// make the official clients retry.
var final = []error{agent.ErrDecisionPending, agent.ErrNoDecisionPending, identity.ErrForbidden}

// Classify maps an error a turn ended with to its status (the kind's, as
// on every HTTP edge: api.Status), code and message. Messages are the
// error's own: packages keep database and provider internals out of them
// (fault.Hide). ok is false for an internal error (500, "internal error",
// nothing more).
func Classify(err error) (e TurnError, ok bool) {
	if errors.Is(err, context.DeadlineExceeded) && fault.Of(err) == nil {
		err = errTurnTimeout
	}
	f := fault.Of(err)
	if f == nil || f.Kind() == fault.Internal {
		return TurnError{Kind: fault.Internal, Status: api.Status(fault.Internal), Code: "internal_error", Message: "internal error"}, false
	}
	e = TurnError{Kind: f.Kind(), Status: api.Status(f.Kind()), Code: f.Code(), Message: err.Error()}
	for _, x := range final {
		e.Final = e.Final || errors.Is(err, x)
	}
	return e, true
}
