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
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
)

// TurnsConfig sets up the text-turn load run.
type TurnsConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	AdminURL string
	// Streams is the number of concurrent clients (default 50).
	Streams int
	// Turns per stream per scenario and round in the paced phase (default 10).
	Turns int
	// SoloTurns is the number of turns of the one-client phase per scenario
	// and round (default 100).
	SoloTurns int
	// Requests per scenario and round in the CPU phase (default 3000).
	Requests int
	// Rounds interleave the scenarios (default 3).
	Rounds int
	// ChunkDelay paces the scripted model's stream in the paced phase
	// (default 20 ms between chunks of three words, about a fast model's
	// speed), so the streams are concurrent the way real ones are.
	// Negative streams everything at once.
	ChunkDelay time.Duration
	// Lockstep starts every stream of a round at once instead of spreading
	// their starts over one turn: the worst case of all streams finishing
	// (and committing) together.
	Lockstep bool
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// TurnsReport is the result of Turns: latency figures, and the CPU each
// target used per 1,000 requests of the CPU phase.
type TurnsReport struct {
	Report
	CPU []TurnsCPU
}

// TurnsCPU is one target's CPU in the phase where the upstream answers at
// once: this process (clients, upstream, proxy or box) and the PostgreSQL
// backends of the run's database, in CPU seconds per 1,000 requests.
type TurnsCPU struct {
	Name     string
	Requests int
	Errors   int
	Process  float64
	Postgres float64 // -1 when the server's processes cannot be read
	P50      time.Duration
	P99      time.Duration
}

// Print writes the latency table, then the CPU table.
func (r TurnsReport) Print(w io.Writer) {
	r.Report.Print(w)
	fmt.Fprintln(w, "CPU phase: 50 clients, non-streaming requests, the upstream answers at once")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\trequests\terrors\tprocess cpu-s/1000\tpostgres cpu-s/1000\ttotal cpu-s/1000\tadded over direct\tlatency p50 ms\tp99 ms\t")
	base := r.CPU[0]
	for _, c := range r.CPU {
		pg, total := "n/a", c.Process
		if c.Postgres >= 0 {
			pg, total = fmt.Sprintf("%.3f", c.Postgres), c.Process+c.Postgres
		}
		added := "-"
		if c.Name != base.Name {
			added = fmt.Sprintf("%.3f", total-base.Process-max(base.Postgres, 0))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%s\t%.3f\t%s\t%.3f\t%.3f\t\n", c.Name, c.Requests, c.Errors, c.Process, pg, total, added, ms(c.P50), ms(c.P99))
	}
	tw.Flush()
	if len(r.CPU) >= 3 {
		added := func(c TurnsCPU) float64 {
			return c.Process + max(c.Postgres, 0) - base.Process - max(base.Postgres, 0)
		}
		proxy, box := r.CPU[1], r.CPU[2]
		fmt.Fprintf(w, "box / bare proxy, total CPU per request: %.2f; CPU each adds over the direct requests: %.2f\n",
			(box.Process+max(box.Postgres, 0))/(proxy.Process+max(proxy.Postgres, 0)), added(box)/added(proxy))
	}
}

// Turns measures what the box adds to a chat turn over the OpenAI wire,
// side by side in one run with the scripted provider called directly and
// through a bare reverse proxy (httputil.ReverseProxy, one hop and nothing
// else): time to first token with one client and with Streams clients on
// paced streams, stateless and with a session; then, with the upstream
// answering at once, the CPU per 1,000 non-streamed requests.
func Turns(ctx context.Context, cfg TurnsConfig) (TurnsReport, error) {
	if cfg.Streams <= 0 {
		cfg.Streams = 50
	}
	if cfg.Turns <= 0 {
		cfg.Turns = 10
	}
	if cfg.SoloTurns <= 0 {
		cfg.SoloTurns = 100
	}
	if cfg.Requests <= 0 {
		cfg.Requests = 3000
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
	// The box's default pool size (cmd/stackbone): more clients than
	// connections is the production shape.
	pool, drop, err := Database(ctx, cfg.AdminURL, 32)
	if err != nil {
		return TurnsReport{}, err
	}
	defer drop()

	model := providertest.Start()
	defer model.Close()
	model.DiscardRequests()
	reply := strings.Repeat("This is a streamed answer of a few words. ", 6)
	short := "A short answer of two chunks."
	// What the upstream does now: "paced" streams the long reply, "solo"
	// streams a short reply paced the same, "cpu" answers at once.
	var phase atomic.Value
	phase.Store("paced")
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		switch phase.Load().(string) {
		case "solo":
			return providertest.Reply{Content: short, ChunkDelay: cfg.ChunkDelay}
		case "cpu":
			return providertest.Reply{Content: reply}
		}
		return providertest.Reply{Content: reply, ChunkDelay: cfg.ChunkDelay}
	})

	c, err := config.Parse([]byte("agents:\n  support:\n    model: openai/bench\n    instructions: You are the support agent.\n"))
	if err != nil {
		return TurnsReport{}, err
	}
	c.Providers = map[string]config.Provider{"openai": {BaseURL: model.URL()}}
	const key = "bench-key"
	served, stopBox, err := StartBox(ctx, pool, c, key, box.Options{})
	if err != nil {
		return TurnsReport{}, err
	}
	defer stopBox()

	// The baseline hop: a bare reverse proxy to the same upstream.
	upstream, err := url.Parse(model.URL())
	if err != nil {
		return TurnsReport{}, err
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.FlushInterval = -1
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.Streams * 2
	proxy.Transport = tr
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return TurnsReport{}, err
	}
	// The request body is read before it is forwarded, as the box reads its
	// own: streamed through, the transport's last read of it can land after
	// the scripted model's answer closed it (net/http closes an inbound body
	// when the response's headers go out), and the transport then drops the
	// upstream connection mid-answer ("use of closed network connection"; the
	// client sees an unexpected EOF on 1-4 % of streamed turns).
	buffered := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		proxy.ServeHTTP(w, r)
	})
	ps := &http.Server{Handler: http.StripPrefix("/proxy", buffered)}
	go ps.Serve(pln)
	defer ps.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Streams * 2, MaxConnsPerHost: cfg.Streams * 2}}
	// call sends one request; for a stream it reads to [DONE] and times
	// the first content chunk.
	call := func(url, session string, body []byte, stream bool) (ttft, full time.Duration, err error) {
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
		if !stream {
			var out openai.ChatCompletionResponse
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				return 0, 0, err
			}
			if len(out.Choices) != 1 || out.Choices[0].Message.Content != reply {
				return 0, 0, fmt.Errorf("bench: unexpected answer")
			}
			d := time.Since(start)
			_, _ = io.Copy(io.Discard, resp.Body)
			return d, d, nil
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
		full = time.Since(start)
		// Read to the end, so the connection is reused as a client's is.
		_, _ = io.Copy(io.Discard, resp.Body)
		return ttft, full, sc.Err()
	}
	body := func(model string, stream bool) []byte {
		b, _ := json.Marshal(map[string]any{"model": model, "stream": stream,
			"messages": []map[string]string{{"role": "user", "content": "Where is my order A-1001?"}}})
		return b
	}
	boxURL := served.URL + "/openai/v1/chat/completions"
	type target struct {
		name     string
		baseline bool
		url      string
		model    string
		session  bool
	}
	targets := []target{
		{name: "provider directly", baseline: true, url: model.URL() + "/chat/completions", model: "bench"},
		{name: "bare reverse proxy", baseline: true, url: "http://" + pln.Addr().String() + "/proxy/chat/completions", model: "bench"},
		{name: "box, stateless", url: boxURL, model: "support"},
		{name: "box, session", url: boxURL, model: "support", session: true},
	}
	type scenario struct {
		target
		ttft, all recorder
	}
	newScenarios := func(ts []target) []*scenario {
		out := make([]*scenario, len(ts))
		for i, t := range ts {
			out[i] = &scenario{target: t}
		}
		return out
	}
	solo, paced := newScenarios(targets), newScenarios(targets)
	// A session client starts a new session every sessionTurns turns, as
	// conversations end: the session's history (loaded and sent upstream
	// each turn) stays the size of a real conversation's.
	const sessionTurns = 10
	var mu sync.Mutex
	sessions := 0
	// run drives one scenario: clients streams of turns turns each.
	run := func(s *scenario, clients, turns int, spread bool) {
		var wg sync.WaitGroup
		for w := 0; w < clients; w++ {
			mu.Lock()
			sessions++
			session := ""
			if s.session {
				session = fmt.Sprintf("bench-%d", sessions)
			}
			mu.Unlock()
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				// Spread the streams' starts over one turn, so they overlap as
				// independent conversations do rather than finishing in lockstep.
				if spread {
					time.Sleep(time.Duration(w) * (400 * time.Millisecond) / time.Duration(clients))
				}
				for i := 0; i < turns; i++ {
					if s.session && i > 0 && i%sessionTurns == 0 {
						mu.Lock()
						sessions++
						session = fmt.Sprintf("bench-%d", sessions)
						mu.Unlock()
					}
					ttft, full, err := call(s.url, session, body(s.model, true), true)
					s.ttft.add(ttft, err)
					s.all.add(full, err)
				}
			}(w)
		}
		wg.Wait()
	}
	for _, t := range targets { // warm up
		if _, _, err := call(t.url, "", body(t.model, true), true); err != nil {
			return TurnsReport{}, fmt.Errorf("bench: warm-up %s: %w", t.name, err)
		}
		if _, _, err := call(t.url, "", body(t.model, false), false); err != nil {
			return TurnsReport{}, fmt.Errorf("bench: warm-up %s: %w", t.name, err)
		}
	}
	load0 := loadAverage()
	for round := 0; round < cfg.Rounds; round++ {
		cfg.Logger.Info("bench turns: round", "n", round+1, "of", cfg.Rounds)
		phase.Store("solo")
		for _, s := range solo {
			if err := ctx.Err(); err != nil {
				return TurnsReport{}, err
			}
			run(s, 1, cfg.SoloTurns, false)
		}
		phase.Store("paced")
		for _, s := range paced {
			if err := ctx.Err(); err != nil {
				return TurnsReport{}, err
			}
			run(s, cfg.Streams, cfg.Turns, !cfg.Lockstep)
		}
	}
	load1 := loadAverage()

	// The CPU phase: non-streaming clients, the upstream answering at once.
	phase.Store("cpu")
	cpuTargets := targets[:3]
	cpu := make([]TurnsCPU, len(cpuTargets))
	lat := make([]recorder, len(cpuTargets))
	for round := 0; round < cfg.Rounds; round++ {
		for i, t := range cpuTargets {
			if err := ctx.Err(); err != nil {
				return TurnsReport{}, err
			}
			b := body(t.model, false)
			pg0 := backendsCPU(ctx, pool)
			p0 := processCPU()
			drive(cfg.Requests, cfg.Streams, &lat[i], func(int, int) error {
				_, _, err := call(t.url, "", b, false)
				return err
			})
			p1 := processCPU()
			pg1 := backendsCPU(ctx, pool)
			cpu[i].Name = t.name
			cpu[i].Process += (p1 - p0).Seconds()
			if pg0 < 0 || pg1 < 0 || cpu[i].Postgres < 0 {
				cpu[i].Postgres = -1
			} else {
				cpu[i].Postgres += (pg1 - pg0).Seconds()
			}
		}
	}
	for i := range cpu {
		f := lat[i].figures("", false)
		cpu[i].Requests, cpu[i].Errors, cpu[i].P50, cpu[i].P99 = f.N, f.Errors, f.P50, f.P99
		per := 1000 / float64(max(f.N+f.Errors, 1))
		cpu[i].Process *= per
		if cpu[i].Postgres >= 0 {
			cpu[i].Postgres *= per
		}
	}
	load2 := loadAverage()

	rep := TurnsReport{CPU: cpu, Report: Report{
		Title: "text turns over the OpenAI wire: time to first token and full turn, beside the provider directly and a bare reverse proxy",
		Setup: []string{
			fmt.Sprintf("one client: %d streamed turns per scenario and round (a short reply); %d concurrent clients (%s): %d streamed turns each; %d interleaved rounds; a session client sends %d turns on each session key",
				cfg.SoloTurns, cfg.Streams, map[bool]string{true: "all starting together", false: "starts spread over one turn"}[cfg.Lockstep], cfg.Turns, cfg.Rounds, sessionTurns),
			fmt.Sprintf("scripted model streams %d characters in 3-word chunks, %s apart; PostgreSQL %s; GOMAXPROCS=%d", len(reply), cfg.ChunkDelay, serverVersion(ctx, pool), runtimeProcs()),
			fmt.Sprintf("load average (1 min): %s at the start, %s after the latency phases, %s after the CPU phase", load0, load1, load2),
			"added = the scenario's percentile minus the provider-directly percentile",
		},
	}}
	for _, group := range []struct {
		label     string
		scenarios []*scenario
	}{{"1 client", solo}, {fmt.Sprintf("%d clients", cfg.Streams), paced}} {
		bt, ba := group.scenarios[0].ttft.figures("", true), group.scenarios[0].all.figures("", true)
		for _, s := range group.scenarios {
			t := s.ttft.figures(group.label+", "+s.name+": first token", s.baseline)
			a := s.all.figures(group.label+", "+s.name+": full turn", s.baseline)
			rep.Figures = append(rep.Figures, t, a)
			if s.ttft.first != nil {
				rep.Setup = append(rep.Setup, fmt.Sprintf("first error of %s, %s: %v", s.name, group.label, s.ttft.first))
			}
			if s.name != group.scenarios[0].name {
				rep.Setup = append(rep.Setup, fmt.Sprintf("added by %s, %s: first token p50 %.3f ms, p95 %.3f ms; full turn p50 %.3f ms, p95 %.3f ms",
					s.name, group.label, ms(t.P50-bt.P50), ms(t.P95-bt.P95), ms(a.P50-ba.P50), ms(a.P95-ba.P95)))
			}
		}
	}
	return rep, nil
}

// loadAverage is the machine's one-minute load average ("?" off Linux).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// backendsCPU is the CPU time used so far by the PostgreSQL backends
// serving the pool's database, read from /proc: -1 when the server runs
// elsewhere or its processes cannot be read. Backends that ended since
// are not counted, so the pool's connections should outlive a phase.
func backendsCPU(ctx context.Context, pool *pgxpool.Pool) time.Duration {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return -1
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(pids) == 0 {
		return -1
	}
	total, read := time.Duration(0), false
	for _, pid := range pids {
		// A backend that ended since the query (a connection the pool
		// closed) is left out, not the whole reading.
		if d := pidCPU(int(pid)); d >= 0 {
			total, read = total+d, true
		}
	}
	if !read {
		return -1
	}
	return total
}
