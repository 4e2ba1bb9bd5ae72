package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/configs"
	"github.com/stackbone/box/internal/cdp"
	"github.com/stackbone/box/rag"
)

// StudioConfig sets up `stackbone bench studio`.
type StudioConfig struct {
	// AdminURL is a PostgreSQL server where a throwaway database is made.
	AdminURL string
	// Rows is how many calls, sessions, runs and documents are seeded
	// (default 10,000 each).
	Rows int
	// Loads is how many page loads are measured per screen (default 15).
	Loads int
	// Browser is the Chromium binary (default: chromium on PATH).
	Browser string
	// Screenshots, when set, is a directory where a PNG of each main screen
	// is written after the measurements (the README's pictures).
	Screenshots string
	Logger      *slog.Logger
}

// PaintFigures are one screen's page-load figures, from the browser's
// Navigation and Paint Timing and Studio's marks.
type PaintFigures struct {
	Screen string
	N      int
	// FCP is first contentful paint; Rows is when the list's first page was
	// on screen; API is the list request's own duration (Resource Timing).
	FCP, Rows, API [2]time.Duration // p50, p95
}

// StudioReport is the result of `stackbone bench studio`.
type StudioReport struct {
	Setup   []string
	Figures []PaintFigures
}

// Print writes the report as a table.
func (r StudioReport) Print(w io.Writer) {
	fmt.Fprintln(w, "Studio: first paint of each list, measured in headless Chromium (Navigation and Paint Timing)")
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "screen\tloads\tFCP p50 ms\tFCP p95 ms\trows painted p50 ms\trows painted p95 ms\tlist API p50 ms\tlist API p95 ms\t")
	for _, f := range r.Figures {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", f.Screen, f.N, ms(f.FCP[0]), ms(f.FCP[1]),
			ms(f.Rows[0]), ms(f.Rows[1]), ms(f.API[0]), ms(f.API[1]))
	}
	tw.Flush()
}

const benchStudioKey = "bench-studio-key"

// Studio seeds Rows calls, sessions, runs and documents in a fresh
// database, serves the box's API and Studio on loopback, and loads each
// list screen Loads times in headless Chromium, each a full page load with
// the key already signed in (as after a reload), reporting first
// contentful paint, the moment the first page of rows was painted (two
// animation frames after Studio inserted them) and the list request's
// duration. The baseline is the sign-in page, Studio's shell with no data.
func Studio(ctx context.Context, cfg StudioConfig) (StudioReport, error) {
	if cfg.Rows <= 0 {
		cfg.Rows = 10000
	}
	if cfg.Loads <= 0 {
		cfg.Loads = 15
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pool, drop, err := Database(ctx, cfg.AdminURL, 0)
	if err != nil {
		return StudioReport{}, err
	}
	defer drop()

	boxCfg, err := config.Parse(configs.Dev) // the agents of `stackbone dev`, as an operator first sees them
	if err != nil {
		return StudioReport{}, err
	}
	dir, err := os.MkdirTemp("", "stackbone-bench-studio-")
	if err != nil {
		return StudioReport{}, err
	}
	defer os.RemoveAll(dir)
	boxCfg.SIP.Addr = "127.0.0.1:0" // beside a running `stackbone dev`
	served, stopBox, err := StartBox(ctx, pool, boxCfg, benchStudioKey, box.Options{DataDir: dir})
	if err != nil {
		return StudioReport{}, err
	}
	defer stopBox()
	retrieval := served.RAG
	if _, err := retrieval.CreateCollection(ctx, rag.CreateCollection{Name: "help-center", Description: "bench"}); err != nil {
		return StudioReport{}, err
	}
	cfg.Logger.Info("seeding", "rows", cfg.Rows)
	if err := seedStudio(ctx, pool, cfg.Rows); err != nil {
		return StudioReport{}, err
	}

	base := served.URL

	profile, err := os.MkdirTemp("", "stackbone-bench-chromium-")
	if err != nil {
		return StudioReport{}, err
	}
	defer os.RemoveAll(profile)
	br, err := cdp.Start(ctx, cdp.Options{Path: cfg.Browser, UserDataDir: profile})
	if err != nil {
		return StudioReport{}, fmt.Errorf("bench: %w (install chromium)", err)
	}
	defer br.Close()

	rep := StudioReport{Setup: []string{
		fmt.Sprintf("%d calls, sessions, runs and documents in the database; %d full page loads per screen, signed in", cfg.Rows, cfg.Loads),
		"rows painted: navigation start to two animation frames after the first page of 50 rows was inserted",
	}}
	// The baseline: the sign-in page (Studio's shell, no data, no key).
	if err := br.Navigate(ctx, base+"/studio/"); err != nil {
		return StudioReport{}, err
	}
	base0, err := measure(ctx, br, base+"/studio/", "(baseline) sign-in page, no data", "", `document.getElementById("root").dataset.state === "signin" && performance.getEntriesByName("first-contentful-paint").length > 0`, cfg.Loads)
	if err != nil {
		return StudioReport{}, err
	}
	rep.Figures = append(rep.Figures, base0)
	// Sign in once through the form, as an operator does; the loads below
	// are reloads of a signed-in tab.
	if err := br.Eval(ctx, `(() => { document.getElementById("signin-key").value = "`+benchStudioKey+`";
		document.getElementById("signin").requestSubmit(); })()`, nil); err != nil {
		return StudioReport{}, err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ok bool
		if err := br.Eval(ctx, `document.getElementById("root").dataset.state === "ready"`, &ok); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			return StudioReport{}, errors.New("bench: the sign-in did not finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range []struct{ name, hash, api string }{
		{"Calls", "#/calls", "/api/voice/calls"},
		{"Sessions", "#/sessions", "/api/sessions"},
		{"Runs", "#/runs", "/api/runs"},
		{"RAG documents", "#/rag/help-center", "/documents"},
	} {
		f, err := measure(ctx, br, base+"/studio/"+s.hash, s.name, s.api,
			`performance.getEntriesByName("studio:list-painted").length > 0 && performance.getEntriesByName("first-contentful-paint").length > 0`, cfg.Loads)
		if err != nil {
			return StudioReport{}, err
		}
		rep.Figures = append(rep.Figures, f)
	}
	if cfg.Screenshots != "" {
		if err := screenshots(ctx, br, base, pool, cfg.Screenshots); err != nil {
			return StudioReport{}, err
		}
		rep.Setup = append(rep.Setup, "screenshots written to "+cfg.Screenshots)
	}
	return rep, nil
}

// screenshots writes a PNG of each main screen into dir.
func screenshots(ctx context.Context, br *cdp.Browser, base string, pool *pgxpool.Pool, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.session_turns (session_id, turn, run_id, status, user_text, reply_text, input_tokens, output_tokens, duration_ms)
		SELECT id, t, gen_random_uuid(), 'succeeded', (ARRAY['Where is order A-1001?', 'Can I still return it?', 'And that order, when does the refund arrive?'])[t],
		       (ARRAY['Order A-1001 left our warehouse yesterday and arrives tomorrow.', 'Yes: you can return any item within 30 days of delivery.', 'The refund reaches your card within 5 days of the return.'])[t],
		       9800 + t * 600, 180, 1400 + t * 200
		FROM stackbone_platform.sessions, generate_series(1, 3) AS t WHERE id = (SELECT id FROM stackbone_platform.sessions ORDER BY last_activity_at DESC LIMIT 1)`); err != nil {
		return fmt.Errorf("bench: seed a transcript: %w", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE stackbone_platform.voice_calls SET
		transcript = '[{"turn":1,"role":"user","text":"Hi, I am interested in the AI master. Call me after four.","at":"2026-11-30T10:00:03Z"},
		               {"turn":1,"role":"assistant","text":"Happy to help. I will arrange an afternoon call back.","at":"2026-11-30T10:00:05Z"},
		               {"turn":2,"role":"user","text":"Thanks, bye.","at":"2026-11-30T10:00:12Z"},
		               {"turn":2,"role":"assistant","text":"Goodbye!","at":"2026-11-30T10:00:13Z"}]',
		memory = '{"read":true,"save":true,"identityKey":"phoneNumber","identity":"+34600111222","recalledFacts":3,"recalledCalls":2,"saved":true}',
		metrics = '[{"turn":1,"endOfUtteranceMs":420,"speechToTextMs":180,"timeToFirstTokenMs":390,"textToSpeechFirstByteMs":120,"wireToWireMs":1110},
		            {"turn":2,"endOfUtteranceMs":400,"speechToTextMs":150,"timeToFirstTokenMs":310,"textToSpeechFirstByteMs":110,"wireToWireMs":970}]'
		WHERE id = (SELECT id FROM stackbone_platform.voice_calls ORDER BY started_at DESC, id DESC LIMIT 1)`); err != nil {
		return fmt.Errorf("bench: seed a call: %w", err)
	}
	var session, call string
	_ = pool.QueryRow(ctx, `SELECT id FROM stackbone_platform.sessions ORDER BY last_activity_at DESC LIMIT 1`).Scan(&session)
	_ = pool.QueryRow(ctx, `SELECT id FROM stackbone_platform.voice_calls ORDER BY started_at DESC, id DESC LIMIT 1`).Scan(&call)
	for _, s := range []struct{ file, hash string }{
		{"sessions.png", "#/sessions"}, {"session.png", "#/sessions/" + session}, {"calls.png", "#/calls"}, {"call.png", "#/calls/" + call},
		{"agents.png", "#/agents"}, {"rag.png", "#/rag/help-center"}, {"system.png", "#/system"}, {"runs.png", "#/runs"},
	} {
		if err := br.Navigate(ctx, "about:blank"); err != nil {
			return err
		}
		if err := br.Navigate(ctx, base+"/studio/"+s.hash); err != nil {
			return err
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			var ok bool
			if err := br.Eval(ctx, `document.getElementById("root").dataset.state === "ready"`, &ok); err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: %s did not load", s.hash)
			}
			time.Sleep(20 * time.Millisecond)
		}
		png, err := br.Screenshot(ctx, 1280, 800)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, s.file), png, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// measure loads url n times (each from about:blank, so a full load) and
// reads the timings once done holds.
func measure(ctx context.Context, br *cdp.Browser, url, name, apiPath, done string, n int) (PaintFigures, error) {
	var fcp, rows, apiDur []time.Duration
	for range n {
		if err := br.Navigate(ctx, "about:blank"); err != nil {
			return PaintFigures{}, err
		}
		if err := br.Navigate(ctx, url); err != nil {
			return PaintFigures{}, err
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var ok bool
			if err := br.Eval(ctx, `!!(`+done+`)`, &ok); err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				var text string
				_ = br.Eval(ctx, `document.body.innerText.slice(0, 500)`, &text)
				return PaintFigures{}, fmt.Errorf("bench: %s did not finish loading: %s", name, text)
			}
			time.Sleep(10 * time.Millisecond)
		}
		var t struct {
			FCP, Rows, API float64
		}
		err := br.Eval(ctx, `new Promise(r => requestAnimationFrame(() => r({
			FCP: (performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime || 0,
			Rows: (performance.getEntriesByName("studio:list-painted")[0] || {}).startTime || 0,
			API: (performance.getEntriesByType("resource").find(e => `+"`"+apiPath+"`"+` && e.name.includes(`+"`"+apiPath+"`"+`)) || {}).duration || 0})))`, &t)
		if err != nil {
			return PaintFigures{}, err
		}
		if os.Getenv("STACKBONE_BENCH_TRACE") != "" {
			var trace any
			_ = br.Eval(ctx, `({nav: performance.getEntriesByType("navigation").map(e => [e.responseEnd|0, e.domContentLoadedEventEnd|0, e.loadEventEnd|0]),
				res: performance.getEntriesByType("resource").map(e => [e.name.replace(location.origin, ""), e.startTime|0, e.responseEnd|0]),
				marks: performance.getEntriesByType("mark").map(e => [e.name, e.startTime|0]), fcp: performance.getEntriesByName("first-contentful-paint").map(e => e.startTime|0)})`, &trace)
			fmt.Fprintf(os.Stderr, "%s: %+v\n", name, trace)
		}
		fcp = append(fcp, time.Duration(t.FCP*float64(time.Millisecond)))
		rows = append(rows, time.Duration(t.Rows*float64(time.Millisecond)))
		apiDur = append(apiDur, time.Duration(t.API*float64(time.Millisecond)))
	}
	p := func(l []time.Duration) [2]time.Duration {
		slices.Sort(l)
		return [2]time.Duration{pct(l, 50), pct(l, 95)}
	}
	return PaintFigures{Screen: name, N: n, FCP: p(fcp), Rows: p(rows), API: p(apiDur)}, nil
}

// seedStudio writes n rows in each list Studio pages through.
func seedStudio(ctx context.Context, pool *pgxpool.Pool, n int) error {
	for _, q := range []string{
		`INSERT INTO stackbone_platform.voice_calls (id, direction, agent_id, phone_number, status, started_at, ended_at, outcome, duration_seconds)
		 SELECT 'call_' || lpad(i::text, 7, '0'), (ARRAY['inbound','outbound','browser'])[i % 3 + 1], (ARRAY['support','receptionist'])[i % 2 + 1],
		        '+346' || lpad((i % 5000)::text, 8, '0'), 'ended', now() - i * interval '1 minute', now() - i * interval '1 minute' + interval '40 seconds',
		        'completed', 40 FROM generate_series(1, $1) AS i`,
		`INSERT INTO stackbone_platform.sessions (id, kind, agent_id, status, turns, input_tokens, output_tokens, preview, created_at, last_activity_at)
		 SELECT 'ses_' || lpad(i::text, 32, '0'), 'session', (ARRAY['support','receptionist'])[i % 2 + 1], 'completed', 3, 2000, 300,
		        'Where is order A-' || i || '? I ordered it last week and it has not arrived yet.', now() - i * interval '1 minute', now() - i * interval '1 minute'
		 FROM generate_series(1, $1) AS i`,
		`INSERT INTO stackbone_platform.runs (id, kind, agent_id, status, model, input_tokens, output_tokens, started_at, finished_at, duration_ms, metadata)
		 SELECT gen_random_uuid(), 'turn', 'support', 'succeeded', 'openai/gpt-4o-mini', 700, 120, now() - i * interval '1 minute',
		        now() - i * interval '1 minute' + interval '900 milliseconds', 900, '{"tools":["search_docs"]}' FROM generate_series(1, $1) AS i`,
		`INSERT INTO stackbone_platform.rag_documents (id, collection_id, source, filename, content_type, size_bytes, metadata, status, chunk_count, created_at, updated_at)
		 SELECT 'doc_' || lpad(i::text, 7, '0'), (SELECT id FROM stackbone_platform.rag_collections WHERE name = 'help-center'), 'upload',
		        'article-' || i || '.md', 'text/markdown', 4000, jsonb_build_object('lang', 'en', 'n', i), 'succeeded', 4,
		        now() - i * interval '1 minute', now() - i * interval '1 minute' FROM generate_series(1, $1) AS i`,
		`ANALYZE`,
	} {
		args := []any{n}
		if q == `ANALYZE` {
			args = nil
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("bench: seed: %w", err)
		}
	}
	return nil
}
