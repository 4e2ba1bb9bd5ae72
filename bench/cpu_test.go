package bench

import (
	"runtime"
	"testing"
	"time"
)

// A window's shares: the process's and the database's CPU over the
// window, and the machine's busy time beyond both as everything else.
func TestCPUShares(t *testing.T) {
	r0 := cpuReading{process: time.Second, db: 2 * time.Second, machine: 10 * time.Second}
	r1 := cpuReading{process: 6 * time.Second, db: 3 * time.Second, machine: 18 * time.Second}
	sh := r1.sharesSince(r0, 10*time.Second)
	if sh.Process != 0.5 || sh.DB != 0.1 || sh.Others < 0.199 || sh.Others > 0.201 {
		t.Fatalf("shares %+v, want process 0.5, db 0.1, others 0.2", sh)
	}
	if got := sh.String(); got != "process 50 %, PostgreSQL 10 %, everything else 20 %" {
		t.Fatalf("String() = %q", got)
	}
	r0.db = -1
	if sh := r1.sharesSince(r0, 10*time.Second); sh.DB != -1 || sh.Others != -1 || sh.String() != "process 50 %, PostgreSQL ?, everything else ?" {
		t.Fatalf("unreadable database: %+v %q", sh, sh.String())
	}
}

// The machine's busy time counts this process's own work.
func TestMachineBusyCountsWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/stat, Linux only")
	}
	m0 := machineBusy()
	if m0 <= 0 {
		t.Fatalf("machine busy %v", m0)
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	if m1 := machineBusy(); m1-m0 < 200*time.Millisecond {
		t.Fatalf("300 ms of spinning counted %v", m1-m0)
	}
}
