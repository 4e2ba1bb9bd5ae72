package voice

import "errors"

// Errors of the voice package.
var (
	// ErrMediaTimeout: no media arrived for the transport's media timeout.
	ErrMediaTimeout = errors.New("voice: media timeout")
	// ErrNoTransfer: the transport cannot transfer this call.
	ErrNoTransfer = errors.New("voice: transfer not available")
	// ErrUnknownAgent: the call names no declared agent.
	ErrUnknownAgent = errors.New("voice: unknown agent")
	// ErrAtCapacity: the box carries its maximum number of calls.
	ErrAtCapacity = errors.New("voice: at call capacity")
	// ErrNotFound: no call with that id.
	ErrNotFound = errors.New("voice: call not found")
	// ErrInvalidDial: an outbound call request names a bad number or trunk.
	ErrInvalidDial = errors.New("voice: invalid dial request")
	// ErrNoTrunk: no outbound trunk can carry the call.
	ErrNoTrunk = errors.New("voice: no outbound trunk")
)
