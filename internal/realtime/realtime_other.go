//go:build !linux

package realtime

import "fmt"

// Hold returns ErrDenied: real-time scheduling is raised on Linux only.
func Hold() (release func(), err error) {
	return nil, fmt.Errorf("%w: not on this system", ErrDenied)
}

// Held reports false.
func Held() bool { return false }

// Raised reports false.
func Raised() bool { return false }

// Saturations reports 0.
func Saturations() int64 { return 0 }

// RaiseProcess returns ErrDenied: real-time scheduling is raised on Linux
// only.
func RaiseProcess(pid int) error {
	return fmt.Errorf("%w: not on this system", ErrDenied)
}
