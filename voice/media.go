package voice

import (
	"context"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/internal/pace"
)

// FrameDuration is the length of one audio frame both ways.
const FrameDuration = 20 * time.Millisecond

// Clock is the controller's time: the real clock in the box, a mock
// (clock.NewMock) in tests.
type Clock = clock.Clock

// Transport is what carries a call's audio out and ends it on the
// transport's side (the SIP dialog, the browser's peer). Caller audio comes
// the other way through Call.Hear.
type Transport interface {
	// WriteFrame sends 20 ms of agent audio (16-bit mono PCM at the call's
	// SampleRate). The controller paces calls at real time; WriteFrame must
	// not block for long.
	WriteFrame(pcm []int16) error
	// Hangup ends the call on the transport's side (BYE, the browser's peer
	// goes away). The controller calls it once the call ended, whoever
	// reported the end; it must be safe to call after the other side left.
	Hangup(ctx context.Context) error
	// Transfer hands the call to target (SIP REFER) and returns once the
	// other side took it; ErrNoTransfer where the transport cannot.
	Transfer(ctx context.Context, target string) error
}

// Talkspurter is a Transport that is told when the agent's speech starts
// after silence, ahead of the 20 ms schedule (see package pace): the next
// frame begins a talkspurt, which a transport with RTP marks (marker bit)
// and stamps with the time that really passed since the previous packet,
// so a receiver sees a new talkspurt and not a packet out of time.
type Talkspurter interface {
	Talkspurt()
}

// Batcher is a Transport whose frames are queued and leave with the other
// calls' frames due at the same moment, in one system call, when the
// pacer's round ends (Batch is what flushes them; nil when nothing
// batches this call's frames).
type Batcher interface {
	Batch() pace.Flusher
}

// SharedReader is a Transport whose caller packets are read by a reader
// that carries other calls' too (a shared port's socket). ReadBy says
// whether that reader has read and handed on every packet that arrived by
// t: a caller frame missing at its time is heard as silence only then,
// since an overloaded reader's packets wait in the socket behind other
// calls' and are late, not missing.
type SharedReader interface {
	ReadBy(t time.Time) bool
}

// Keypad is a Transport that can press keys on the line: RFC 4733
// telephone-events sent in place of the agent's audio frames, on the
// call's 20 ms schedule.
type Keypad interface {
	// SendDigits sends digits (0-9, *, #, A-D; w is a 500 ms pause) and
	// returns once the last went out; ErrNoKeypad where the line has no
	// telephone-event.
	SendDigits(ctx context.Context, digits string) error
}

// MaxDigits bounds the digits of one SendDigits (a menu path, a PIN, an
// extension; not a data channel).
const MaxDigits = 64

// ValidDigits reports ErrBadDigits unless digits is 1 to MaxDigits keys
// of 0-9, *, #, A-D and w.
func ValidDigits(digits string) error {
	if digits == "" || len(digits) > MaxDigits {
		return ErrBadDigits
	}
	for _, d := range digits {
		if !strings.ContainsRune("0123456789*#ABCDw", d) {
			return ErrBadDigits
		}
	}
	return nil
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
	// SampleRate is the rate of PCM frames both ways (default 8000, G.711).
	SampleRate int
	// MediaTimeout ends the call with OutcomeMediaTimeout when no caller
	// audio arrived for this long while the call was not on hold (0: never).
	MediaTimeout time.Duration
	// MaxDuration ends the call with OutcomeMaxDuration (default
	// Config.MaxDuration).
	MaxDuration time.Duration
	// AnsweringMachine overrides the agent's answering-machine policy for
	// this call (a dial's own voicemail message); empty fields keep the
	// agent's.
	AnsweringMachine *config.AnsweringMachine
	// Variables fill {name} in the agent's instructions for this call (a
	// campaign contact's first name, an appointment's time).
	Variables map[string]string
}

// FillVariables replaces each {name} in instructions whose name vars holds
// with its value; other braces stay as written.
func FillVariables(instructions string, vars map[string]string) string {
	if len(vars) == 0 || !strings.Contains(instructions, "{") {
		return instructions
	}
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(instructions)
}

// Outcome is how a call ended, as its record and memory show it.
type Outcome string

// Outcomes of a call.
const (
	OutcomeCompleted    Outcome = "completed" // the box ended a normal call
	OutcomeCallerHangup Outcome = "caller_hangup"
	OutcomeTransferred  Outcome = "transferred"
	OutcomeMediaTimeout Outcome = "media_timeout"
	OutcomeMaxDuration  Outcome = "max_duration"
	OutcomeCancelled    Outcome = "cancelled" // before answer
	OutcomeFailed       Outcome = "failed"
	OutcomeShutdown     Outcome = "shutdown"
	OutcomeNoAnswer     Outcome = "no_answer"
	OutcomeBusy         Outcome = "busy"
	OutcomeBoxLost      Outcome = "box_lost" // the box carrying it died; closed by another
	// OutcomeProviderFailed: every provider of a part (speech-to-text, the
	// model) failed; the agent said its fallback sentence and hung up.
	OutcomeProviderFailed Outcome = "provider_failed"
	// OutcomeOperatorHangup: someone ended the call from outside
	// (POST /api/voice/calls/{id}/hangup), ringing or running.
	OutcomeOperatorHangup Outcome = "operator_hangup"
)

// End is a report that a call ended or must end: its outcome and, for
// failures, a short reason an operator can act on (no caller text).
type End struct {
	Outcome Outcome
	Reason  string
}
