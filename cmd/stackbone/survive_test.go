package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/lockedbuf"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

// A stop is a path like any other: what a caller heard survives SIGTERM
// (the call drains, ends as shutdown, is saved, then the box exits) and
// kill -9 (the next box closes the call as box_lost from the turns
// persisted as it went, and saves them once).
func TestCallsSurviveStopAndCrash(t *testing.T) {
	t.Parallel()
	bin := buildBox(t)
	for _, tc := range []struct {
		name   string
		signal os.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"kill -9", syscall.SIGKILL}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL, pool := testDatabase(t)
			model := providertest.New(t)
			model.RespondTranscripts(func([]byte) string { return "I prefer to be called in the morning." })
			var mu sync.Mutex
			extractions := 0
			model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
				if strings.Contains(req.Messages[0].Content, `"operations"`) {
					mu.Lock()
					extractions++
					mu.Unlock()
					return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Prefers morning calls."}],"summary":"Asked for morning calls."}`}
				}
				return providertest.Reply{Content: "Noted, mornings it is."}
			})
			cfgPath := writeConfig(t, dbURL)
			box := startBox(t, bin, cfgPath, model.URL())

			call, callID := heardCall(t, box, pool, "+34600333444")
			box.cmd.Process.Signal(tc.signal)
			code := box.wait(t, 60*time.Second)

			wantOutcome := "shutdown"
			if tc.signal == syscall.SIGKILL {
				wantOutcome = "box_lost"
				var status string
				pool.QueryRow(ctx, `SELECT status FROM stackbone_platform.voice_calls WHERE id = $1`, callID).Scan(&status)
				if status == "ended" {
					t.Fatal("the call ended although its box was killed")
				}
				// The next box, on the same database, finds the lost call.
				startBox(t, bin, cfgPath, model.URL())
			} else {
				if code != 0 {
					t.Fatalf("the box exited with %d after SIGTERM\n%s", code, box.logs())
				}
				select {
				case <-call.Ended():
				case <-time.After(10 * time.Second):
					t.Fatal("the caller got no BYE from the stopping box")
				}
			}
			var outcome string
			var saved bool
			var turns int
			poll.Until(t, "the call's completion", 60*time.Second, func() bool {
				err := pool.QueryRow(ctx, `SELECT coalesce(outcome, ''), coalesce((memory->>'saved')::bool, false),
					jsonb_array_length(transcript) FROM stackbone_platform.voice_calls WHERE id = $1 AND status = 'ended'`,
					callID).Scan(&outcome, &saved, &turns)
				return err == nil && saved
			})
			if outcome != wantOutcome || turns < 3 {
				t.Fatalf("outcome %q with %d heard turns, want %s with at least 3", outcome, turns, wantOutcome)
			}
			var calls int
			var fact string
			pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.memory_calls WHERE user_id = '+34600333444' AND outcome = $1`,
				wantOutcome).Scan(&calls)
			pool.QueryRow(ctx, `SELECT content FROM stackbone_platform.memory_facts WHERE user_id = '+34600333444'`).Scan(&fact)
			mu.Lock()
			n := extractions
			mu.Unlock()
			if calls != 1 || fact != "Prefers morning calls." || n != 1 {
				t.Fatalf("saved %d call records (fact %q) from %d extractions, want exactly one", calls, fact, n)
			}
		})
	}
}

// A lost call's save survives the death of the box that recovers it: box
// A dies mid-call (kill -9); box B closes the call as box_lost and asks the
// extraction model, which is slow; B is killed -9 while it waits. The save
// stays pending, and box C finishes it: one save, with the call's facts.
func TestLostCallSaveSurvivesTheRecoveringBox(t *testing.T) {
	t.Parallel()
	bin := buildBox(t)
	ctx := context.Background()
	dbURL, pool := testDatabase(t)
	model := providertest.New(t)
	model.RespondTranscripts(func([]byte) string { return "I prefer to be called in the morning." })
	slow := make(chan struct{})     // closed when the extraction model may answer
	asked := make(chan struct{}, 8) // one value per extraction request
	model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			asked <- struct{}{}
			return providertest.Reply{Gate: slow,
				Content: `{"operations":[{"op":"add","content":"Prefers morning calls."}],"summary":"Asked for morning calls."}`}
		}
		return providertest.Reply{Content: "Noted, mornings it is."}
	})
	cfgPath := writeConfig(t, dbURL)
	a := startBox(t, bin, cfgPath, model.URL())
	_, callID := heardCall(t, a, pool, "+34600555666")
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t, 30*time.Second)

	b := startBox(t, bin, cfgPath, model.URL())
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		t.Fatalf("the recovering box never asked the extraction model\n%s", b.logs())
	}
	b.cmd.Process.Signal(syscall.SIGKILL)
	b.wait(t, 30*time.Second)
	var status string
	var pending, saved bool
	if err := pool.QueryRow(ctx, `SELECT status, save_pending, coalesce((memory->>'saved')::bool, false)
		FROM stackbone_platform.voice_calls WHERE id = $1`, callID).Scan(&status, &pending, &saved); err != nil {
		t.Fatal(err)
	}
	if status != "ended" || !pending || saved {
		t.Fatalf("after the recovering box died: status %s, save pending %v, saved %v", status, pending, saved)
	}

	close(slow)
	startBox(t, bin, cfgPath, model.URL())
	poll.Until(t, "the pending save to be finished by the next box", 90*time.Second, func() bool {
		err := pool.QueryRow(ctx, `SELECT save_pending, coalesce((memory->>'saved')::bool, false)
			FROM stackbone_platform.voice_calls WHERE id = $1`, callID).Scan(&pending, &saved)
		return err == nil && saved && !pending
	})
	var calls int
	var fact, outcome string
	pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.memory_calls WHERE user_id = '+34600555666'`).Scan(&calls)
	pool.QueryRow(ctx, `SELECT content FROM stackbone_platform.memory_facts WHERE user_id = '+34600555666'`).Scan(&fact)
	pool.QueryRow(ctx, `SELECT outcome FROM stackbone_platform.voice_calls WHERE id = $1`, callID).Scan(&outcome)
	if calls != 1 || fact != "Prefers morning calls." || outcome != "box_lost" {
		t.Fatalf("saved %d call records (fact %q, outcome %s), want exactly one", calls, fact, outcome)
	}
}

// heardCall calls box from number: the greeting plays through, the caller
// speaks, and the call's record holds the greeting, the caller's turn and
// the answer. It returns the call and its id.
func heardCall(t *testing.T, box *runningBox, pool *pgxpool.Pool, number string) (*siptest.Call, string) {
	t.Helper()
	call, err := siptest.NewCaller(t).Call(context.Background(), "100", box.sipAddr, number)
	if err != nil {
		t.Fatalf("call: %v\n%s", err, box.logs())
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	call.Talk(1)
	var callID string
	poll.Until(t, "the caller's turn and the answer to be heard and persisted", 60*time.Second, func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT id, jsonb_array_length(stackbone_platform.heard_transcript(voice_calls)) FROM stackbone_platform.voice_calls
			WHERE status = 'active'`).Scan(&callID, &n)
		return err == nil && n >= 3
	})
	return call, callID
}

// testDatabase is a fresh database: its URL for a box, a pool for the
// test's checks.
func testDatabase(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	dbURL := pgtest.URL(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return dbURL, pool
}

func buildBox(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stackbone")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func writeConfig(t *testing.T, dbURL string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "box.yaml")
	cfg := fmt.Sprintf(`
database: {url: %q}
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
shutdown: {drain: 1s}
`, dbURL)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type runningBox struct {
	cmd      *exec.Cmd
	out      *lockedbuf.Buffer
	exited   chan int
	sipAddr  string
	httpAddr string
}

func (b *runningBox) logs() string { return b.out.String() }

// wait returns the exit code of the box process.
func (b *runningBox) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case code := <-b.exited:
		return code
	case <-time.After(limit):
		t.Fatalf("the box did not exit\n%s", b.logs())
		return -1
	}
}

// startBox runs `serve` and waits until it is ready; the test's end kills it.
func startBox(t *testing.T, bin, cfgPath, providerURL string) *runningBox {
	t.Helper()
	return startBoxAt(t, bin, cfgPath, providerURL, freeUDPAddr(t))
}

// startBoxAt is startBox with the SIP address given (a box that takes the
// place of another behind a proxy).
func startBoxAt(t *testing.T, bin, cfgPath, providerURL, sipAddr string) *runningBox {
	t.Helper()
	httpAddr := freeAddr(t)
	out := &lockedbuf.Buffer{}
	cmd := exec.Command(bin, "serve", "--config", cfgPath, "--migrate", "--data-dir", t.TempDir())
	cmd.Env = append(filteredEnv(), "STACKBONE_HTTP_ADDR="+httpAddr, "STACKBONE_SIP_ADDR="+sipAddr,
		"OPENAI_BASE_URL="+providerURL, "OPENAI_API_KEY=test")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &runningBox{cmd: cmd, out: out, exited: make(chan int, 1), sipAddr: sipAddr, httpAddr: httpAddr}
	go func() {
		_ = cmd.Wait()
		b.exited <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("box output:\n%s", out.String())
		}
	})
	poll.Until(t, "the box to be ready", 120*time.Second, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return b
}

func freeUDPAddr(t *testing.T) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freeport.Get(t, freeport.UDP, freeport.TCP)))
}

// The series operators watch move with the work: scraped from a running
// box during a SIP call and a chat turn, and free of personal data.
func TestMetricsMoveWithCallsAndTurns(t *testing.T) {
	t.Parallel()
	bin := buildBox(t)
	ctx := context.Background()
	dbURL, pool := testDatabase(t)
	const secret = "metrics-test-key"
	if err := auth.NewStore(pool).Ensure(ctx, "scraper", secret, []string{auth.ScopeRunsRead, auth.ScopeAgentsRun}); err != nil {
		t.Fatal(err)
	}
	model := providertest.New(t)
	model.RespondTranscripts(func([]byte) string { return "My secret word is pineapple." })
	model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[],"summary":"Said a word."}`}
		}
		return providertest.Reply{Content: "Understood."}
	})
	box := startBox(t, bin, writeConfig(t, dbURL), model.URL())
	scrape := func() string {
		req, _ := http.NewRequest("GET", "http://"+box.httpAddr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("scrape: %d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	if resp, err := http.Get("http://" + box.httpAddr + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("metrics without a key: %v %v", resp, err)
	}

	// A chat turn over the OpenAI wire.
	req, _ := http.NewRequest("POST", "http://"+box.httpAddr+"/openai/v1/chat/completions",
		strings.NewReader(`{"model":"receptionist","messages":[{"role":"user","content":"My secret word is pineapple."}]}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("chat turn: %v %v", resp, err)
	}
	resp.Body.Close()
	text := scrape()
	if metricValue(text, `stackbone_http_request_seconds_count{route="POST /openai/v1/chat/completions",status="200"}`) < 1 ||
		metricValue(text, `stackbone_provider_request_seconds_count{kind="chat",result="ok"}`) < 1 ||
		metricValue(text, `stackbone_turns_seconds_count{finish="stop",wire="openai"}`) < 1 {
		t.Fatalf("a chat turn moved no series:\n%s", grepLines(text, "stackbone_"))
	}

	// A SIP call with one spoken turn.
	call, err := siptest.NewCaller(t).Call(ctx, "100", box.sipAddr, "+34600555666")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the call to count as active", 20*time.Second, func() bool {
		return metricValue(scrape(), `stackbone_calls_active{direction="inbound"}`) == 1
	})
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	call.Talk(1)
	poll.Until(t, "a spoken turn's stages", 60*time.Second, func() bool {
		return metricValue(scrape(), `stackbone_turn_stage_seconds_count{stage="wire_to_wire"}`) >= 1
	})
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the call to count as ended", 30*time.Second, func() bool {
		text := scrape()
		return metricValue(text, `stackbone_calls_total{direction="inbound",outcome="caller_hangup"}`) == 1 &&
			metricValue(text, `stackbone_calls_active{direction="inbound"}`) == 0
	})
	text = scrape()
	for _, series := range []string{`stackbone_call_setup_seconds_count{direction="inbound"}`,
		`stackbone_provider_request_seconds_count{kind="transcription",result="ok"}`,
		`stackbone_provider_request_seconds_count{kind="speech",result="ok"}`,
		`stackbone_memory_seconds_count{op="recall",outcome="ok"}`,
		`stackbone_memory_seconds_count{op="add",outcome="ok"}`, `stackbone_sip_pacing_error_seconds_count`} {
		if metricValue(text, series) < 1 {
			t.Fatalf("%s did not move:\n%s", series, grepLines(text, "stackbone_"))
		}
	}
	if !strings.Contains(text, "stackbone_jobs{") {
		t.Fatalf("no job series:\n%s", grepLines(text, "stackbone_"))
	}
	for _, private := range []string{"pineapple", "34600555666", secret} {
		if strings.Contains(text, private) {
			t.Fatalf("the metrics hold personal data (%q)", private)
		}
	}
}

// metricValue is the value of one series line of the text format, -1 when
// absent.
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

func grepLines(text, prefix string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// Traces go to an OTLP/HTTP collector when one is configured: a span per
// HTTP request, per provider request, per call and per spoken turn, the
// provider's spans children of the turn's.
func TestTracesReachAnOTLPCollector(t *testing.T) {
	t.Parallel()
	bin := buildBox(t)
	ctx := context.Background()
	var mu sync.Mutex
	var spans []*tracepb.Span
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(collector.Close)
	dbURL := pgtest.URL(t)
	model := providertest.New(t)
	model.RespondTranscripts(func([]byte) string { return "Hello there." })
	model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[],"summary":"Said hello."}`}
		}
		return providertest.Reply{Content: "Hi, thanks for calling. How can I help you today?"}
	})
	cfgPath := writeConfig(t, dbURL)
	f, _ := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "telemetry: {otlpEndpoint: %q}\n", collector.URL)
	f.Close()
	box := startBox(t, bin, cfgPath, model.URL())
	// A job: a document's ingest, worked before the box stops.
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	const secret = "trace-test-key"
	if err := auth.NewStore(pool).Ensure(ctx, "tracer", secret, []string{auth.ScopeRAGWrite, auth.ScopeRAGRead}); err != nil {
		t.Fatal(err)
	}
	send := func(req *http.Request) int {
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	req, _ := http.NewRequest("POST", "http://"+box.httpAddr+"/api/rag/collections", strings.NewReader(`{"name":"faq"}`))
	if code := send(req); code != 201 {
		t.Fatalf("collection: %d", code)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "faq.md")
	fw.Write([]byte("# Returns\n\nReturns are accepted within 30 days.\n"))
	mw.Close()
	req, _ = http.NewRequest("POST", "http://"+box.httpAddr+"/api/rag/collections/faq/documents", &form)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if code := send(req); code != 202 {
		t.Fatalf("upload: %d", code)
	}
	poll.Until(t, "the ingest job", 30*time.Second, func() bool {
		var n int
		pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.river_job WHERE kind LIKE '%ingest%' AND state = 'completed'`).Scan(&n)
		return n > 0
	})
	call, err := siptest.NewCaller(t).Call(ctx, "100", box.sipAddr, "+34600999111")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	call.Talk(1)
	heard := call.Voiced()
	poll.Until(t, "the answer", 30*time.Second, func() bool { return call.Voiced() > heard+20 })
	_ = call.Hangup(ctx)
	box.cmd.Process.Signal(syscall.SIGTERM) // flushes the batch
	box.wait(t, 60*time.Second)

	mu.Lock()
	defer mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	for _, name := range []string{"call", "turn", "provider chat", "provider transcription", "provider speech", "HTTP GET"} {
		if byName[name] == nil {
			t.Fatalf("no %q span among %d", name, len(spans))
		}
	}
	jobSpan := false
	for _, s := range spans {
		jobSpan = jobSpan || strings.HasPrefix(s.Name, "job ")
	}
	if !jobSpan {
		t.Fatal("no span of a worked job")
	}
	ids := map[string]string{} // span id -> name
	for _, s := range spans {
		ids[string(s.SpanId)] = s.Name
	}
	nested := map[string]bool{}
	for _, s := range spans {
		nested[s.Name+" in "+ids[string(s.ParentSpanId)]] = true
	}
	for _, want := range []string{"turn in call", "provider chat in turn", "provider transcription in turn"} {
		if !nested[want] {
			t.Fatalf("no span %s: %v", want, nested)
		}
	}
	for _, s := range spans {
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), "Hello there") || strings.Contains(a.Value.String(), "34600999111") {
				t.Fatalf("span %q holds personal data in %s", s.Name, a.Key)
			}
		}
	}
}
