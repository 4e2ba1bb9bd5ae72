package sip

import (
	"errors"
	"fmt"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/stackbone/box/fault"
)

// Errors of the sip package, with their kinds and codes (package fault).
var (
	// ErrInvalidDial: an outbound call request is wrong (ErrUnknownTrunk
	// and ErrInvalidNumber wrap it).
	ErrInvalidDial = fault.New(fault.Invalid, "voice_invalid_request", "sip: invalid dial request")
	// ErrUnknownTrunk: a dial names no declared outbound trunk.
	ErrUnknownTrunk = fmt.Errorf("%w: unknown trunk", ErrInvalidDial)
	// ErrInvalidNumber: a dial's destination is not a phone number or SIP user.
	ErrInvalidNumber = fmt.Errorf("%w: invalid number", ErrInvalidDial)
	// ErrNoTrunk: a dial needs an outbound trunk and none is declared.
	ErrNoTrunk = fault.New(fault.Unavailable, "voice_no_trunk", "sip: no outbound trunk")
	// ErrAtCapacity: the SIP side carries its maximum number of calls
	// (sip.maxCalls).
	ErrAtCapacity = fault.New(fault.Unavailable, "voice_at_capacity", "sip: at call capacity")
	// ErrNotStarted: the server is not serving (Start not called, or closed).
	ErrNotStarted = fault.New(fault.Unavailable, "voice_unavailable", "sip: not started")
	// ErrTransferFailed: the other side refused or failed a transfer.
	ErrTransferFailed = fault.New(fault.Upstream, "transfer_failed", "sip: transfer failed")
	// ErrDialFailed: the trunk or the callee failed an outbound call.
	ErrDialFailed = fault.New(fault.Upstream, "voice_dial_failed", "sip: dial failed")
)

// StatusError is a SIP response the other side answered with.
type StatusError struct {
	Code   int
	Reason string
}

func (e *StatusError) Error() string { return fmt.Sprintf("sip: %d %s", e.Code, e.Reason) }

// dialogResponse finds the SIP response in an error of sipgo or diago,
// which return sipgo.ErrDialogResponse by value or by pointer.
func dialogResponse(err error) *sip.Response {
	var v sipgo.ErrDialogResponse
	if errors.As(err, &v) {
		return v.Res
	}
	var p *sipgo.ErrDialogResponse
	if errors.As(err, &p) && p != nil {
		return p.Res
	}
	return nil
}
