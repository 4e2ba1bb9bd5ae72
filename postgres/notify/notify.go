// Package notify carries cache invalidations between box processes over
// PostgreSQL LISTEN/NOTIFY, so boxes sharing one database never serve a
// revoked key or a stale setting from memory for longer than a notification
// takes.
//
//	l := notify.New(pool, logger)
//	l.Subscribe("auth", func(payload string) { cache.Clear() })
//	go l.Run(ctx)
//	notify.Send(ctx, pool, "auth", "")   // after a change
package notify

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channel is the one LISTEN channel the box uses; payloads are
// "topic:detail".
const Channel = "stackbone_invalidate"

// Execer runs a statement (a pool, a connection or a transaction).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Send notifies every box (this one included) that topic changed. Inside a
// transaction the notification goes out on commit.
func Send(ctx context.Context, db Execer, topic, detail string) error {
	_, err := db.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, topic+":"+detail)
	return err
}

// Listener dispatches notifications to subscribers.
type Listener struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	mu   sync.Mutex
	subs map[string][]func(detail string)
}

// New returns a listener; call Run to start it.
func New(pool *pgxpool.Pool, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.Default()
	}
	return &Listener{pool: pool, log: logger, subs: map[string][]func(string){}}
}

// Subscribe calls fn with the detail of each notification of topic, and
// with "" whenever the listener (re)connects, since notifications may have
// been missed: subscribers then drop everything they cached.
func (l *Listener) Subscribe(topic string, fn func(detail string)) {
	l.mu.Lock()
	l.subs[topic] = append(l.subs[topic], fn)
	l.mu.Unlock()
}

func (l *Listener) dispatch(topic, detail string) {
	l.mu.Lock()
	var fns []func(string)
	if topic == "" {
		for _, s := range l.subs {
			fns = append(fns, s...)
		}
	} else {
		fns = append(fns, l.subs[topic]...)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(detail)
	}
}

// Run listens until ctx ends, reconnecting with backoff.
func (l *Listener) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("notify: listener lost its connection; retrying", "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (l *Listener) listen(ctx context.Context) error {
	pc, err := l.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool for good: it holds the LISTEN, and an
	// interrupted wait leaves it in an unknown state.
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	l.dispatch("", "") // anything cached before this point may be stale
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		topic, detail, _ := strings.Cut(n.Payload, ":")
		l.dispatch(topic, detail)
	}
}
