package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
)

// MemoryConfig sets up the person-memory load run.
type MemoryConfig struct {
	// AdminURL is a server where the run may create and drop its own
	// database. Required.
	AdminURL string
	// Facts and Calls are what each person holds (defaults 50 and 5).
	Facts, Calls int
	// Persons is how many people are seeded (default 400).
	Persons int
	// Requests per scenario (default 4000), split over Rounds interleaved
	// rounds so that noise from the machine falls on every scenario alike.
	Requests, Rounds int
	// Concurrency is the number of concurrent clients (default 4).
	Concurrency int
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// Memory measures recall and add against a fresh database and returns the
// report. The scripted model answers at once, so add's figures are the box's
// own overhead plus one loopback HTTP request to the model.
func Memory(ctx context.Context, cfg MemoryConfig) (Report, error) {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Facts, 50)
	def(&cfg.Calls, 5)
	def(&cfg.Persons, 400)
	def(&cfg.Requests, 4000)
	def(&cfg.Rounds, 5)
	def(&cfg.Concurrency, 4)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := cfg.Logger

	pool, drop, err := Database(ctx, cfg.AdminURL, cfg.Concurrency*2+8) // the box's listener and jobs hold a few
	if err != nil {
		return Report{}, err
	}
	defer drop()

	model := providertest.Start()
	defer model.Close()
	model.DiscardRequests()
	var seq atomic.Int64
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		n := seq.Add(1)
		return providertest.Reply{Content: fmt.Sprintf(
			`{"operations":[{"op":"update","handle":"f3","content":"Prefers a call back after 16:00 (note %d)."}],"summary":"Asked for an afternoon call back."}`, n)}
	})
	boxCfg := &config.Config{Providers: map[string]config.Provider{"openai": {BaseURL: model.URL(), APIKey: "bench"}},
		Memory: config.Memory{Model: "openai/bench"}, Agents: map[string]config.Agent{"support": {Model: config.ModelChain{"openai/bench"}}}}
	const benchKey = "bench-key"
	served, stopBox, err := StartBox(ctx, pool, boxCfg, benchKey, box.Options{})
	if err != nil {
		return Report{}, err
	}
	defer stopBox()
	svc := served.Memory

	log.Info("seeding", "persons", cfg.Persons, "facts", cfg.Facts, "calls", cfg.Calls)
	if err := seed(ctx, pool, cfg); err != nil {
		return Report{}, err
	}
	base := served.URL
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency * 2}}
	chat := openai.NewClientWithConfig(func() openai.ClientConfig {
		c := openai.DefaultConfig("bench")
		c.BaseURL = model.URL()
		return c
	}())

	person := func(w, i int) string { return fmt.Sprintf("+3460%07d", (w+i*cfg.Concurrency)%cfg.Persons) }
	post := func(path string, body any) error {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+benchKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return nil
	}
	transcript := []memory.Message{
		{Role: "user", Content: "Hi, it's me again. Please call me back after four, not in the morning."},
		{Role: "assistant", Content: "Of course, I will arrange an afternoon call back."},
	}

	type scenario struct {
		name     string
		baseline bool
		op       func(w, i int) error
		rec      recorder
	}
	scenarios := []*scenario{
		{name: "db round trip (SELECT 1)", baseline: true, op: func(w, i int) error {
			var one int
			return pool.QueryRow(ctx, "SELECT 1").Scan(&one)
		}},
		{name: "durable one-row commit (INSERT, fsync)", baseline: true, op: func(w, i int) error {
			_, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.system_settings (key, value) VALUES ($1, '1')
				ON CONFLICT (key) DO UPDATE SET value = excluded.value`, fmt.Sprintf("bench.%d", w))
			return err
		}},
		{name: fmt.Sprintf("recall, Go API (%d facts, %d calls)", cfg.Facts, cfg.Calls), op: func(w, i int) error {
			_, err := svc.Recall(ctx, memory.RecallRequest{AgentID: "support", UserID: person(w, i)})
			return err
		}},
		{name: "authenticated HTTP request (GET /api/runs?limit=1)", baseline: true, op: func(w, i int) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/runs?limit=1&kind=none", nil)
			req.Header.Set("Authorization", "Bearer "+benchKey)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}},
		{name: "recall, HTTP API", op: func(w, i int) error {
			return post("/api/memory/recall", map[string]any{"agentId": "support", "userId": person(w, i)})
		}},
		{name: "scripted model request alone", baseline: true, op: func(w, i int) error {
			_, err := chat.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "bench",
				Messages: []openai.ChatCompletionMessage{{Role: "user", Content: strings.Repeat("x", 4000)}}})
			return err
		}},
		{name: "add, Go API (model answers at once)", op: func(w, i int) error {
			_, err := svc.Add(ctx, memory.AddRequest{AgentID: "support", UserID: person(w, i), Transcript: memory.Transcript{Messages: transcript}})
			return err
		}},
		{name: "add, HTTP API (model answers at once)", op: func(w, i int) error {
			return post("/api/memory/add", map[string]any{"agentId": "support", "userId": person(w, i), "content": transcript})
		}},
	}
	// Warm up connections and caches.
	for _, s := range scenarios {
		var r recorder
		drive(cfg.Concurrency*4, cfg.Concurrency, &r, s.op)
	}
	per := cfg.Requests / cfg.Rounds
	for round := 0; round < cfg.Rounds; round++ {
		log.Info("round", "n", round+1, "of", cfg.Rounds)
		for _, s := range scenarios {
			if err := ctx.Err(); err != nil {
				return Report{}, err
			}
			drive(per, cfg.Concurrency, &s.rec, s.op)
		}
	}
	rep := Report{
		Title: "person memory: recall and add latency",
		Setup: []string{
			fmt.Sprintf("%d persons with %d facts and %d calls each; %d requests per scenario in %d interleaved rounds; concurrency %d",
				cfg.Persons, cfg.Facts, cfg.Calls, per*cfg.Rounds, cfg.Rounds, cfg.Concurrency),
			"PostgreSQL: " + serverVersion(ctx, pool) + "; add = read snapshot + model request on loopback + validation + one transaction",
		},
	}
	for _, s := range scenarios {
		rep.Figures = append(rep.Figures, s.rec.figures(s.name, s.baseline))
	}
	return rep, nil
}

// seed writes persons with facts and calls straight in SQL: setup for the
// measurement, not the thing measured.
func seed(ctx context.Context, pool *pgxpool.Pool, cfg MemoryConfig) error {
	now := time.Now().UTC()
	var factRows, callRows [][]any
	for p := 0; p < cfg.Persons; p++ {
		user := fmt.Sprintf("+3460%07d", p)
		for f := 0; f < cfg.Facts; f++ {
			t := now.Add(time.Duration(f) * time.Millisecond)
			factRows = append(factRows, []any{uuid.New(), "support", user,
				fmt.Sprintf("Fact number %d about this person: prefers afternoon calls and email follow-ups.", f), t, t})
		}
		for c := 0; c < cfg.Calls; c++ {
			callRows = append(callRows, []any{uuid.New(), "support", user, now.Add(-time.Duration(c) * time.Hour), 83.0, "scheduled",
				"Asked about the AI master and agreed an afternoon call back."})
		}
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"stackbone_platform", "memory_facts"},
		[]string{"id", "agent_id", "user_id", "content", "created_at", "updated_at"}, pgx.CopyFromRows(factRows)); err != nil {
		return fmt.Errorf("bench: seed facts: %w", err)
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"stackbone_platform", "memory_calls"},
		[]string{"id", "agent_id", "user_id", "started_at", "duration_seconds", "outcome", "summary"}, pgx.CopyFromRows(callRows)); err != nil {
		return fmt.Errorf("bench: seed calls: %w", err)
	}
	_, err := pool.Exec(ctx, "ANALYZE stackbone_platform.memory_facts; ANALYZE stackbone_platform.memory_calls")
	return err
}

func serverVersion(ctx context.Context, pool *pgxpool.Pool) string {
	var v, fsync, sc string
	_ = pool.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").Scan(&v, &fsync, &sc)
	return fmt.Sprintf("%s (fsync=%s, synchronous_commit=%s)", v, fsync, sc)
}
