package rooms

import "github.com/stackbone/box/fault"

// Errors of the rooms package, with their kinds and codes (package fault).
var (
	// ErrInvalidRequest: a rooms request breaks a rule.
	ErrInvalidRequest = fault.New(fault.Invalid, "rooms_invalid_request", "rooms: invalid request")
	// ErrNotFound: no room with that id.
	ErrNotFound = fault.New(fault.NotFound, "room_not_found", "rooms: room not found")
	// ErrAtCapacity: the box has its maximum number of rooms open.
	ErrAtCapacity = fault.New(fault.Unavailable, "rooms_at_capacity", "rooms: at room capacity")
	// ErrWrongBackend: the request needs the other backend (an SDP offer
	// to a LiveKit room).
	ErrWrongBackend = fault.New(fault.Conflict, "rooms_wrong_backend", "rooms: not available on this backend")
	// ErrAlreadyJoined: the room's browser already joined.
	ErrAlreadyJoined = fault.New(fault.Conflict, "rooms_already_joined", "rooms: the browser already joined")
	// ErrEnded: the room has ended.
	ErrEnded = fault.New(fault.Conflict, "room_ended", "rooms: the room has ended")
	// ErrBadOffer: the SDP offer could not be answered (no audio, no codec
	// in common, malformed).
	ErrBadOffer = fault.New(fault.Invalid, "rooms_invalid_request", "rooms: unusable SDP offer")
	// ErrBackend: the media backend (LiveKit) failed.
	ErrBackend = fault.New(fault.Upstream, "rooms_backend_failed", "rooms: media backend failed")
	// ErrClosed: the service is shutting down.
	ErrClosed = fault.New(fault.Unavailable, "unavailable", "rooms: shutting down")
)
