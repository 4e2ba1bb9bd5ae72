package storesbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/bench"
	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/stores"
)

// Config sets up a load run.
type Config struct {
	// AdminURL is a server where the run may create and drop its own
	// database. Required.
	AdminURL string
	// Memories in the store (default 10,000) of about ContentBytes each
	// (default 600).
	Memories, ContentBytes int
	// Requests per scenario (default 2000), split over Rounds interleaved
	// rounds (default 5) so the machine's noise falls on every scenario.
	Requests, Rounds int
	// Concurrency is the number of concurrent clients (default 1).
	Concurrency int
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// Run seeds one store and measures list, read and search through the Go
// API and the HTTP API beside baselines, all in one process.
func Run(ctx context.Context, cfg Config) (bench.Report, error) {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Memories, stores.MaxMemories)
	def(&cfg.ContentBytes, 600)
	def(&cfg.Requests, 2000)
	def(&cfg.Rounds, 5)
	def(&cfg.Concurrency, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Memories > stores.MaxMemories {
		return bench.Report{}, fmt.Errorf("storesbench: a store holds at most %d memories", stores.MaxMemories)
	}
	log := cfg.Logger
	pool, drop, err := bench.Database(ctx, cfg.AdminURL, cfg.Concurrency*2+8) // the box's listener and jobs hold a few
	if err != nil {
		return bench.Report{}, err
	}
	defer drop()
	const key = "bench-stores-key"
	served, stopBox, err := bench.StartBox(ctx, pool, &config.Config{}, key, box.Options{})
	if err != nil {
		return bench.Report{}, err
	}
	defer stopBox()
	svc := served.Stores
	st, err := svc.CreateStore(ctx, stores.CreateStore{Name: "Bench"})
	if err != nil {
		return bench.Report{}, err
	}
	log.Info("seeding", "memories", cfg.Memories, "bytes", cfg.ContentBytes)
	if err := Seed(ctx, pool, st.ID, cfg.Memories, cfg.ContentBytes); err != nil {
		return bench.Report{}, err
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE stackbone_platform.memories"); err != nil {
		return bench.Report{}, err
	}

	base := served.URL + "/api/memory_stores/" + st.ID.String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency * 2}}
	get := func(u string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("%s: %s", u, resp.Status)
		}
		return nil
	}
	n := cfg.Memories
	folder := func(i int) string { p := PathOf(i % n); return p[:strings.LastIndexByte(p, '/')+1] }
	pick := func(w, i int) int { return (w*7919 + i*104729) % n }
	var ids []string
	rows, err := pool.Query(ctx, `SELECT id::text FROM stackbone_platform.memories WHERE store_id = $1 ORDER BY path`, st.ID)
	if err != nil {
		return bench.Report{}, err
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return bench.Report{}, err
	}
	// Two words from one memory's content, as an agent recalling a phrase
	// would search: mostly common words, matched by many memories.
	two := func(w, i int) string {
		f := strings.Fields(strings.ReplaceAll(ContentOf(pick(w, i), cfg.ContentBytes), ".", ""))
		return f[4] + " " + f[9]
	}

	type scenario struct {
		name     string
		baseline bool
		op       func(w, i int) error
		rec      recorder
	}
	scenarios := []*scenario{
		{name: "db round trip (SELECT 1)", baseline: true, op: func(int, int) error {
			var one int
			return pool.QueryRow(ctx, "SELECT 1").Scan(&one)
		}},
		{name: "one row by primary key (SELECT content)", baseline: true, op: func(w, i int) error {
			var c string
			return pool.QueryRow(ctx, "SELECT content FROM stackbone_platform.memories WHERE id = $1", ids[pick(w, i)]).Scan(&c)
		}},
		{name: fmt.Sprintf("list, Go API (root: %d folders)", Topics), op: func(int, int) error {
			_, err := svc.ListMemories(ctx, st.ID, "/", stores.ListOptions{})
			return err
		}},
		{name: fmt.Sprintf("list, Go API (a folder of %d memories)", n/(Topics*Subs)), op: func(w, i int) error {
			_, err := svc.ListMemories(ctx, st.ID, folder(pick(w, i)), stores.ListOptions{})
			return err
		}},
		{name: "read by path, Go API", op: func(w, i int) error {
			_, err := svc.GetMemoryByPath(ctx, st.ID, PathOf(pick(w, i)))
			return err
		}},
		{name: "search, Go API (rare word: 1 match)", op: func(w, i int) error {
			_, err := svc.SearchMemories(ctx, st.ID, RareWord(pick(w, i)), stores.SearchOptions{Limit: 10})
			return err
		}},
		{name: "search, Go API (two words of a memory's content)", op: func(w, i int) error {
			_, err := svc.SearchMemories(ctx, st.ID, two(w, i), stores.SearchOptions{Limit: 10})
			return err
		}},
		{name: fmt.Sprintf("search, Go API (word in %d%% of memories)", commonShare(ctx, pool)), op: func(int, int) error {
			_, err := svc.SearchMemories(ctx, st.ID, CommonWord(), stores.SearchOptions{Limit: 10})
			return err
		}},
		{name: "authenticated HTTP request (unknown route, 404)", baseline: true, op: func(int, int) error {
			return get(served.URL + "/api/nothing-here")
		}},
		{name: fmt.Sprintf("list, HTTP API (a folder of %d memories)", n/(Topics*Subs)), op: func(w, i int) error {
			return get(base + "/memories?path_prefix=" + url.QueryEscape(folder(pick(w, i))))
		}},
		{name: "read by path, HTTP API", op: func(w, i int) error {
			return get(base + "/memory?path=" + url.QueryEscape(PathOf(pick(w, i))))
		}},
		{name: "search, HTTP API (rare word)", op: func(w, i int) error {
			return get(base + "/memories/search?limit=10&query=" + RareWord(pick(w, i)))
		}},
	}
	for _, s := range scenarios {
		var r recorder
		drive(cfg.Concurrency*10, cfg.Concurrency, &r, s.op)
		if r.errors > 0 {
			return bench.Report{}, fmt.Errorf("storesbench: %s fails: %v", s.name, r.firstErr)
		}
	}
	per := cfg.Requests / cfg.Rounds
	for round := 0; round < cfg.Rounds; round++ {
		log.Info("round", "n", round+1, "of", cfg.Rounds)
		for _, s := range scenarios {
			if err := ctx.Err(); err != nil {
				return bench.Report{}, err
			}
			drive(per, cfg.Concurrency, &s.rec, s.op)
		}
	}
	var version, fsync string
	_ = pool.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync')").Scan(&version, &fsync)
	rep := bench.Report{
		Title: "memory stores: list, read and search latency",
		Setup: []string{
			fmt.Sprintf("one store of %d memories of about %d bytes (%d topics x %d folders); %d requests per scenario in %d interleaved rounds; concurrency %d",
				n, cfg.ContentBytes, Topics, Subs, per*cfg.Rounds, cfg.Rounds, cfg.Concurrency),
			fmt.Sprintf("PostgreSQL %s (fsync=%s); search ranks the %d newest matches; baselines measured in the same process", version, fsync, stores.MaxSearchResults),
		},
	}
	for _, s := range scenarios {
		rep.Figures = append(rep.Figures, s.rec.figures(s.name, s.baseline))
	}
	return rep, nil
}

func commonShare(ctx context.Context, pool *pgxpool.Pool) int {
	var share float64
	_ = pool.QueryRow(ctx, `SELECT 100.0 * count(*) FILTER (WHERE search @@ websearch_to_tsquery('english', $1)) / greatest(count(*), 1)
		FROM stackbone_platform.memories`, CommonWord()).Scan(&share)
	return int(share + 0.5)
}

// recorder collects latencies from many goroutines.
type recorder struct {
	mu       sync.Mutex
	lat      []time.Duration
	errors   int
	firstErr error
}

func (r *recorder) add(d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.errors == 0 {
			r.firstErr = err
		}
		r.errors++
		return
	}
	r.lat = append(r.lat, d)
}

func (r *recorder) figures(name string, baseline bool) bench.Figures {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := slices.Clone(r.lat)
	slices.Sort(l)
	f := bench.Figures{Name: name, Baseline: baseline, N: len(l), Errors: r.errors}
	if len(l) == 0 {
		return f
	}
	pct := func(p int) time.Duration { return l[max((len(l)*p+99)/100, 1)-1] }
	f.P50, f.P95, f.P99, f.Max = pct(50), pct(95), pct(99), l[len(l)-1]
	return f
}

// drive runs op n times from c goroutines, recording each latency.
func drive(n, c int, rec *recorder, op func(worker, i int) error) {
	var wg sync.WaitGroup
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < n/c; i++ {
				start := time.Now()
				err := op(w, i)
				rec.add(time.Since(start), err)
			}
		}(w)
	}
	wg.Wait()
}
