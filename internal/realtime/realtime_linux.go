package realtime

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

var state struct {
	mu     sync.Mutex
	holds  int
	denied error           // set once refused: later holds do not try again
	normal *unix.SchedAttr // the scheduling the process had, restored at the last release
	stop   chan struct{}   // closes the sweeper
	done   chan struct{}   // closed when the sweeper returned
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
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go sweep(s.stop, s.done)
	}
	s.holds++
	var once sync.Once
	return func() { once.Do(unhold) }, nil
}

// Held reports whether the process's threads are raised now.
func Held() bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.holds > 0
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

// sweep raises, every Sweep until stop closes, the threads started since.
func sweep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(Sweep)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			state.mu.Lock()
			if state.holds > 0 {
				_ = setAll(raised()) // a refusal now (limits lowered meanwhile) leaves the new threads ordinary
			}
			state.mu.Unlock()
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
