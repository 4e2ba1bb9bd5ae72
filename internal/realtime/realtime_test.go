//go:build linux

package realtime

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stackbone/box/internal/poll"
)

// policies counts the process's threads by scheduling policy.
func policies(t *testing.T) map[uint32]int {
	t.Helper()
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	n := map[uint32]int{}
	for _, tid := range tids {
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // exited meanwhile
		}
		n[a.Policy]++
	}
	return n
}

func hold(t *testing.T) func() {
	t.Helper()
	release, err := Hold()
	if errors.Is(err, ErrDenied) {
		t.Skipf("this process may not use real-time scheduling (run the tests as root or with CAP_SYS_NICE): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return release
}

func TestHoldRaisesEveryThreadUntilTheLastRelease(t *testing.T) {
	before := policies(t)
	if before[unix.SCHED_RR] != 0 {
		t.Fatalf("threads already real-time: %v", before)
	}
	first := hold(t)
	second := hold(t)
	if p := policies(t); p[unix.SCHED_RR] == 0 || p[unix.SCHED_NORMAL] != 0 {
		t.Fatalf("after Hold: %v, want every thread SCHED_RR", p)
	}

	// A thread the runtime starts now starts ordinary (reset on fork) and
	// is raised by the sweep.
	started, quit := make(chan struct{}), make(chan struct{})
	for range 3 {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started <- struct{}{}
			<-quit
		}()
		<-started
	}
	defer close(quit)
	poll.Until(t, "the new threads raised by the sweep", 5*Sweep, func() bool { return policies(t)[unix.SCHED_NORMAL] == 0 })

	// A program the process starts runs at ordinary priority.
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if a, err := unix.SchedGetAttr(cmd.Process.Pid, 0); err != nil || a.Policy != unix.SCHED_NORMAL {
		t.Fatalf("child's policy %+v, %v; want SCHED_NORMAL", a, err)
	}

	first()
	first() // a release counts once
	// Still held: the sweep goes on (the runtime may have started a
	// thread since the last one).
	poll.Until(t, "every thread still raised after one of two releases", 5*Sweep, func() bool { return policies(t)[unix.SCHED_NORMAL] == 0 })
	if !Held() {
		t.Fatal("Held false with a hold left")
	}
	second()
	if p := policies(t); p[unix.SCHED_RR] != 0 {
		t.Fatalf("after the last release: %v, want no SCHED_RR thread", p)
	}
	if Held() {
		t.Fatal("Held true after the last release")
	}
}

// A saturated process returns to ordinary scheduling while held, and is
// raised again once it has room.
func TestSaturatedProcessRunsOrdinary(t *testing.T) {
	var share atomic.Value
	share.Store(0.0)
	var sweeps atomic.Int64
	orig := cpuShare
	cpuShare = func() float64 { sweeps.Add(1); return share.Load().(float64) }
	defer func() { cpuShare = orig }()
	release := hold(t)
	defer release()
	if !Raised() {
		t.Fatal("held and idle, not raised")
	}
	before := Saturations()
	share.Store(0.95)
	poll.Until(t, "the saturated process's threads back to normal", 5*Sweep, func() bool {
		return !Raised() && policies(t)[unix.SCHED_RR] == 0
	})
	if !Held() {
		t.Fatal("lowered for saturation, no longer held")
	}
	share.Store(0.8) // under Saturated, not under Recovered: stays lowered
	n := sweeps.Load()
	poll.Until(t, "two sweeps", 5*Sweep, func() bool { return sweeps.Load() >= n+2 })
	if Raised() || policies(t)[unix.SCHED_RR] != 0 {
		t.Fatalf("raised again at a share of 0.8: %v", policies(t))
	}
	if n := Saturations() - before; n != 1 {
		t.Fatalf("%d saturations counted, want 1", n)
	}
	share.Store(0.5)
	poll.Until(t, "the threads raised again once the process has room", 5*Sweep, func() bool {
		return Raised() && policies(t)[unix.SCHED_NORMAL] == 0
	})
}

// TestHoldDenied runs this test binary without CAP_SYS_NICE (and root's
// RLIMIT_RTPRIO of 0): Hold is refused, once and for all, changing nothing.
func TestHoldDenied(t *testing.T) {
	if os.Getenv("REALTIME_DENIED_CHILD") != "" {
		for range 2 {
			if _, err := Hold(); !errors.Is(err, ErrDenied) || !errors.Is(err, unix.EPERM) {
				t.Fatalf("Hold without the capability: %v, want ErrDenied (EPERM)", err)
			}
		}
		if p := policies(t); p[unix.SCHED_RR] != 0 {
			t.Fatalf("threads raised although refused: %v", p)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("as a user without CAP_SYS_NICE every Hold is refused; TestHoldRaisesEveryThreadUntilTheLastRelease skips")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed: cannot drop CAP_SYS_NICE for the child")
	}
	cmd := exec.Command(setpriv, "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice",
		os.Args[0], "-test.run", "^TestHoldDenied$", "-test.v")
	cmd.Env = append(os.Environ(), "REALTIME_DENIED_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestHoldDenied") {
		t.Fatalf("child did not run the test:\n%s", out)
	}
}
