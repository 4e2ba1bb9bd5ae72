package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuReading is the CPU time spent so far by this process, by the
// PostgreSQL backends of the run's database (-1: unreadable) and by every
// processor of the machine (-1: unreadable).
type cpuReading struct {
	process, db, machine time.Duration
}

func readCPU(ctx context.Context, pool *pgxpool.Pool) cpuReading {
	r := cpuReading{process: processCPU(), db: -1, machine: machineBusy()}
	if pool != nil {
		r.db = backendsCPU(ctx, pool)
	}
	return r
}

// cpuShares is a window's CPU in cores (1 is one processor busy for the
// whole window): the process, its database backends, and whatever else
// ran on the machine (other processes, the kernel's own work). DB and
// Others are -1 when they could not be read.
type cpuShares struct {
	Process, DB, Others float64
}

func (r cpuReading) sharesSince(r0 cpuReading, window time.Duration) cpuShares {
	s := window.Seconds()
	sh := cpuShares{Process: (r.process - r0.process).Seconds() / s, DB: -1, Others: -1}
	if r.db >= 0 && r0.db >= 0 {
		sh.DB = (r.db - r0.db).Seconds() / s
	}
	if r.machine >= 0 && r0.machine >= 0 && sh.DB >= 0 {
		sh.Others = max(0, (r.machine-r0.machine).Seconds()/s-sh.Process-sh.DB)
	}
	return sh
}

// String is the shares as percent of one core.
func (sh cpuShares) String() string {
	pct := func(v float64) string {
		if v < 0 {
			return "?"
		}
		return strconv.FormatFloat(100*v, 'f', 0, 64) + " %"
	}
	return "process " + pct(sh.Process) + ", PostgreSQL " + pct(sh.DB) + ", everything else " + pct(sh.Others)
}

// machineBusy is the time every processor spent on anything but idling
// (user, nice, system, interrupts, steal), from /proc/stat; -1 off Linux.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return -1
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return -1
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ 100
}
