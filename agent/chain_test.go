package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
)

// chainEnv is a runtime whose agent "chained" tries openai/main, then
// backup/spare, then local/last; each provider is a scripted server.
type chainEnv struct {
	t                   *testing.T
	rt                  *agent.Runtime
	runs                *runs.Store
	main, backup, local *providertest.Server
	models              *provider.Registry
}

func newChainEnv(t *testing.T, mainURL string) *chainEnv {
	t.Helper()
	pool := pgtest.Pool(t)
	e := &chainEnv{t: t, main: providertest.New(t), backup: providertest.New(t), local: providertest.New(t), runs: runs.NewStore(pool)}
	if mainURL == "" {
		mainURL = e.main.URL()
	}
	cfg, err := config.Parse([]byte(`
agents:
  chained:
    model: [openai/main, backup/spare, local/last]
    instructions: You answer.
    firstByteTimeout: 1s
    chunkTimeout: 300ms
`))
	if err != nil {
		t.Fatal(err)
	}
	breaker := config.Circuit{Failures: 2, Window: time.Minute, Cooldown: time.Hour}
	e.models = provider.NewRegistry(map[string]config.Provider{
		"openai": {BaseURL: mainURL, Circuit: breaker, ConnectTimeout: time.Second},
		"backup": {BaseURL: e.backup.URL(), Circuit: breaker},
		"local":  {BaseURL: e.local.URL(), Circuit: breaker},
	}, nil)
	log := pgtest.Logger(t)
	mem := memory.NewService(memory.Config{Pool: pool, Models: e.models, Logger: log})
	settings := memory.NewSettings(pool, memory.AgentsFromConfig(cfg), log)
	e.rt = agent.New(agent.Config{Pool: pool, Agents: cfg.Agents, Models: e.models, Memory: mem, Settings: settings, Logger: log})
	return e
}

// turn runs a streamed turn and returns its result and the text the client
// was sent.
func (e *chainEnv) turn() (agent.Result, string, error) {
	var sent strings.Builder
	res, err := e.rt.Turn(context.Background(), agent.TurnRequest{Agent: "chained",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "What are the opening hours?"}}},
		func(ev agent.Event) error {
			if ev.Kind == agent.EventTextDelta {
				sent.WriteString(ev.Text)
			}
			return nil
		})
	return res, sent.String(), err
}

func (e *chainEnv) run(id uuid.UUID) runs.Run {
	e.t.Helper()
	r, err := e.runs.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// A failing primary (an error status, a refused connection, an unusable
// answer) is followed, within the same turn, by the next model of the
// chain; the client gets that model's answer and the run names it and why
// the primary was skipped.
func TestChainMovesOnWhenThePrimaryFails(t *testing.T) {
	t.Parallel()
	for name, primary := range map[string]providertest.Reply{
		"error status": {Status: 500, Message: "overloaded"},
		"garbage":      {Raw: "<html>bad gateway</html>"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newChainEnv(t, "")
			e.main.Script(primary)
			e.backup.Script(providertest.Reply{Content: "We open at nine."})
			res, sent, err := e.turn()
			if err != nil || sent != "We open at nine." || res.Model != "backup/spare" {
				t.Fatalf("turn: %v, sent %q, model %s", err, sent, res.Model)
			}
			r := e.run(res.RunID)
			if r.Model != "backup/spare" || r.Metadata["servedBy"] != "backup/spare" || !strings.Contains(toJSON(r.Metadata["modelsSkipped"]), `"model":"openai/main"`) {
				t.Fatalf("run: model %s, metadata %v", r.Model, r.Metadata)
			}
		})
	}
	t.Run("refused connection", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + l.Addr().String() + "/v1"
		l.Close()
		e := newChainEnv(t, dead)
		e.backup.Script(providertest.Reply{Content: "We open at nine."})
		res, sent, err := e.turn()
		if err != nil || sent != "We open at nine." || res.Model != "backup/spare" {
			t.Fatalf("turn: %v, sent %q, model %s", err, sent, res.Model)
		}
	})
}

// An answer cut after part of it was streamed goes on from that part: the
// next model is given what the client already has and asked to continue,
// and the client's text holds the start once.
func TestChainContinuesACutAnswer(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t, "")
	e.main.Script(providertest.Reply{Content: "We open at nine", Cut: true})
	e.backup.Script(providertest.Reply{Content: " and close at five."})
	res, sent, err := e.turn()
	if err != nil || sent != "We open at nine and close at five." || res.Text != sent {
		t.Fatalf("turn: %v, sent %q, result %q", err, sent, res.Text)
	}
	reqs := e.backup.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to the backup", len(reqs))
	}
	// Two cuts in a row: the last model is given all that was sent, once.
	e.main.Script(providertest.Reply{Content: "We open", Cut: true})
	e.backup.Script(providertest.Reply{Content: " at nine", Cut: true})
	e.local.Script(providertest.Reply{Content: " on weekdays."})
	if _, sent, err := e.turn(); err != nil || sent != "We open at nine on weekdays." {
		t.Fatalf("two cuts: %v, sent %q", err, sent)
	}
	last := e.local.ChatRequests()[0].Messages
	if n := len(last); n != 4 || last[n-2].Content != "We open at nine" {
		t.Fatalf("the last model was sent %+v", last)
	}
	msgs := reqs[0].Messages
	if n := len(msgs); n < 2 || msgs[n-2].Role != openai.ChatMessageRoleAssistant || msgs[n-2].Content != "We open at nine" ||
		!strings.Contains(msgs[n-1].Content, "Continue it from exactly where it stopped") {
		t.Fatalf("the backup was sent %+v", msgs)
	}
}

// A provider that keeps failing opens its circuit: the chain skips it at
// once (no request reaches it) while it is open. With every model failing
// the turn fails as a provider failure.
func TestChainSkipsAnOpenCircuit(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t, "")
	e.main.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Status: 503, Message: "down"}
	})
	e.backup.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: "Nine to five."}
	})
	for range 2 {
		if _, sent, err := e.turn(); err != nil || sent != "Nine to five." {
			t.Fatalf("turn: %v %q", err, sent)
		}
	}
	asked := len(e.main.ChatRequests())
	res, _, err := e.turn()
	if err != nil || len(e.main.ChatRequests()) != asked {
		t.Fatalf("turn %v; the primary was asked %d more times with its circuit open", err, len(e.main.ChatRequests())-asked)
	}
	if r := e.run(res.RunID); !strings.Contains(toJSON(r.Metadata["modelsSkipped"]), `"reason":"circuit open"`) {
		t.Fatalf("run metadata %v", r.Metadata)
	}
	var open bool
	for _, c := range e.models.Circuits() {
		open = open || (c.Provider == "openai" && c.Endpoint == provider.EndpointChat && c.State == provider.CircuitOpen && len(c.LastFailures) == 2)
	}
	if !open {
		t.Fatalf("circuits %+v", e.models.Circuits())
	}

	e.backup.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Status: 500, Message: "down"}
	})
	e.local.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Status: 500, Message: "down"}
	})
	if _, _, err := e.turn(); !errors.Is(err, agent.ErrProvider) {
		t.Fatalf("every model failing: %v", err)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// With a first-token bound (a call's), a primary that hangs before its
// first token is given up after the bound and the next model answers; the
// chain's last model is waited for as its provider allows.
func TestChainFirstTokenBound(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t, "")
	e.main.Script(providertest.Reply{Content: "Too late.", Delay: 30 * time.Second})
	e.backup.Script(providertest.Reply{Content: "Nine to five."})
	turn := func() (agent.Result, string, time.Duration, error) {
		var sent strings.Builder
		began := time.Now()
		res, err := e.rt.Turn(context.Background(), agent.TurnRequest{Agent: "chained", FirstByte: 300 * time.Millisecond,
			Messages: []agent.Message{{Role: agent.RoleUser, Content: "Hours?"}}},
			func(ev agent.Event) error {
				if ev.Kind == agent.EventTextDelta {
					sent.WriteString(ev.Text)
				}
				return nil
			})
		return res, sent.String(), time.Since(began), err
	}
	res, sent, took, err := turn()
	if err != nil || sent != "Nine to five." || took > 5*time.Second {
		t.Fatalf("turn: %v, sent %q after %s", err, sent, took)
	}
	if r := e.run(res.RunID); !strings.Contains(toJSON(r.Metadata["modelsSkipped"]), `"reason":"provider_timeout"`) {
		t.Fatalf("run metadata %v", r.Metadata)
	}
	// A model that stalls after its first tokens is cut there: the next one
	// continues from what was sent, within the bound.
	e.main.Script(providertest.Reply{Content: "We open at nine", Stall: 30 * time.Second})
	e.backup.Script(providertest.Reply{Content: " and close at five."})
	before := len(e.backup.ChatRequests())
	res, sent, took, err = turn()
	if err != nil || !strings.HasSuffix(sent, " and close at five.") || !strings.HasPrefix("We open at nine", strings.TrimSuffix(sent, " and close at five.")) ||
		sent == " and close at five." || took > 5*time.Second {
		t.Fatalf("a stalled answer: %v, sent %q after %s", err, sent, took)
	}
	if r := e.run(res.RunID); !strings.Contains(toJSON(r.Metadata["modelsSkipped"]), `"reason":"provider_timeout"`) {
		t.Fatalf("run metadata %v", r.Metadata)
	}
	if msgs := e.backup.ChatRequests()[before].Messages; !strings.Contains(msgs[len(msgs)-1].Content, "Continue it from exactly where it stopped") {
		t.Fatalf("the backup was sent %+v", msgs)
	}
	// The last model of the chain is not cut short by the bound.
	e.main.Script(providertest.Reply{Status: 500, Message: "down"})
	e.backup.Script(providertest.Reply{Status: 500, Message: "down"})
	e.local.Script(providertest.Reply{Content: "Slow but sure.", Delay: 600 * time.Millisecond})
	if _, sent, _, err := turn(); err != nil || sent != "Slow but sure." {
		t.Fatalf("the last model: %v, %q", err, sent)
	}
}

// A streamed text turn bounds a model that is not its chain's last by the
// agent's firstByteTimeout and chunkTimeout: a primary that trickles its
// tokens (each 2 s after the last) is cut at the chunk bound and the next
// model continues from what was sent; so is one whose provider trickles
// its stream's events. The run names the model that served and why the
// primary was skipped.
func TestChainTrickleTripsOnTextTurns(t *testing.T) {
	t.Parallel()
	e := newChainEnv(t, "")
	// An answer taken whole has no chunks: the bounds leave it to its
	// provider (a long answer may take long to write).
	e.main.Script(providertest.Reply{Content: "Slow but whole.", Delay: 1300 * time.Millisecond})
	res, err := e.rt.Turn(context.Background(), agent.TurnRequest{Agent: "chained", Whole: true,
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "Hours?"}}}, func(agent.Event) error { return nil })
	if err != nil || res.Text != "Slow but whole." || res.Model != "openai/main" {
		t.Fatalf("a whole answer: %v, %q from %s", err, res.Text, res.Model)
	}

	e.main.Script(providertest.Reply{Content: "We open at nine and close at five.", ChunkDelay: 2 * time.Second})
	e.backup.Script(providertest.Reply{Content: "nine and close at five."})
	began := time.Now()
	res, sent, err := e.turn()
	took := time.Since(began)
	if err != nil || sent != "We open at nine and close at five." || took > 1500*time.Millisecond {
		t.Fatalf("a trickling answer: %v, sent %q after %s", err, sent, took)
	}
	r := e.run(res.RunID)
	if r.Metadata["servedBy"] != "backup/spare" || !strings.Contains(toJSON(r.Metadata["modelsSkipped"]), `{"model":"openai/main","reason":"provider_timeout"}`) {
		t.Fatalf("run metadata %v", r.Metadata)
	}
	msgs := e.backup.ChatRequests()[0].Messages
	if n := len(msgs); msgs[n-2].Content != "We open at " || !strings.Contains(msgs[n-1].Content, "Continue it from exactly where it stopped") {
		t.Fatalf("the backup was sent %+v", msgs)
	}

	// The provider trickles its stream, one event every 2 s: its first
	// (the role, no text yet) starts the answer, and the chunk bound ends
	// it before any text came.
	e.main.SetFault(providertest.EndpointChat, providertest.Fault{Trickle: 2 * time.Second, Times: 1})
	e.main.Script(providertest.Reply{Content: "Too slow."})
	e.backup.Script(providertest.Reply{Content: "Nine to five."})
	began = time.Now()
	res, sent, err = e.turn()
	took = time.Since(began)
	if err != nil || sent != "Nine to five." || took < 300*time.Millisecond || took > time.Second {
		t.Fatalf("a trickling stream: %v, sent %q after %s", err, sent, took)
	}
	if e.main.Faulted(providertest.EndpointChat) != 1 {
		t.Fatal("the trickle was never met")
	}
	if r := e.run(res.RunID); !strings.Contains(toJSON(r.Metadata["modelsSkipped"]), `{"model":"openai/main","reason":"provider_timeout"}`) {
		t.Fatalf("run metadata %v", r.Metadata)
	}

}
