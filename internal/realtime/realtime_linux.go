package realtime

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

var state struct {
	mu      sync.Mutex
	holds   int
	denied  error           // set once refused: later holds do not try again
	normal  *unix.SchedAttr // the scheduling the process had, restored at the last release
	stop    chan struct{}   // closes the sweeper
	done    chan struct{}   // closed when the sweeper returned
	lowered bool            // held, but back to normal while the process is saturated
}

// saturations counts the sweeps that lowered held threads because the
// process was saturated.
var saturations atomic.Int64

// Saturations reports how many times held threads returned to ordinary
// scheduling because the process was saturated (see Saturated).
func Saturations() int64 { return saturations.Load() }

// cpuShare (under state.mu) is the process's CPU time since the last call
// as a share of GOMAXPROCS processors over the wall time since (the first
// call returns 0); a variable so tests can play a saturated process.
var cpuShare = newCPUShare()

func newCPUShare() func() float64 {
	var lastCPU, lastWall time.Duration
	return func() float64 {
		var ru unix.Rusage
		if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
			return 0
		}
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		wall := time.Duration(time.Now().UnixNano())
		share := 0.0
		if lastWall != 0 && wall > lastWall {
			share = float64(cpu-lastCPU) / float64(wall-lastWall) / float64(runtime.GOMAXPROCS(0))
		}
		lastCPU, lastWall = cpu, wall
		return share
	}
}

// Hold raises every thread of the process to real-time round-robin at
// Priority unless already raised, and keeps the threads started later
// raised until release is called as many times as Hold succeeded; the
// last release restores the scheduling the threads had. It returns
// ErrDenied (wrapping the system's error) when the system refuses; later
// holds then return the same error without trying again.
func Hold() (release func(), err error) {
	s := &state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.denied != nil {
		return nil, s.denied
	}
	if s.holds == 0 {
		if err := raise(); err != nil {
			return nil, err
		}
		s.lowered = false
		cpuShare() // the sweeps' shares count from now
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go sweep(s.stop, s.done)
	}
	s.holds++
	var once sync.Once
	return func() { once.Do(unhold) }, nil
}

// Held reports whether something holds real-time scheduling.
func Held() bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.holds > 0
}

// Raised reports whether the process's threads run at real-time priority
// now: held, and the process not saturated.
func Raised() bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.holds > 0 && !state.lowered
}

func unhold() {
	s := &state
	s.mu.Lock()
	s.holds--
	if s.holds > 0 {
		s.mu.Unlock()
		return
	}
	close(s.stop)
	done := s.done
	s.mu.Unlock()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds == 0 { // not held again meanwhile
		setAll(s.normal)
	}
}

// raise (under mu) raises every thread; on refusal it restores those it
// raised and records the refusal.
func raise() error {
	s := &state
	if s.normal == nil {
		a, err := unix.SchedGetAttr(os.Getpid(), 0)
		if err != nil {
			return fmt.Errorf("realtime: the process's scheduling: %w", err)
		}
		a.Flags &^= unix.SCHED_FLAG_RESET_ON_FORK
		s.normal = a
	}
	if err := setAll(raised()); err != nil {
		setAll(s.normal)
		if errors.Is(err, unix.EPERM) {
			s.denied = fmt.Errorf("%w: %w", ErrDenied, err)
			return s.denied
		}
		return err
	}
	return nil
}

func raised() *unix.SchedAttr {
	return &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: Priority,
		Flags: unix.SCHED_FLAG_RESET_ON_FORK}
}

// sweep raises, every Sweep until stop closes, the threads started since;
// it lowers them while the process is saturated (see Saturated).
func sweep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(Sweep)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s := &state
			s.mu.Lock()
			share := cpuShare() // under mu: a Hold after a release may start the next sweeper before this one saw stop
			switch {
			case s.holds == 0:
			case !s.lowered && share >= Saturated:
				s.lowered = true
				saturations.Add(1)
				_ = setAll(s.normal)
			case s.lowered && share < Recovered:
				s.lowered = false
			}
			if s.holds > 0 && !s.lowered {
				_ = setAll(raised()) // a refusal now (limits lowered meanwhile) leaves the new threads ordinary
			}
			s.mu.Unlock()
		}
	}
}

// setAll gives every thread of the process attr. A thread that exited
// meanwhile is skipped; the first other error is returned after the rest
// were tried.
func setAll(attr *unix.SchedAttr) error {
	tids, err := threads()
	if err != nil {
		return err
	}
	var first error
	for _, tid := range tids {
		a := *attr
		if err := unix.SchedSetAttr(tid, &a, 0); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
			first = fmt.Errorf("realtime: thread %d: %w", tid, err)
		}
	}
	return first
}

// threads lists the process's threads.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("realtime: the process's threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// RaiseProcess gives another process of this machine, single-threaded (a
// PostgreSQL backend), the real-time round-robin priority the held threads
// run at, for as long as it lives. The load tools give it to their run's
// database backends, so the stand-ins for the network and the model, at
// this priority themselves, do not starve the database the box waits on.
func RaiseProcess(pid int) error {
	a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: Priority}
	if err := unix.SchedSetAttr(pid, &a, 0); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("%w: %w", ErrDenied, err)
		}
		return fmt.Errorf("realtime: process %d: %w", pid, err)
	}
	return nil
}
