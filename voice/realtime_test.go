//go:build linux

package voice

import (
	"errors"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stackbone/box/internal/realtime"
	"github.com/stackbone/box/telemetry"
)

// realtimeThreads counts the process's threads at real-time round-robin.
func realtimeThreads(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy == unix.SCHED_RR {
			n++
		}
	}
	return n
}

// A manager configured for real-time media (media.scheduling realtime)
// raises the process's threads while a call is in progress and returns
// them to normal once its last call ended. Not parallel: the scheduling is
// the whole test process's.
func TestCallsRunAtRealtimePriorityWhileInProgress(t *testing.T) {
	release, err := realtime.Hold()
	if errors.Is(err, realtime.ErrDenied) {
		t.Skipf("this process may not use real-time scheduling (run the tests as root or with CAP_SYS_NICE): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	release()
	if n := realtimeThreads(t); n != 0 {
		t.Fatalf("%d real-time threads before any call", n)
	}
	metrics := telemetry.New()
	series := func(name string) string {
		rec := httptest.NewRecorder()
		metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(l, name+" ") {
				return strings.TrimPrefix(l, name+" ")
			}
		}
		return "absent"
	}
	gauge := func() string { return series("stackbone_media_realtime") }
	e := newEnv(t, func(c *Config) { c.Realtime, c.Metrics = true, metrics })
	first := e.start(CallInfo{Agent: "receptionist", PhoneNumber: "+34600555101"})
	second := e.start(CallInfo{Agent: "receptionist", PhoneNumber: "+34600555102"})
	if g := gauge(); g != "1" {
		t.Fatalf("stackbone_media_realtime %s with calls in progress, want 1", g)
	}
	if !realtime.Held() || realtimeThreads(t) == 0 {
		t.Fatalf("two calls in progress, real-time held %v, %d real-time threads", realtime.Held(), realtimeThreads(t))
	}
	first.call.End(OutcomeCallerHangup, "")
	first.end()
	if !realtime.Held() || realtimeThreads(t) == 0 {
		t.Fatalf("one call left, real-time held %v, %d real-time threads", realtime.Held(), realtimeThreads(t))
	}
	second.call.End(OutcomeCallerHangup, "")
	second.end()
	if realtime.Held() || realtimeThreads(t) != 0 {
		t.Fatalf("no call left, real-time held %v, %d real-time threads", realtime.Held(), realtimeThreads(t))
	}
	if g := gauge(); g != "0" {
		t.Fatalf("stackbone_media_realtime %s with no call, want 0", g)
	}
	// Its value depends on how busy the machine was (internal/realtime
	// tests the count).
	if n := series("stackbone_media_realtime_saturations_total"); n == "absent" {
		t.Fatal("stackbone_media_realtime_saturations_total not exported")
	}
}
