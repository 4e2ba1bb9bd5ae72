package webhooks

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/postgres/notify"
)

// NotifyTopic is the invalidation topic of the subscriptions (migration
// 032's trigger sends it on every change).
const NotifyTopic = "webhooks"

// wantedTTL bounds how long the subscribed types are trusted without a
// notification (a listener that lost its connection hears none until it
// reconnects).
const wantedTTL = 30 * time.Second

// wantedTypes caches the event types some subscription takes.
type wantedTypes struct {
	mu    sync.Mutex
	on    bool
	gen   uint64          // bumped by each invalidation
	types map[string]bool // nil until loaded
	at    time.Time
}

// Subscribe keeps the subscribed event types in memory from now on,
// dropped whenever a subscription changes (on any box: migration 032's
// trigger notifies them all) and when the listener reconnects; the types
// are trusted for at most 30 s without a notification. An event created
// while a new subscription's notification is on its way (a moment) is
// not recorded for it.
func (s *Service) Subscribe(l *notify.Listener) {
	s.wanted.mu.Lock()
	s.wanted.on = true
	s.wanted.mu.Unlock()
	l.Subscribe(NotifyTopic, func(string) { s.wanted.invalidate() })
}

func (w *wantedTypes) invalidate() {
	w.mu.Lock()
	w.gen++
	w.types = nil
	w.mu.Unlock()
}

// known reports whether some subscription takes events of typ, as far as
// the types in memory say; known is false when they are not loaded (or
// too old, or kept at all without Subscribe).
func (w *wantedTypes) known(typ string) (wanted, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on || w.types == nil || time.Since(w.at) >= wantedTTL {
		return false, false
	}
	return w.types[typ], true
}

// Wanted reports whether some subscription takes events of typ, so a
// caller can leave out what only the event needed (Emit itself writes
// nothing then). It may read the subscriptions on a connection of the
// pool: a caller must not hold one of its own meanwhile (in a transaction
// Emit consults only the types already in memory). Without Subscribe, or
// when the subscriptions cannot be read, it answers true and Emit's own
// statement decides.
func (s *Service) Wanted(ctx context.Context, typ string) bool {
	w := &s.wanted
	if wanted, known := w.known(typ); known {
		return wanted
	}
	w.mu.Lock()
	if !w.on {
		w.mu.Unlock()
		return true
	}
	gen := w.gen
	w.mu.Unlock()
	rows, err := s.cfg.Pool.Query(ctx, `SELECT DISTINCT unnest(events) FROM stackbone_platform.webhook_subscriptions`)
	if err != nil {
		return true
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return true
	}
	types := make(map[string]bool, len(list))
	for _, t := range list {
		types[t] = true
	}
	w.mu.Lock()
	if w.gen == gen { // no change was announced while reading
		w.types, w.at = types, time.Now()
	}
	w.mu.Unlock()
	return types[typ]
}
