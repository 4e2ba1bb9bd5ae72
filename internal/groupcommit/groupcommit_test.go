package groupcommit

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// Items that arrive while a group is being written go together in the
// next one (at most max), each caller gets its own group's error, and
// every item is written exactly once.
func TestItemsWaitingGoInTheNextGroup(t *testing.T) {
	first := make(chan struct{})
	release := make(chan struct{})
	var (
		mu      sync.Mutex
		groups  [][]int
		written []int
	)
	bad := errors.New("refused")
	g := New(3, func(_ context.Context, items []int) error {
		mu.Lock()
		groups = append(groups, slices.Clone(items))
		written = append(written, items...)
		n := len(groups)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
		if slices.Contains(items, 4) {
			return bad
		}
		return nil
	})
	errs := make([]error, 8)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = g.Do(context.Background(), 0) }()
	<-first
	// Seven more arrive while the first group is held.
	for i := 1; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = g.Do(context.Background(), i) }()
	}
	for {
		g.mu.Lock()
		n := len(g.queue)
		g.mu.Unlock()
		if n == 7 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if len(groups) != 4 || len(groups[0]) != 1 || len(groups[1]) != 3 || len(groups[2]) != 3 || len(groups[3]) != 1 {
		t.Fatalf("groups %v, want [0] then the seven waiting in groups of at most 3", groups)
	}
	slices.Sort(written)
	if !slices.Equal(written, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("written %v, want each item once", written)
	}
	var withFour []int
	for _, grp := range groups {
		if slices.Contains(grp, 4) {
			withFour = grp
		}
	}
	for i, err := range errs {
		if want := slices.Contains(withFour, i); (err != nil) != want {
			t.Errorf("item %d: error %v, want the refusal only for the group holding 4 (%v)", i, err, withFour)
		}
	}
	// Alone, an item is written at once in a group of its own.
	if err := g.Do(context.Background(), 9); err != nil || len(groups) != 5 || len(groups[4]) != 1 {
		t.Fatalf("alone: %v, groups %v", err, groups)
	}
}
