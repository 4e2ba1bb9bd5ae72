package hnsw_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/rag/hnsw"
	"github.com/stackbone/box/rag/synth"
)

var (
	graphsMu sync.Mutex
	graphs   = map[int]*hnsw.Graph{}
)

// graphOf builds (once per process) a linked graph of n clustered vectors of
// 1536 dimensions and reports how long linking took.
func graphOf(b *testing.B, n int) *hnsw.Graph {
	graphsMu.Lock()
	defer graphsMu.Unlock()
	if g, ok := graphs[n]; ok {
		return g
	}
	gen := synth.New(1536, n, 11)
	g := hnsw.New(1536, hnsw.Config{})
	for range n {
		g.Add(gen.Next())
	}
	start := time.Now()
	for g.Link() {
	}
	b.Logf("linked %d vectors of 1536 dims in %v (%.0f/s)", n, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
	graphs[n] = g
	return g
}

// BenchmarkSearch measures the index alone (no database): search latency
// and recall@10 against exact search, per size and beam width.
//
//	go test ./rag/hnsw -run '^$' -bench 'Search/n=10000/' -benchtime 2000x
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, ef := range []int{64, 128} {
			b.Run(fmt.Sprintf("n=%d/ef=%d", n, ef), func(b *testing.B) {
				g := graphOf(b, n)
				qgen := synth.New(1536, n, 11) // same topics, fresh noise
				queries := make([][]float32, 200)
				for i := range queries {
					queries[i] = qgen.Next()
				}
				hit := 0
				for _, q := range queries {
					truth := map[uint32]bool{}
					for _, h := range g.Exact(q, 10, nil) {
						truth[h.Slot] = true
					}
					for _, h := range g.Search(q, 10, ef, nil) {
						if truth[h.Slot] {
							hit++
						}
					}
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s := time.Now()
					g.Search(queries[i%len(queries)], 10, ef, nil)
					lat = append(lat, time.Since(s))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(hit)/float64(10*len(queries)), "recall@10")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds()), "p95-µs")
			})
		}
	}
}

// BenchmarkExact is the baseline: a scan of every vector.
func BenchmarkExact(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			g := graphOf(b, n)
			q := synth.New(1536, n, 11).Next()
			for i := 0; i < b.N; i++ {
				g.Exact(q, 10, nil)
			}
		})
	}
}
