package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stackbone/box/internal/realtime"
	"github.com/stackbone/box/postgres/pgtest"
)

// With the stand-ins at real-time priority, every backend of the run's
// database on this machine runs at it too, and the report says so.
func TestRunDatabaseBackendsRunAtTheStandInsPriority(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raised0 := backendsRaised.Load()
	pool, drop, err := database(ctx, pgtest.URL(t), 2, true)
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	for range 2 {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		pid := int(conn.Conn().PgConn().PID())
		a, err := unix.SchedGetAttr(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.Policy != unix.SCHED_RR {
			if err := realtime.RaiseProcess(pid); errors.Is(err, realtime.ErrDenied) {
				t.Skipf("raising another process is not permitted here (needs CAP_SYS_NICE): %v", err)
			}
		}
		if a.Policy != unix.SCHED_RR || a.Priority != realtime.Priority {
			t.Fatalf("backend %d: policy %d priority %d, want real-time round-robin at %d", pid, a.Policy, a.Priority, realtime.Priority)
		}
	}
	if n := backendsRaised.Load() - raised0; n < 2 {
		t.Fatalf("%d backends counted raised", n)
	}
	if note := backendsNote(); note == "" {
		t.Fatal("the report says nothing of the backends' priority")
	}
}
