//go:build !libopus

package opus

const available = false

// New returns ErrUnavailable: this build has no libopus.
func New(rate int) (Codec, error) { return nil, ErrUnavailable }

// NewStereo returns ErrUnavailable: this build has no libopus.
func NewStereo(rate int) (Codec, error) { return nil, ErrUnavailable }
