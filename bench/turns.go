package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/migrations"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/stores"
	openaiwire "github.com/stackbone/box/wire/openai"
)

// TurnsConfig sets up the text-turn load run.
type TurnsConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	AdminURL string
	// Streams is the number of concurrent streams (default 50).
	Streams int
	// Turns per stream per scenario and round (default 20).
	Turns int
	// Rounds interleave the scenarios (default 3).
	Rounds int
	// ChunkDelay paces the scripted model's stream (default 20 ms between
	// chunks of three words, about a fast model's speed), so 50 streams are
	// concurrent the way real ones are rather than a CPU saturation test.
	// Negative streams everything at once.
	ChunkDelay time.Duration
	// Lockstep starts every stream of a round at once instead of spreading
	// their starts over one turn: the worst case of all streams finishing
	// (and committing) together.
	Lockstep bool
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// Turns measures what the box adds to a streamed chat turn over the OpenAI
// wire, against calling the scripted provider directly in the same run:
// time to first token and full turn, stateless and with a session.
func Turns(ctx context.Context, cfg TurnsConfig) (Report, error) {
	if cfg.Streams <= 0 {
		cfg.Streams = 50
	}
	if cfg.Turns <= 0 {
		cfg.Turns = 20
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ChunkDelay == 0 {
		cfg.ChunkDelay = 20 * time.Millisecond
	}
	cfg.ChunkDelay = max(cfg.ChunkDelay, 0)
	dbURL, drop, err := FreshDatabase(ctx, cfg.AdminURL)
	if err != nil {
		return Report{}, err
	}
	defer drop()
	if err := migrations.Apply(ctx, dbURL, nil); err != nil {
		return Report{}, err
	}
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return Report{}, err
	}
	pcfg.MaxConns = int32(cfg.Streams) + 4
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return Report{}, err
	}
	defer pool.Close()

	model := providertest.Start()
	defer model.Close()
	model.DiscardRequests()
	reply := strings.Repeat("This is a streamed answer of a few words. ", 6)
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: reply, ChunkDelay: cfg.ChunkDelay}
	})

	quiet := slog.New(slog.DiscardHandler)
	c, err := config.Parse([]byte("agents:\n  support:\n    model: openai/bench\n    instructions: You are the support agent.\n"))
	if err != nil {
		return Report{}, err
	}
	c.Providers = map[string]config.Provider{"openai": {BaseURL: model.URL()}}
	reg := provider.NewRegistry(c.Providers, nil)
	mem := memory.NewService(memory.Config{Pool: pool, Models: reg, Logger: quiet})
	settings := memory.NewSettings(pool, memory.AgentsFromConfig(c), quiet)
	// The tool sources of the real box: memory stores are looked up each turn.
	memoryStores := stores.New(stores.Config{Pool: pool, Agents: c.Agents, Models: reg, Logger: quiet})
	if err := memoryStores.Sync(ctx); err != nil {
		return Report{}, err
	}
	rt := agent.New(agent.Config{Pool: pool, Agents: c.Agents, Models: reg, Memory: mem, Settings: settings, Logger: quiet,
		Tools: agent.Sources(memoryStores.Tools())})
	keys := auth.NewStore(pool)
	const key = "bench-key"
	if err := keys.Ensure(ctx, "bench", key, auth.AllScopes); err != nil {
		return Report{}, err
	}
	srv := api.New(api.Config{Pool: pool, Keys: keys, Logger: quiet})
	memory.Register(srv, mem, settings, pool)
	agent.Register(srv, rt, c)
	runs.NewStore(pool).Register(srv)
	openaiwire.Register(srv, openaiwire.Config{Runtime: rt, Guard: srv.Guard, Logger: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Report{}, err
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Streams * 2, MaxConnsPerHost: cfg.Streams * 2}}

	stream := func(url, session string, body []byte) (ttft, full time.Duration, err error) {
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		if session != "" {
			req.Header.Set("x-stackbone-session", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return 0, 0, fmt.Errorf("%s: %s", resp.Status, b)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if ttft == 0 && strings.HasPrefix(line, "data: ") && strings.Contains(line, `"content":"`) {
				ttft = time.Since(start)
			}
			if line == "data: [DONE]" {
				break
			}
		}
		return ttft, time.Since(start), sc.Err()
	}
	body := func(model string) []byte {
		b, _ := json.Marshal(map[string]any{"model": model, "stream": true,
			"messages": []map[string]string{{"role": "user", "content": "Where is my order A-1001?"}}})
		return b
	}
	directBody, boxBody := body("bench"), body("support")
	type scenario struct {
		name      string
		baseline  bool
		url       string
		body      []byte
		session   bool
		ttft, all recorder
	}
	scenarios := []*scenario{
		{name: "provider directly", baseline: true, url: model.URL() + "/chat/completions", body: directBody},
		{name: "box, stateless", url: "http://" + ln.Addr().String() + "/openai/v1/chat/completions", body: boxBody},
		{name: "box, session", url: "http://" + ln.Addr().String() + "/openai/v1/chat/completions", body: boxBody, session: true},
	}
	run := func(s *scenario, round int) {
		var wg sync.WaitGroup
		for w := 0; w < cfg.Streams; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				// Spread the streams' starts over one turn, so they overlap as
				// independent conversations do rather than finishing in lockstep.
				if !cfg.Lockstep {
					time.Sleep(time.Duration(w) * (400 * time.Millisecond) / time.Duration(cfg.Streams))
				}
				session := ""
				if s.session {
					session = fmt.Sprintf("bench-%d-%d", round, w)
				}
				for i := 0; i < cfg.Turns; i++ {
					ttft, full, err := stream(s.url, session, s.body)
					s.ttft.add(ttft, err)
					s.all.add(full, err)
				}
			}(w)
		}
		wg.Wait()
	}
	for _, s := range scenarios { // warm up
		var r recorder
		_, _, err := stream(s.url, "", s.body)
		r.add(0, err)
		if err != nil {
			return Report{}, fmt.Errorf("bench: warm-up %s: %w", s.name, err)
		}
	}
	for round := 0; round < cfg.Rounds; round++ {
		cfg.Logger.Info("round", "n", round+1, "of", cfg.Rounds)
		for _, s := range scenarios {
			if err := ctx.Err(); err != nil {
				return Report{}, err
			}
			run(s, round)
		}
	}
	rep := Report{
		Title: "text turns over the OpenAI wire: time to first token and full turn",
		Setup: []string{
			fmt.Sprintf("%d concurrent streams (%s), %d turns each per scenario and round, %d interleaved rounds; a session stream sends %d turns on one key",
				cfg.Streams, map[bool]string{true: "all starting together", false: "starts spread over one turn"}[cfg.Lockstep], cfg.Turns, cfg.Rounds, cfg.Turns),
			fmt.Sprintf("scripted model streams %d characters in 3-word chunks, %s apart; PostgreSQL %s", len(reply), cfg.ChunkDelay, serverVersion(ctx, pool)),
			"overhead = the box's percentile minus the provider-directly percentile",
		},
	}
	base := scenarios[0]
	bt, ba := base.ttft.figures("", true), base.all.figures("", true)
	for _, s := range scenarios {
		t := s.ttft.figures(s.name+": time to first token", s.baseline)
		a := s.all.figures(s.name+": full turn", s.baseline)
		rep.Figures = append(rep.Figures, t, a)
		if !s.baseline {
			rep.Setup = append(rep.Setup, fmt.Sprintf("overhead of %s: first token p50 %.3f ms, p95 %.3f ms; full turn p50 %.3f ms, p95 %.3f ms",
				s.name, ms(t.P50-bt.P50), ms(t.P95-bt.P95), ms(a.P50-ba.P50), ms(a.P95-ba.P95)))
		}
	}
	return rep, nil
}
