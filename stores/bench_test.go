package stores_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/bench/storesbench"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/stores"
)

// benchStore is a store of 10,000 memories of about 600 bytes.
func benchStore(b *testing.B) (*stores.Service, uuid.UUID) {
	b.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(b)
	svc := stores.New(stores.Config{Pool: pool, Logger: pgtest.Logger(b)})
	st, err := svc.CreateStore(ctx, stores.CreateStore{Name: "Bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := storesbench.Seed(ctx, pool, st.ID, stores.MaxMemories, 600); err != nil {
		b.Fatal(err)
	}
	return svc, st.ID
}

// measure runs op b.N times and reports its p95 in milliseconds.
func measure(b *testing.B, op func(i int) error) {
	b.Helper()
	for i := 0; i < 20; i++ { // warm caches and plans
		if err := op(i); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[(len(lat)*95+99)/100-1])/1e6, "p95-ms")
}

// BenchmarkStore10k measures list, read and search at 10,000 memories of
// about 600 bytes in one store, reporting each p95:
//
//	go test -run x -bench Store10k ./stores
//
// `stackbone bench stores` measures the same beside baselines and over HTTP.
func BenchmarkStore10k(b *testing.B) {
	svc, id := benchStore(b)
	ctx := context.Background()
	b.Run("ListRoot", func(b *testing.B) {
		measure(b, func(int) error { _, err := svc.ListMemories(ctx, id, "/", stores.ListOptions{}); return err })
	})
	b.Run("ListTopic", func(b *testing.B) {
		measure(b, func(i int) error {
			_, err := svc.ListMemories(ctx, id, storesbench.PathOf(i)[:10], stores.ListOptions{})
			return err
		})
	})
	b.Run("ListFolder", func(b *testing.B) {
		measure(b, func(i int) error {
			p := storesbench.PathOf(i)
			_, err := svc.ListMemories(ctx, id, p[:16], stores.ListOptions{})
			return err
		})
	})
	b.Run("ReadByPath", func(b *testing.B) {
		measure(b, func(i int) error {
			_, err := svc.GetMemoryByPath(ctx, id, storesbench.PathOf(i%stores.MaxMemories))
			return err
		})
	})
	b.Run("SearchRare", func(b *testing.B) {
		measure(b, func(i int) error {
			res, err := svc.SearchMemories(ctx, id, storesbench.RareWord(i%stores.MaxMemories), stores.SearchOptions{Limit: 10})
			if err == nil && len(res.Memories) != 1 {
				b.Fatalf("rare word found %d", len(res.Memories))
			}
			return err
		})
	})
	b.Run("SearchPhrase", func(b *testing.B) {
		measure(b, func(i int) error {
			f := strings.Fields(strings.ReplaceAll(storesbench.ContentOf(i*7919%stores.MaxMemories, 600), ".", ""))
			_, err := svc.SearchMemories(ctx, id, f[4]+" "+f[9], stores.SearchOptions{Limit: 10})
			return err
		})
	})
	b.Run("SearchCommon", func(b *testing.B) {
		measure(b, func(int) error {
			_, err := svc.SearchMemories(ctx, id, storesbench.CommonWord(), stores.SearchOptions{Limit: 10})
			return err
		})
	})
}
