package rooms

import "errors"

// Errors of the rooms package. The HTTP edge maps them to statuses in one
// table (statusOf).
var (
	// ErrNotFound: no room with that id.
	ErrNotFound = errors.New("rooms: room not found")
	// ErrAtCapacity: the box has its maximum number of rooms open.
	ErrAtCapacity = errors.New("rooms: at room capacity")
	// ErrWrongBackend: the request needs the other backend (an SDP offer
	// to a LiveKit room).
	ErrWrongBackend = errors.New("rooms: not available on this backend")
	// ErrAlreadyJoined: the room's browser already joined.
	ErrAlreadyJoined = errors.New("rooms: the browser already joined")
	// ErrEnded: the room has ended.
	ErrEnded = errors.New("rooms: the room has ended")
	// ErrBadOffer: the SDP offer could not be answered (no audio, no codec
	// in common, malformed).
	ErrBadOffer = errors.New("rooms: unusable SDP offer")
	// ErrBackend: the media backend (LiveKit) failed.
	ErrBackend = errors.New("rooms: media backend failed")
	// ErrClosed: the service is shutting down.
	ErrClosed = errors.New("rooms: shutting down")
)
