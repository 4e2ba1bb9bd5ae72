package rag_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/rag/synth"
)

// searchFixture stores n clustered 1536-dimension chunks (precomputed
// vectors: the embedding call is not what is measured) in a fresh
// database and links the index. It lives until b ends.
func searchFixture(b *testing.B, n int) (*rag.Service, string, *synth.Gen) {
	e := newEnv(b)
	ctx := context.Background()
	if _, err := e.svc.CreateCollection(ctx, rag.CreateCollection{Name: "bench", Dimensions: 1536}); err != nil {
		b.Fatal(err)
	}
	gen := synth.New(1536, n, 1)
	for d := 0; d*1000 < n; d++ {
		m := min(1000, n-d*1000)
		req := rag.IngestRequest{ID: fmt.Sprintf("doc-%d", d), Collection: "bench", Chunks: make([]rag.Chunk, m)}
		vecs := make([][]float32, m)
		for i := range m {
			req.Chunks[i] = rag.Chunk{Content: fmt.Sprintf("chunk %d of %d", i, d)}
			vecs[i] = gen.Next()
		}
		if _, err := e.svc.IngestEmbedded(ctx, req, vecs); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := e.svc.BuildIndex(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d chunks: index loaded and linked in %v", n, time.Since(start).Round(time.Millisecond))
	return e.svc, "bench", gen
}

// BenchmarkSearch measures Search (the embedding call excluded; the hits
// are read from Postgres) on the graph and on the exact scan, with
// recall@10 of the graph against the exact answers.
//
//	go test ./rag -run '^$' -bench 'Search/n=10000$' -benchtime 500x
//	go test ./rag -run '^$' -bench 'Search/n=100000$' -benchtime 500x -timeout 30m
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			svc, name, gen := searchFixture(b, n)
			queries := make([][]float32, 200)
			for i := range queries {
				queries[i] = gen.Next()
			}
			for _, mode := range []string{"graph", "exact"} {
				b.Run(mode, func(b *testing.B) {
					ctx := context.Background()
					hit, total := 0, 0
					if mode == "graph" {
						for _, q := range queries {
							truth := map[int64]bool{}
							ex, _ := svc.Search(ctx, rag.SearchRequest{Collection: name, Vector: q, TopK: 10, Exact: true})
							for _, h := range ex {
								truth[h.ChunkID] = true
							}
							got, _ := svc.Search(ctx, rag.SearchRequest{Collection: name, Vector: q, TopK: 10})
							for _, h := range got {
								if truth[h.ChunkID] {
									hit++
								}
							}
							total += len(ex)
						}
					}
					lat := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						s := time.Now()
						if _, err := svc.Search(ctx, rag.SearchRequest{Collection: name, Vector: queries[i%len(queries)], TopK: 10, Exact: mode == "exact"}); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(s))
					}
					b.StopTimer()
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(lat[(len(lat)*95+99)/100-1].Microseconds())/1000, "p95-ms")
					if total > 0 {
						b.ReportMetric(float64(hit)/float64(total), "recall@10")
					}
				})
			}
		})
	}
}

// BenchmarkIngest measures code ingest end to end (embeddings from the
// scripted provider over HTTP, then storage) in chunks per second, 500
// chunks per call.
//
//	go test ./rag -run '^$' -bench Ingest -benchtime 20x
func BenchmarkIngest(b *testing.B) {
	e := newEnv(b)
	gen := synth.New(1536, 10_000, 3)
	vecs := make([][]float32, 1000)
	for i := range vecs {
		vecs[i] = gen.Next()
	}
	e.prov.EmbedWith(func(_, text string, _ int) []float32 {
		i, _ := strconv.Atoi(strings.TrimPrefix(text, "chunk "))
		return vecs[i%len(vecs)]
	})
	ctx := context.Background()
	const per = 500
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := rag.IngestRequest{ID: fmt.Sprintf("doc-%d", i), Chunks: make([]rag.Chunk, per)}
		for j := range per {
			req.Chunks[j] = rag.Chunk{Content: fmt.Sprintf("chunk %d", j)}
		}
		if _, err := e.svc.Ingest(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "chunks/s")
}
