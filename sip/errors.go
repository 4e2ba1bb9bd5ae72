package sip

import (
	"errors"
	"fmt"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Errors of the sip package.
var (
	// ErrInvalidDial: an outbound call request is wrong (ErrUnknownTrunk
	// and ErrInvalidNumber wrap it).
	ErrInvalidDial = errors.New("sip: invalid dial request")
	// ErrUnknownTrunk: a dial names no declared outbound trunk.
	ErrUnknownTrunk = fmt.Errorf("%w: unknown trunk", ErrInvalidDial)
	// ErrInvalidNumber: a dial's destination is not a phone number or SIP user.
	ErrInvalidNumber = fmt.Errorf("%w: invalid number", ErrInvalidDial)
	// ErrNoTrunk: a dial needs an outbound trunk and none is declared.
	ErrNoTrunk = errors.New("sip: no outbound trunk")
	// ErrAtCapacity: the SIP side carries its maximum number of calls
	// (sip.maxCalls).
	ErrAtCapacity = errors.New("sip: at call capacity")
	// ErrNotStarted: the server is not serving (Start not called, or closed).
	ErrNotStarted = errors.New("sip: not started")
	// ErrTransferFailed: the other side refused or failed a transfer.
	ErrTransferFailed = errors.New("sip: transfer failed")
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
