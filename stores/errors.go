package stores

import (
	"fmt"
	"slices"

	"github.com/stackbone/box/fault"
)

// Errors of memory stores, each with its kind and the specification's code
// (package fault).
var (
	// ErrInvalidRequest: a field breaks a rule (limits, path rules, a write to
	// a learned or archived store, restoring a redacted version). A
	// *FieldError names the field. 400 invalid_request.
	ErrInvalidRequest = fault.New(fault.Invalid, "invalid_request", "stores: invalid request")
	// ErrNotFound: no such agent, store, memory or version. 404 not_found.
	ErrNotFound = fault.New(fault.NotFound, "not_found", "stores: not found")
	// ErrHashMismatch: the memory changed after the caller read it. 409
	// content_sha256_mismatch.
	ErrHashMismatch = fault.New(fault.Conflict, "content_sha256_mismatch", "stores: content_sha256 mismatch")
	// ErrPathExists: a live memory already has the path; create never
	// overwrites. 409 memory_path_exists.
	ErrPathExists = fault.New(fault.Conflict, "memory_path_exists", "stores: a memory already exists at that path")
	// ErrVersionCurrent: redact was asked for a memory's current content.
	// 409 memory_version_current.
	ErrVersionCurrent = fault.New(fault.Conflict, "memory_version_current", "stores: the version is the memory's current content")
	// ErrStoreFull: the store holds MaxMemories memories. 409
	// memory_limit_reached.
	ErrStoreFull = fault.New(fault.Conflict, "memory_limit_reached", "stores: the store holds the most memories allowed")
	// ErrUnavailable: the database failed. 503 unavailable.
	ErrUnavailable = fault.New(fault.Unavailable, "unavailable", "stores: unavailable")

	// ErrModel: the memory model could not be used or failed (learning).
	ErrModel = fault.New(fault.Upstream, "model_failed", "stores: model failed")
	// ErrInvalidModelOutput: the memory model's answer broke the protocol;
	// nothing was written (learning).
	ErrInvalidModelOutput = fault.New(fault.Upstream, "invalid_model_output", "stores: invalid model output")
	// ErrConflict: the learned memory changed while a learning run was
	// thinking; nothing was written and the run retries (learning).
	ErrConflict = fault.New(fault.Conflict, "conflict", "stores: conflict")
)

// FieldError is an invalid request about one field.
type FieldError struct {
	// Field is the request field, such as "content" or "memory_store_id".
	Field string
	// Reason says what is wrong, never echoing content.
	Reason string
}

func (e *FieldError) Error() string {
	return "stores: invalid request: " + e.Field + ": " + e.Reason
}

// Unwrap makes a FieldError match ErrInvalidRequest.
func (e *FieldError) Unwrap() error { return ErrInvalidRequest }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

func notFound(what string) error { return fmt.Errorf("%w: %s", ErrNotFound, what) }

// dbErr wraps a database failure as ErrUnavailable; the cause is kept for
// the log only (fault.Hide). An error that already is one of the package's
// passes through.
func dbErr(op string, err error) error {
	if own(err) != nil {
		return err
	}
	return fault.Hide(fmt.Errorf("%w: %s", ErrUnavailable, op), err)
}

// Code is the specification's error code for err, or "" when err is not
// one of the package's errors.
func Code(err error) string {
	if e := own(err); e != nil {
		return e.Code()
	}
	return ""
}

// sentinels are the package's own errors.
var sentinels = []*fault.Error{ErrInvalidRequest, ErrNotFound, ErrHashMismatch, ErrPathExists, ErrVersionCurrent,
	ErrStoreFull, ErrUnavailable, ErrModel, ErrInvalidModelOutput, ErrConflict}

// own is the package's error err carries, or nil when it carries none.
func own(err error) *fault.Error {
	if e := fault.Of(err); e != nil && slices.Contains(sentinels, e) {
		return e
	}
	return nil
}
