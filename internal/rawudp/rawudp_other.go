//go:build !linux

// Package rawudp sends UDP packets from many source ports in one system
// call, on Linux only.
package rawudp

import (
	"errors"
	"net/netip"
)

// Batch is how many packets one system call carries at most.
const Batch = 128

// Sender is not available here: New always fails.
type Sender struct{}

// New fails: raw batches are sent on Linux only.
func New(maxPayload int) (*Sender, error) {
	return nil, errors.New("rawudp: not on this system")
}

// Close does nothing.
func (s *Sender) Close() error { return nil }

// Queue fails.
func (s *Sender) Queue(src, dst netip.AddrPort, payload []byte) error {
	return errors.New("rawudp: not on this system")
}

// Flush does nothing.
func (s *Sender) Flush() {}
