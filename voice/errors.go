package voice

import "github.com/stackbone/box/fault"

// Errors of the voice package, with their kinds and codes (package fault).
var (
	// ErrMediaTimeout: no caller audio arrived for the call's media timeout.
	ErrMediaTimeout = fault.New(fault.Timeout, "media_timeout", "voice: media timeout")
	// ErrNoTransfer: the transport cannot transfer this call.
	ErrNoTransfer = fault.New(fault.Unavailable, "transfer_unavailable", "voice: transfer not available")
	// ErrNoKeypad: the call's line cannot carry keypad tones (no RFC 4733
	// telephone-event negotiated, or a browser call).
	ErrNoKeypad = fault.New(fault.Unavailable, "keypad_unavailable", "voice: keypad tones not available on this call")
	// ErrBadDigits: keypad digits other than 0-9, *, #, A-D and w (a pause).
	ErrBadDigits = fault.New(fault.Invalid, "bad_digits", "voice: keypad digits are 0-9, *, #, A-D and w")
	// ErrUnknownAgent: the call names no declared agent.
	ErrUnknownAgent = fault.New(fault.NotFound, "agent_not_found", "voice: unknown agent")
	// ErrDraining: the box is stopping and takes no new calls.
	ErrDraining = fault.New(fault.Unavailable, "unavailable", "voice: the box is stopping")
	// ErrSpeechStream: the call's streaming transcription ended; its turns
	// go on with one request per utterance.
	ErrSpeechStream = fault.New(fault.Unavailable, "speech_stream_ended", "voice: the speech-to-text stream ended")
	// ErrNotFound: no call with that id.
	ErrNotFound = fault.New(fault.NotFound, "call_not_found", "voice: call not found")
	// ErrCallExists: a call with the id asked for is recorded already
	// (a campaign's attempt dialled before its box died).
	ErrCallExists = fault.New(fault.Conflict, "call_exists", "voice: a call with this id exists")
	// ErrCallEnded: the call has already ended.
	ErrCallEnded = fault.New(fault.Conflict, "call_ended", "voice: the call has ended")
	// ErrInvalidRequest: a calls query breaks a rule.
	ErrInvalidRequest = fault.New(fault.Invalid, "voice_invalid_request", "voice: invalid request")
	// ErrUnavailable: the calls table could not be read.
	ErrUnavailable = fault.New(fault.Unavailable, "unavailable", "voice: the calls table is unavailable")
	// ErrSTTFailed: the live speech-to-text provider refused the stream or
	// reported an error on it.
	ErrSTTFailed = fault.New(fault.Upstream, "stt_failed", "voice: live speech-to-text failed")
	// ErrSTTUnavailable: the live speech-to-text stream could not be opened,
	// dropped, or is closed.
	ErrSTTUnavailable = fault.New(fault.Unavailable, "stt_unavailable", "voice: live speech-to-text unavailable")
	// ErrSTTTimeout: the live speech-to-text provider did not connect,
	// take audio or answer in time.
	ErrSTTTimeout = fault.New(fault.Timeout, "stt_timeout", "voice: live speech-to-text timed out")
	// ErrSTTOverflow: caller audio arrived faster than the provider took
	// it and the send queue filled; the stream failed rather than hold the
	// media path.
	ErrSTTOverflow = fault.New(fault.Unavailable, "stt_overflow", "voice: live speech-to-text fell behind")
)
