package stores

import (
	"errors"
	"fmt"
)

// Errors of memory stores. Each matches one error code of the specification;
// the HTTP edge maps them to statuses in one table (httpErrors).
var (
	// ErrInvalidRequest: a field breaks a rule (limits, path rules, a write to
	// a learned or archived store, restoring a redacted version). A
	// *FieldError names the field. 400 invalid_request.
	ErrInvalidRequest = errors.New("stores: invalid request")
	// ErrNotFound: no such agent, store, memory or version. 404 not_found.
	ErrNotFound = errors.New("stores: not found")
	// ErrHashMismatch: the memory changed after the caller read it. 409
	// content_sha256_mismatch.
	ErrHashMismatch = errors.New("stores: content_sha256 mismatch")
	// ErrPathExists: a live memory already has the path; create never
	// overwrites. 409 memory_path_exists.
	ErrPathExists = errors.New("stores: a memory already exists at that path")
	// ErrVersionCurrent: redact was asked for a memory's current content.
	// 409 memory_version_current.
	ErrVersionCurrent = errors.New("stores: the version is the memory's current content")
	// ErrStoreFull: the store holds MaxMemories memories. 409
	// memory_limit_reached.
	ErrStoreFull = errors.New("stores: the store holds the most memories allowed")
	// ErrUnavailable: the database failed. 503 unavailable.
	ErrUnavailable = errors.New("stores: unavailable")

	// ErrModel: the memory model could not be used or failed (learning).
	ErrModel = errors.New("stores: model failed")
	// ErrInvalidModelOutput: the memory model's answer broke the protocol;
	// nothing was written (learning).
	ErrInvalidModelOutput = errors.New("stores: invalid model output")
	// ErrConflict: the learned memory changed while a learning run was
	// thinking; nothing was written and the run retries (learning).
	ErrConflict = errors.New("stores: conflict")
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

// dbErr wraps a database failure; the cause is kept for logs (pgx error
// texts carry codes and constraint names, not values).
func dbErr(op string, err error) error {
	if errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrHashMismatch) ||
		errors.Is(err, ErrPathExists) || errors.Is(err, ErrVersionCurrent) || errors.Is(err, ErrStoreFull) ||
		errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConflict) {
		return err
	}
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, op, err)
}

// Code is the specification's error code for err, or "" when err is not
// one of the package's errors.
func Code(err error) string {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

var codes = []struct {
	err  error
	code string
}{
	{ErrInvalidRequest, "invalid_request"},
	{ErrNotFound, "not_found"},
	{ErrHashMismatch, "content_sha256_mismatch"},
	{ErrPathExists, "memory_path_exists"},
	{ErrVersionCurrent, "memory_version_current"},
	{ErrStoreFull, "memory_limit_reached"},
	{ErrUnavailable, "unavailable"},
	{ErrModel, "model_failed"},
	{ErrInvalidModelOutput, "invalid_model_output"},
	{ErrConflict, "conflict"},
}
