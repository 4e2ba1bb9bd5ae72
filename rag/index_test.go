package rag_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/rag/synth"
)

// TestBoxesShareOneIndexState runs two boxes on one database: a write on one
// is visible to a query on the other at once (the version check), and the
// other's index catches up by notification before anyone asks.
func TestBoxesShareOneIndexState(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	b := newEnv(t, sharing(a))
	a.createCollection("kb")
	// b loads kb (empty) before the write.
	if hits := b.retrieve(rag.RetrieveRequest{Text: "refund", Namespace: "kb"}); len(hits) != 0 {
		t.Fatalf("hits before any write: %v", hits)
	}
	a.ingest("kb", "doc", chunks("refunds take five days", "returns take thirty days")...)
	waitFor(t, 10*time.Second, func() bool {
		st, err := b.svc.IndexStats(b.ctx, "kb")
		return err == nil && st.Vectors == 2
	}, func() string { st, _ := b.svc.IndexStats(b.ctx, "kb"); return fmt.Sprintf("box b's index: %+v", st) })
	a.ingest("kb", "doc", chunks("refunds take two days")...)
	// Read-your-writes across boxes: b answers from the new version at once.
	hits := b.retrieve(rag.RetrieveRequest{Text: "refunds take days", Namespace: "kb", TopK: 10})
	if got := contents(hits); len(got) != 1 || got[0] != "refunds take two days" {
		t.Fatalf("box b after a replace on box a: %v", got)
	}
	a.must(a.call("DELETE", "/api/rag/documents/doc", nil), 200, nil)
	if hits := b.retrieve(rag.RetrieveRequest{Text: "refunds take days", Namespace: "kb", TopK: 10}); len(hits) != 0 {
		t.Fatalf("box b after a delete on box a: %v", contents(hits))
	}
}

// TestGraphSearchAgreesWithExact fills a collection past ExactBelow with
// clustered vectors, links the graph, and checks recall of graph search,
// with and without a filter, against the exact scan.
func TestGraphSearchAgreesWithExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *rag.Config) { c.ExactBelow = 100 }))
	e.must(e.call("POST", "/api/rag/collections", map[string]any{"name": "vecs", "model": "openai/text-embedding-3-small", "dimensions": 64}), 201, nil)
	gen := synth.New(64, 1200, 5)
	vecs := map[string][]float32{}
	var cs []rag.Chunk
	for i := range 1200 {
		text := fmt.Sprintf("chunk %d", i)
		vecs[text] = gen.Next()
		cs = append(cs, rag.Chunk{Content: text, Metadata: map[string]any{"part": i % 4}})
	}
	e.prov.EmbedWith(func(_, text string, _ int) []float32 { return vecs[text] })
	e.ingest("vecs", "all", cs...)
	if err := e.svc.BuildIndex(e.ctx, "vecs"); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.svc.IndexStats(e.ctx, "vecs"); st.Vectors != 1200 || st.Unlinked != 0 {
		t.Fatalf("index = %+v", st)
	}
	for _, filter := range []map[string]any{nil, {"part": 1}} {
		hit, total := 0, 0
		for range 50 {
			q := gen.Next()
			exact, err := e.svc.Search(e.ctx, rag.SearchRequest{Collection: "vecs", Vector: q, TopK: 10, Filter: filter, Exact: true})
			if err != nil {
				t.Fatal(err)
			}
			approx, err := e.svc.Search(e.ctx, rag.SearchRequest{Collection: "vecs", Vector: q, TopK: 10, Filter: filter})
			if err != nil {
				t.Fatal(err)
			}
			truth := map[int64]bool{}
			for _, h := range exact {
				truth[h.ChunkID] = true
			}
			for _, h := range approx {
				if filter != nil && h.Metadata["part"] != float64(1) {
					t.Fatalf("filtered search returned %+v", h.Metadata)
				}
				if truth[h.ChunkID] {
					hit++
				}
			}
			total += len(exact)
		}
		if r := float64(hit) / float64(total); r < 0.95 {
			t.Fatalf("filter %v: recall@10 = %.3f", filter, r)
		}
	}
}
