// Package fault is the box's one vocabulary of error kinds. Each domain
// package declares its sentinel errors with New, giving each a kind (what
// went wrong, in words every edge understands) and a stable code (what a
// client matches on); each edge maps kinds to its own answers in one table:
// HTTP statuses in package api, each text wire's error shape in package
// wire, SIP responses in package sip.
//
//	var ErrNotFound = fault.New(fault.NotFound, "not_found", "stores: not found")
//	return fmt.Errorf("%w: memory %s", ErrNotFound, id) // still ErrNotFound, kind NotFound
//
// An error with no fault in its chain is Internal: the edge logs it and
// answers without detail.
package fault

import "errors"

// Kind is what went wrong, as every edge understands it.
type Kind uint8

// The kinds. An edge maps each to one answer (HTTP 400, 404, ...).
const (
	// Internal: a bug or an unexpected failure. Answered without detail.
	Internal Kind = iota
	// Invalid: the request breaks a rule (a field, a limit, a format).
	Invalid
	// NotFound: what the request names does not exist (or is not the
	// caller's to see).
	NotFound
	// Conflict: the request contradicts the current state (a version
	// changed, a name is taken, a decision is pending).
	Conflict
	// Unauthenticated: no credentials, or ones the box does not accept.
	Unauthenticated
	// Forbidden: the caller may not do this (an identity its key does not
	// allow).
	Forbidden
	// TooLarge: the request or its file is over a size limit.
	TooLarge
	// Unsupported: a media type or format the box does not take.
	Unsupported
	// Unprocessable: well-formed, but its content cannot be used (a file
	// that does not parse).
	Unprocessable
	// Unavailable: the box cannot serve this now (its database, a store,
	// draining, at capacity, not configured); retrying later may help.
	Unavailable
	// Upstream: a provider outside the box (a model, a trunk) failed.
	Upstream
	// Timeout: a provider or the work itself ran out of time.
	Timeout
)

var kindNames = [...]string{"internal", "invalid", "not_found", "conflict", "unauthenticated", "forbidden",
	"too_large", "unsupported", "unprocessable", "unavailable", "upstream", "timeout"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "internal"
}

// Error is a sentinel of a domain package: a kind, a code and a message
// prefixed with the package's name. Wrap it with fmt.Errorf("%w: ...") to
// add detail; errors.Is still matches the sentinel.
type Error struct {
	kind Kind
	code string
	msg  string
}

// New declares a sentinel error.
func New(kind Kind, code, msg string) *Error { return &Error{kind: kind, code: code, msg: msg} }

func (e *Error) Error() string { return e.msg }

// Kind is the error's kind.
func (e *Error) Kind() Kind { return e.kind }

// Code is the error's stable code for clients.
func (e *Error) Code() string { return e.code }

// Of returns the first sentinel in err's chain, or nil when err has none
// (an internal error).
func Of(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// KindOf is the kind of err: its first sentinel's, else Internal.
func KindOf(err error) Kind {
	if e := Of(err); e != nil {
		return e.kind
	}
	return Internal
}

// Code is the code of err's first sentinel, or "" for an internal error.
func Code(err error) string {
	if e := Of(err); e != nil {
		return e.code
	}
	return ""
}

// Hide returns an error that reads as public (what a client may be told,
// wrapping a sentinel) and keeps cause (a database error, an OS error with
// paths) for the log only: Cause finds it, the message never shows it.
func Hide(public, cause error) error { return &hidden{public: public, cause: cause} }

type hidden struct {
	public error
	cause  error
}

func (h *hidden) Error() string { return h.public.Error() }

// Unwrap matches the public error first (its sentinel gives the kind and
// code), then the cause (errors.Is(err, context.Canceled) still holds).
func (h *hidden) Unwrap() []error { return []error{h.public, h.cause} }

// Cause is the hidden cause of err (see Hide), or nil.
func Cause(err error) error {
	var h *hidden
	if errors.As(err, &h) {
		return h.cause
	}
	return nil
}

// Recode returns err with the kind and code of sentinel and err's own
// message: a rule broken in a request body ("agentId is required") reported
// as the sentinel of the route's package.
func Recode(sentinel *Error, err error) error { return &recoded{sentinel: sentinel, err: err} }

type recoded struct {
	sentinel *Error
	err      error
}

func (r *recoded) Error() string { return r.err.Error() }

// Unwrap matches the sentinel first (its kind and code win), then err's
// own chain.
func (r *recoded) Unwrap() []error { return []error{r.sentinel, r.err} }
