package memory

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of person memory. Each matches one error code of the product
// specification; callers map them to HTTP statuses at the edge.
var (
	// ErrInvalidRequest: a required field or call metadata value is invalid.
	ErrInvalidRequest = errors.New("memory: invalid request")
	// ErrModelFailed: the model provider rejected or failed the request.
	ErrModelFailed = errors.New("memory: model failed")
	// ErrInvalidModelOutput: the model answered something other than valid,
	// bounded memory JSON. Nothing was written.
	ErrInvalidModelOutput = errors.New("memory: invalid model output")
	// ErrConflict: the person's memory changed (another add or an erasure)
	// while the model request was in flight. Nothing was written.
	ErrConflict = errors.New("memory: conflict")
	// ErrPersistFailed: the transactional write failed.
	ErrPersistFailed = errors.New("memory: persist failed")
	// ErrSchemaMissing: the memory migration has not been applied.
	ErrSchemaMissing = errors.New("memory: schema missing")
	// ErrUnavailable: a recall, erasure or settings read failed in the database.
	ErrUnavailable = errors.New("memory: unavailable")

	// ErrUnknownAgent: the settings routes name an agent the box does not declare.
	ErrUnknownAgent = errors.New("memory: unknown agent")
	// ErrIdentityKeyFixed: a different identity key was already fixed for the agent.
	ErrIdentityKeyFixed = errors.New("memory: identity key is fixed")
)

// Code returns the specification's error code for err, or "" if err is not a
// memory error.
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
	{ErrInvalidRequest, "memory_invalid_request"},
	{ErrModelFailed, "memory_model_failed"},
	{ErrInvalidModelOutput, "memory_invalid_model_output"},
	{ErrConflict, "memory_conflict"},
	{ErrPersistFailed, "memory_persist_failed"},
	{ErrSchemaMissing, "memory_schema_missing"},
	{ErrUnavailable, "memory_unavailable"},
	{ErrUnknownAgent, "agent_not_found"},
	{ErrIdentityKeyFixed, "memory_identity_key_fixed"},
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
}

func badOutput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidModelOutput, fmt.Sprintf(format, args...))
}

// dbError classifies a database error: a missing table or schema means the
// migration is missing; anything else becomes kind.
func dbError(kind error, op string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") {
		return fmt.Errorf("%w: %s: apply migrations with `stackbone migrate`", ErrSchemaMissing, op)
	}
	return fmt.Errorf("%w: %s: %v", kind, op, err)
}
