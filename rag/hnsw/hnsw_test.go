package hnsw_test

import (
	"testing"

	"github.com/stackbone/box/rag/hnsw"
	"github.com/stackbone/box/rag/synth"
)

func build(t testing.TB, n, dims int) (*hnsw.Graph, *synth.Gen) {
	gen := synth.New(dims, n, 7)
	g := hnsw.New(dims, hnsw.Config{})
	for range n {
		g.Add(gen.Next())
	}
	for g.Link() {
	}
	return g, gen
}

func recall(g *hnsw.Graph, gen *synth.Gen, queries, k, ef int, allow func(uint32) bool) float64 {
	hit, total := 0, 0
	for range queries {
		q := gen.Next()
		truth := map[uint32]bool{}
		for _, h := range g.Exact(q, k, allow) {
			truth[h.Slot] = true
		}
		for _, h := range g.Search(q, k, ef, allow) {
			if truth[h.Slot] {
				hit++
			}
		}
		total += len(truth)
	}
	return float64(hit) / float64(total)
}

func TestRecallOnClusteredVectors(t *testing.T) {
	t.Parallel()
	g, gen := build(t, 5000, 128)
	if r := recall(g, gen, 200, 10, 64, nil); r < 0.97 {
		t.Fatalf("recall@10 = %.3f, want >= 0.97", r)
	}
}

func TestSearchIsExactBeforeLinking(t *testing.T) {
	t.Parallel()
	gen := synth.New(32, 500, 3)
	g := hnsw.New(32, hnsw.Config{})
	for range 500 {
		g.Add(gen.Next())
	}
	for range 200 { // part linked, part in the tail
		g.Link()
	}
	if g.Unlinked() != 300 {
		t.Fatalf("unlinked = %d", g.Unlinked())
	}
	for range 50 {
		q := gen.Next()
		exact := g.Exact(q, 5, nil)
		got := g.Search(q, 5, 500, nil) // a beam as wide as the graph: exact
		for i := range exact {
			if got[i].Slot != exact[i].Slot {
				t.Fatalf("search %v != exact %v", got, exact)
			}
		}
	}
}

func TestDeletedAndFilteredSlotsAreNeverReturned(t *testing.T) {
	t.Parallel()
	g, gen := build(t, 3000, 64)
	for s := uint32(0); s < 3000; s += 2 {
		g.Delete(s)
	}
	if g.Live() != 1500 {
		t.Fatalf("live = %d", g.Live())
	}
	allow := func(s uint32) bool { return s%3 == 0 }
	for range 100 {
		q := gen.Next()
		for _, h := range g.Search(q, 10, 64, allow) {
			if h.Slot%2 == 0 || h.Slot%3 != 0 {
				t.Fatalf("returned slot %d (deleted or filtered out)", h.Slot)
			}
		}
	}
	if r := recall(g, gen, 100, 10, 128, allow); r < 0.9 {
		t.Fatalf("filtered recall@10 = %.3f, want >= 0.9", r)
	}
	got := g.ExactSlots(gen.Next(), 10, []uint32{1, 2, 3, 5})
	if len(got) != 3 { // 2 is deleted
		t.Fatalf("exact over slots: %v", got)
	}
}

func TestSimilarityIsCosine(t *testing.T) {
	t.Parallel()
	g := hnsw.New(2, hnsw.Config{})
	g.Add([]float32{3, 0})
	g.Add([]float32{1, 1})
	g.Add([]float32{0, -2})
	hits := g.Exact([]float32{10, 0}, 3, nil)
	want := []float32{1, 0.70710677, 0}
	for i, h := range hits {
		if d := h.Sim - want[i]; d > 1e-5 || d < -1e-5 {
			t.Fatalf("hits = %v, want sims %v", hits, want)
		}
	}
}
