// Package realtime raises the process's threads to real-time round-robin
// scheduling while something holds it: the box's calls, whose audio goes
// out every 20 ms and cannot wait behind other work for the processor.
//
// On a busy machine the kernel's fair scheduler can leave a woken thread
// waiting several milliseconds for a processor; a call's pacer woken for
// its next frame then sends it late, and so do the network readers and
// the timers the pacer's wake-up depends on. Under real-time round-robin
// at the lowest real-time priority, the process's threads run as soon as
// they wake, ahead of ordinary processes, as the media threads of
// PipeWire, FreeSWITCH (-rp) and Asterisk (-p) do. The kernel still keeps
// a share of each processor for ordinary processes (sched_rt_runtime_us),
// and the process returns to the scheduling it had once the last hold is
// released.
//
// The threads are raised with SCHED_RESET_ON_FORK, so a program the
// process starts (an MCP tool server, say) runs at ordinary priority; a
// thread the Go runtime starts later starts ordinary too and is raised by
// the next sweep (every Sweep while held). While the process is
// saturated its threads run at ordinary priority (see Saturated).
//
// It needs the CAP_SYS_NICE capability or an RLIMIT_RTPRIO of at least
// Priority; without it Hold returns ErrDenied and changes nothing.
package realtime

import (
	"errors"
	"time"
)

// Priority is the real-time priority the threads run at: the lowest, so
// the kernel's own real-time threads stay ahead.
const Priority = 1

// Sweep is how often threads started since the last sweep are raised.
const Sweep = 500 * time.Millisecond

// A process that used Saturated of its processors (GOMAXPROCS) over a
// sweep returns to ordinary scheduling until a sweep finds it under
// Recovered. Real-time is for a process with room to wake at once; a
// saturated one at real-time priority would only take the processors
// from everything beside it (PostgreSQL on the same machine) and, with
// SCHED_RR's 100 ms slices, hold a processor longer from its own threads
// than the ordinary scheduler does.
const (
	Saturated = 0.9
	Recovered = 0.75
)

// ErrDenied is returned by Hold when the system does not permit real-time
// scheduling to the process.
var ErrDenied = errors.New("realtime: real-time scheduling not permitted (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of 1)")
