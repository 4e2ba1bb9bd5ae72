package agent

import (
	"context"
	"sync"
	"time"
)

// sessionLeases keeps the sessions this box is running turns on alive: a
// heartbeat every third of the lease moves their running_since forward in
// one statement. The heartbeat runs only while there are sessions.
type sessionLeases struct {
	r       *Runtime
	mu      sync.Mutex
	n       map[string]int // running turns per session
	beating bool           // the heartbeat goroutine runs
}

func (l *sessionLeases) hold(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[id]++
	if !l.beating {
		l.beating = true
		go l.beat()
	}
}

func (l *sessionLeases) drop(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[id]--; l.n[id] <= 0 {
		delete(l.n, id)
	}
}

// beat renews the leases until no session is held.
func (l *sessionLeases) beat() {
	every := l.r.cfg.SessionLease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		l.mu.Lock()
		if len(l.n) == 0 {
			l.beating = false
			l.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(l.n))
		for id := range l.n {
			ids = append(ids, id)
		}
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		_, err := l.r.cfg.Pool.Exec(ctx, `UPDATE stackbone_platform.sessions SET running_since = now()
			WHERE id = ANY($1) AND status = 'running'`, ids)
		cancel()
		if err != nil {
			l.r.log.Warn("agent: renew session leases", "sessions", len(ids), "error", err)
		}
	}
}

// staleBefore is when a running turn's last heartbeat must have been for
// its session to count as abandoned (its box died).
func (r *Runtime) staleBefore() time.Time { return r.cfg.Now().Add(-r.cfg.SessionLease) }
