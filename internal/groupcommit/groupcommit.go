// Package groupcommit writes the items of many concurrent callers in
// groups: an item handed to Do while a group is being written waits and
// goes with the others in the next one, so concurrent writers share a
// round trip and a commit instead of paying one each. Nothing waits for a
// group to fill: alone, an item is written at once, and groups grow only
// as writes queue behind a slow one.
//
//	g := groupcommit.New(256, func(ctx context.Context, items []T) error { ... one statement ... })
//	err := g.Do(ctx, item) // returns once item's group was written
package groupcommit

import (
	"context"
	"sync"
)

// Group writes items in groups of at most max with write. It is safe for
// concurrent use and holds no goroutine between groups: the caller whose
// item opens a group writes it, and hands the next to a new goroutine only
// when items are waiting.
type Group[T any] struct {
	max   int
	write func(context.Context, []T) error

	mu      sync.Mutex
	queue   []queued[T]
	writing bool
}

type queued[T any] struct {
	item T
	done chan error
}

// New returns a Group that writes at most max items at a time with write.
func New[T any](max int, write func(ctx context.Context, items []T) error) *Group[T] {
	return &Group[T]{max: max, write: write}
}

// Do writes item in the next group and returns that group's error. The
// write is not cancelled with ctx once queued (the group holds other
// callers' items): it ends within the writer's own timeouts.
func (g *Group[T]) Do(ctx context.Context, item T) error {
	q := queued[T]{item: item, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, q)
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		g.writeGroup(context.WithoutCancel(ctx))
	}
	return <-q.done
}

// writeGroup writes the waiting items (at most max), then passes the lead
// on if more arrived meanwhile.
func (g *Group[T]) writeGroup(ctx context.Context) {
	g.mu.Lock()
	n := min(len(g.queue), g.max)
	group := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	items := make([]T, n)
	for i, q := range group {
		items[i] = q.item
	}
	err := g.write(ctx, items)
	for _, q := range group {
		q.done <- err
	}
	g.mu.Lock()
	more := len(g.queue) > 0
	g.writing = more
	g.mu.Unlock()
	if more {
		go g.writeGroup(ctx)
	}
}
