package memory

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stackbone/box/fault"
)

// Errors of person memory, each with its kind and the product
// specification's code (package fault); the edges map kinds to answers.
var (
	// ErrInvalidRequest: a required field or call metadata value is invalid.
	ErrInvalidRequest = fault.New(fault.Invalid, "memory_invalid_request", "memory: invalid request")
	// ErrModelFailed: the model provider rejected or failed the request.
	ErrModelFailed = fault.New(fault.Upstream, "memory_model_failed", "memory: model failed")
	// ErrInvalidModelOutput: the model answered something other than valid,
	// bounded memory JSON. Nothing was written.
	ErrInvalidModelOutput = fault.New(fault.Upstream, "memory_invalid_model_output", "memory: invalid model output")
	// ErrConflict: the person's memory changed (another add or an erasure)
	// while the model request was in flight. Nothing was written.
	ErrConflict = fault.New(fault.Conflict, "memory_conflict", "memory: conflict")
	// ErrPersistFailed: the transactional write failed.
	ErrPersistFailed = fault.New(fault.Internal, "memory_persist_failed", "memory: persist failed")
	// ErrSchemaMissing: the memory migration has not been applied.
	ErrSchemaMissing = fault.New(fault.Unavailable, "memory_schema_missing", "memory: schema missing")
	// ErrUnavailable: a recall, erasure or settings read failed in the database.
	ErrUnavailable = fault.New(fault.Unavailable, "memory_unavailable", "memory: unavailable")

	// ErrUnknownAgent: the settings routes name an agent the box does not declare.
	ErrUnknownAgent = fault.New(fault.NotFound, "agent_not_found", "memory: unknown agent")
	// ErrIdentityKeyFixed: a different identity key was already fixed for the agent.
	ErrIdentityKeyFixed = fault.New(fault.Conflict, "memory_identity_key_fixed", "memory: identity key is fixed")
)

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
