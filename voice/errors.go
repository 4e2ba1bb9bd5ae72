package voice

import "errors"

// Errors of the voice package.
var (
	// ErrMediaTimeout: no caller audio arrived for the call's media timeout.
	ErrMediaTimeout = errors.New("voice: media timeout")
	// ErrNoTransfer: the transport cannot transfer this call.
	ErrNoTransfer = errors.New("voice: transfer not available")
	// ErrUnknownAgent: the call names no declared agent.
	ErrUnknownAgent = errors.New("voice: unknown agent")
	// ErrDraining: the box is stopping and takes no new calls.
	ErrDraining = errors.New("voice: the box is stopping")
	// ErrNotFound: no call with that id.
	ErrNotFound = errors.New("voice: call not found")
)
