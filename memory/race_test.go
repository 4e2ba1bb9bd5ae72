package memory_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
)

// Fifty adds for one person race. Each either applies or returns
// memory_conflict, and the stored facts are exactly the applied operations.
func TestConcurrentAddsApplyOrConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	user := "+34600000050"
	idRe := regexp.MustCompile(`add-(\d+)`)
	h.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		id := idRe.FindStringSubmatch(r.Messages[1].Content)[1]
		return providertest.Reply{
			Content: ops(fmt.Sprintf(`{"op":"add","content":"Fact from add %s."}`, id)),
			Delay:   time.Duration(rand.IntN(3000)) * time.Microsecond,
		}
	})
	const n = 50
	type outcome struct {
		res memory.AddResult
		err error
	}
	results := make([]outcome, n)
	var wg sync.WaitGroup
	var appliedSoFar atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Five overlapping waves of ten: wave k starts once k adds have
			// applied, so its snapshots fall between commits of earlier
			// adds still in flight, whatever the machine's speed.
			// (Polled here, not with waitFor: t.Fatal must not run off the
			// test's goroutine; a wave that never starts fails the count below.)
			for deadline := time.Now().Add(20 * time.Second); appliedSoFar.Load() < int64(i/10) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			res, err := h.add(user, fmt.Sprintf("add-%d", i))
			if err == nil {
				appliedSoFar.Add(1)
			}
			results[i] = outcome{res, err}
		}(i)
	}
	wg.Wait()

	var applied []int
	for i, o := range results {
		switch {
		case o.err == nil:
			applied = append(applied, i)
		case errors.Is(o.err, memory.ErrConflict):
		default:
			t.Fatalf("add %d: %v, want success or memory_conflict", i, o.err)
		}
	}
	if len(applied) < 5 || len(applied) == n {
		t.Fatalf("%d of %d adds applied: the race was not exercised", len(applied), n)
	}
	// Order the applied adds by how many facts they returned: the commit order.
	slices.SortFunc(applied, func(a, b int) int { return len(results[a].res.Facts) - len(results[b].res.Facts) })
	var want []string
	for k, i := range applied {
		want = append(want, fmt.Sprintf("Fact from add %d.", i))
		// Each applied add saw every add applied before it, and nothing else.
		if got := contents(results[i].res.Facts); !slices.Equal(got, want) {
			t.Fatalf("applied add #%d (%d) returned %q, want %q", k, i, got, want)
		}
	}
	rec := h.recall("support", user)
	if got := contents(rec.Facts); !slices.Equal(got, want) {
		t.Fatalf("stored facts %q, want the applied operations %q", got, want)
	}
	if len(rec.Calls) != len(applied) || h.revision("support", user) != int64(len(applied)) {
		t.Fatalf("%d calls, revision %d, for %d applied adds", len(rec.Calls), h.revision("support", user), len(applied))
	}
	t.Logf("%d of %d adds applied, %d conflicted", len(applied), n, n-len(applied))
}

// An erasure racing an add whose model request is in flight never lets the
// erased facts come back, in any interleaving.
func TestDeleteAllRacingAddNeverRestores(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var gate atomic.Pointer[chan struct{}]
	h.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		g := *gate.Load()
		if strings.Contains(r.Messages[1].Content, "Old fact") {
			// The model saw the old facts: it rewrites one and adds one.
			return providertest.Reply{Gate: g, Content: ops(
				`{"op":"update","handle":"f1","content":"Old fact, rewritten."}`,
				`{"op":"add","content":"New fact."}`)}
		}
		return providertest.Reply{Gate: g, Content: ops(`{"op":"add","content":"New fact."}`)}
	})
	rounds := 120
	if testing.Short() {
		rounds = 30
	}
	seen := map[string]int{}
	for r := 0; r < rounds; r++ {
		user := fmt.Sprintf("+3460%07d", r)
		open := make(chan struct{})
		close(open)
		gate.Store(&open)
		h.mustAdd(user, "seed", ops(`{"op":"add","content":"Old fact one."}`, `{"op":"add","content":"Old fact two."}`))

		g := make(chan struct{})
		gate.Store(&g)
		var addErr, delErr error
		var deleted int64
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, addErr = h.add(user, "round")
		}()
		go func() {
			defer wg.Done()
			spin(rand.IntN(3000))
			deleted, delErr = h.svc.DeleteAll(h.ctx, "support", user)
		}()
		spin(rand.IntN(3000))
		close(g)
		wg.Wait()

		if delErr != nil {
			t.Fatalf("round %d: delete-all: %v", r, delErr)
		}
		if addErr != nil && !errors.Is(addErr, memory.ErrConflict) {
			t.Fatalf("round %d: add: %v", r, addErr)
		}
		got := contents(h.recall("support", user).Facts)
		for _, f := range got {
			if strings.HasPrefix(f, "Old fact") {
				t.Fatalf("round %d: erased data came back: %q (add err %v, deleted %d)", r, got, addErr, deleted)
			}
		}
		switch {
		case addErr != nil:
			seen["add conflicted"]++
		case len(got) == 0:
			seen["add applied, then erased"]++
		default:
			seen["erased, then add applied"]++
		}
	}
	t.Logf("interleavings over %d rounds: %v", rounds, seen)
	if seen["add conflicted"] == 0 {
		t.Error("no round exercised an erasure during the model request")
	}
}

// spin waits about n microseconds without sleeping the goroutine away from
// the race it is meant to create.
func spin(n int) {
	deadline := time.Now().Add(time.Duration(n) * time.Microsecond)
	for time.Now().Before(deadline) {
	}
}
