package voice

import (
	"context"
	"time"

	"github.com/stackbone/box/identity"
)

// FrameDuration is the length of one audio frame both ways.
const FrameDuration = 20 * time.Millisecond

// Media is a call's audio path, from whatever transport carries it (RTP on
// a SIP call, WebRTC in a browser room). Frames are 20 ms of 16-bit mono PCM
// at SampleRate.
type Media interface {
	// SampleRate is the rate of PCM frames both ways (8000 for G.711).
	SampleRate() int
	// ReadFrame blocks for the next 20 ms of caller audio. It returns io.EOF
	// when the media ended (hang-up) and ErrMediaTimeout when no packet
	// arrived for the transport's media timeout.
	ReadFrame() ([]int16, error)
	// WriteFrame sends 20 ms of agent audio. The controller paces calls at
	// real time; WriteFrame must not block for long.
	WriteFrame(pcm []int16) error
}

// Controls are what the controller can ask of the transport.
type Controls interface {
	// Hangup ends the call from the box's side (BYE).
	Hangup(ctx context.Context) error
	// Transfer hands the call to target (SIP REFER); ErrNoTransfer where the
	// transport cannot.
	Transfer(ctx context.Context, target string) error
}

// Directions of a call.
const (
	Inbound  = "inbound"
	Outbound = "outbound"
	Browser  = "browser"
)

// CallInfo is what the transport knows when a call opens.
type CallInfo struct {
	// ID is the box's call id; empty lets Open choose one.
	ID        string
	Direction string
	Agent     string
	// PhoneNumber is the caller on inbound and the destination on outbound,
	// never the trunk's own number; "" for browser calls.
	PhoneNumber string
	// Identities are explicit identities (browser test calls).
	Identities identity.Set
	// Trunk names the SIP trunk, if any.
	Trunk string
}

// Outcomes of a call.
const (
	OutcomeCompleted    = "completed" // the agent or the caller ended a normal call
	OutcomeCallerHangup = "caller_hangup"
	OutcomeTransferred  = "transferred"
	OutcomeMediaTimeout = "media_timeout"
	OutcomeMaxDuration  = "max_duration"
	OutcomeCancelled    = "cancelled" // before answer
	OutcomeFailed       = "failed"
	OutcomeShutdown     = "shutdown"
	OutcomeNoAnswer     = "no_answer"
)
