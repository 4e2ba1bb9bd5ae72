package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
)

const agentsYAML = `
agents:
  support:
    model: openai/chat
    instructions: You are the support agent.
    memory: {identityKey: customerId, read: true, save: true, instructions: "Remember product preferences."}
  plain:
    model: openai/chat
    instructions: You are plain.
  guarded:
    model: openai/chat
    instructions: You ask before saving.
    memory: {identityKey: customerId, read: false, save: true}
    interruptOn: [memory_save]
  phone:
    model: openai/chat
    memory: {identityKey: phoneNumber, read: true, save: false}
`

type env struct {
	t        *testing.T
	ctx      context.Context
	pool     *pgxpool.Pool
	model    *providertest.Server
	cfg      *config.Config
	mem      *memory.Service
	settings *memory.Settings
	rt       *agent.Runtime
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), pool: pgtest.Pool(t), model: providertest.New(t)}
	cfg, err := config.Parse([]byte(agentsYAML))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	e.boot()
	return e
}

// boot builds the runtime on the env's database, as a box start does.
func (e *env) boot() {
	reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: e.model.URL()}}, nil)
	log := pgtest.Logger(e.t)
	e.mem = memory.NewService(memory.Config{Pool: e.pool, Models: reg, Logger: log, FallbackModel: "openai/extractor"})
	e.settings = memory.NewSettings(e.pool, memory.AgentsFromConfig(e.cfg), log)
	if err := e.settings.FixDeclaredKeys(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.rt = agent.New(agent.Config{Pool: e.pool, Agents: e.cfg.Agents, Models: reg, Memory: e.mem, Settings: e.settings, Logger: log})
}

func (e *env) turn(req agent.TurnRequest) (agent.Result, []agent.Event, error) {
	var evs []agent.Event
	res, err := e.rt.Turn(e.ctx, req, func(ev agent.Event) error { evs = append(evs, ev); return nil })
	return res, evs, err
}

func (e *env) mustTurn(req agent.TurnRequest) agent.Result {
	e.t.Helper()
	res, _, err := e.turn(req)
	if err != nil {
		e.t.Fatalf("turn: %v", err)
	}
	return res
}

func user(text string) []agent.Message { return []agent.Message{{Role: agent.RoleUser, Content: text}} }

// sent returns the roles and contents of the model's nth chat request.
func (e *env) sent(n int) []string {
	e.t.Helper()
	reqs := e.model.ChatRequests()
	if n < 0 {
		n += len(reqs)
	}
	var out []string
	for _, m := range reqs[n].Messages {
		out = append(out, m.Role+": "+m.Content)
	}
	return out
}

func toolNames(r *openai.ChatCompletionRequest) []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

func TestSessionKeepsTheConversationAcrossARestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Script(providertest.Reply{Content: "Order A-1001 ships tomorrow."}, providertest.Reply{Content: "Yes, within 30 days."})
	r1 := e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "customer-4711", Messages: user("Where is order A-1001?")})
	if r1.Text != "Order A-1001 ships tomorrow." || r1.Finish != agent.FinishStop || r1.Usage.InputTokens != 10 {
		t.Fatalf("first turn: %+v", r1)
	}
	e.boot() // a new runtime on the same database: the box restarted
	r2 := e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "customer-4711", Messages: user("Can I still return it?")})
	want := []string{"system: You are plain.", "user: Where is order A-1001?", "assistant: Order A-1001 ships tomorrow.", "user: Can I still return it?"}
	if got := e.sent(1); !slices.Equal(got, want) {
		t.Fatalf("second turn sent %q, want %q", got, want)
	}
	if r2.Text != "Yes, within 30 days." {
		t.Fatalf("second turn: %+v", r2)
	}
	list, err := e.rt.ListSessions(e.ctx, agent.SessionFilter{Agent: "plain"})
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions: %+v %v", list, err)
	}
	s := list[0]
	if s.Turns != 2 || s.Status != "completed" || s.Preview != "Where is order A-1001?" || s.InputTokens != 20 || s.OutputTokens != 10 {
		t.Fatalf("session row: %+v", s)
	}
	if strings.Contains(s.ID, "customer-4711") {
		t.Fatal("the session id shows the key")
	}
	d, err := e.rt.GetSession(e.ctx, s.ID)
	if err != nil || len(d.Transcript) != 2 || d.Transcript[1].User != "Can I still return it?" || d.Transcript[1].Reply != "Yes, within 30 days." ||
		d.Transcript[1].RunID != r2.RunID {
		t.Fatalf("transcript: %+v %v", d.Transcript, err)
	}
	run, err := runs.NewStore(e.pool).Get(e.ctx, r2.RunID)
	if err != nil || run.Kind != agent.KindAgentTurn || run.Status != "succeeded" || run.InputTokens != 10 || run.Metadata["session"] != s.ID {
		t.Fatalf("run: %+v %v", run, err)
	}
	// A stateless turn replays nothing.
	e.model.Script(providertest.Reply{Content: "Hi."})
	e.mustTurn(agent.TurnRequest{Agent: "plain", Messages: user("Hello")})
	if got := e.sent(2); !slices.Equal(got, []string{"system: You are plain.", "user: Hello"}) {
		t.Fatalf("stateless sent %q", got)
	}
}

func TestTwoCustomersOnOneKeyGetTwoSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	for _, c := range []string{"crm/ana", "crm/ben"} {
		e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "shared", Identities: identity.Set{"customerId": c}, Messages: user("I am " + c)})
	}
	e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "shared", Identities: identity.Set{"customerId": "crm/ben"}, Messages: user("Who am I?")})
	got := strings.Join(e.sent(2), "\n")
	if !strings.Contains(got, "I am crm/ben") || strings.Contains(got, "crm/ana") {
		t.Fatalf("ben's session holds %q", got)
	}
	list, _ := e.rt.ListSessions(e.ctx, agent.SessionFilter{})
	if len(list) != 2 {
		t.Fatalf("%d sessions, want 2", len(list))
	}
}

// Two keys restricted to different persons, sending one session key to an
// agent whose identity key neither names (or that has none), hold two
// conversations: the second person's model request never carries the
// first person's words.
func TestRestrictedKeysNeverShareASessionByKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	as := func(number string) context.Context {
		return identity.WithPolicy(e.ctx, identity.Policy{Allowed: map[string]string{identity.PhoneNumber: number}})
	}
	turn := func(ctx context.Context, ag, text string) {
		t.Helper()
		if _, err := e.rt.Turn(ctx, agent.TurnRequest{Agent: ag, SessionKey: "shared", Messages: user(text)},
			func(agent.Event) error { return nil }); err != nil {
			t.Fatalf("%s: %v", ag, err)
		}
	}
	for _, ag := range []string{"support", "plain"} {
		turn(as("+34600000001"), ag, "My secret is 4242 on "+ag)
		turn(as("+34600000002"), ag, "What is my secret?")
		if got := strings.Join(e.sent(-1), "\n"); strings.Contains(got, "4242") {
			t.Fatalf("%s: the second person's model request carries the first's words: %q", ag, got)
		}
		// The first person's own session goes on.
		turn(as("+34600000001"), ag, "Again?")
		if got := strings.Join(e.sent(-1), "\n"); !strings.Contains(got, "4242 on "+ag) {
			t.Fatalf("%s: the first person's session lost its turn: %q", ag, got)
		}
	}
}

func TestAGUIStyleResendAddsEachMessageOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	m1 := agent.Message{ID: "u1", Role: agent.RoleUser, Content: "first"}
	r1 := e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "thread-1", Messages: []agent.Message{m1}})
	a1 := agent.Message{ID: r1.MessageID, Role: agent.RoleAssistant, Content: "ok"}
	m2 := agent.Message{ID: "u2", Role: agent.RoleUser, Content: "second"}
	e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "thread-1", Messages: []agent.Message{m1, a1, m2}})
	want := []string{"system: You are plain.", "user: first", "assistant: ok", "user: second"}
	if got := e.sent(1); !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
	if _, _, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "thread-1", Messages: []agent.Message{m1}}); !errors.Is(err, agent.ErrInvalidRequest) {
		t.Fatalf("nothing new: %v", err)
	}
}

func TestConversationKeyGroupsStatelessTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	e.mustTurn(agent.TurnRequest{Agent: "plain", ConversationKey: "ticket-9", Messages: user("one")})
	e.mustTurn(agent.TurnRequest{Agent: "plain", ConversationKey: "ticket-9", Messages: user("two")})
	if got := e.sent(1); !slices.Equal(got, []string{"system: You are plain.", "user: two"}) {
		t.Fatalf("a conversation replayed state: %q", got)
	}
	list, _ := e.rt.ListSessions(e.ctx, agent.SessionFilter{})
	if len(list) != 1 || list[0].Kind != "conversation" || list[0].Turns != 2 {
		t.Fatalf("conversation row: %+v", list)
	}
	if _, _, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "a", ConversationKey: "b", Messages: user("x")}); !errors.Is(err, agent.ErrInvalidRequest) {
		t.Fatalf("both keys: %v", err)
	}
}

// The four read/save combinations decide which memory tools the model is
// offered; without the selected identity none are.
func TestMemoryToolOffering(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	ids := identity.Set{"customerId": "crm/42"}
	for _, c := range []struct {
		read, save bool
		want       []string
	}{{false, false, nil}, {true, false, []string{"memory_read"}}, {false, true, []string{"memory_save"}}, {true, true, []string{"memory_read", "memory_save"}}} {
		if _, err := e.settings.Put(e.ctx, "test", "support", memory.Patch{Read: &c.read, Save: &c.save}); err != nil {
			t.Fatal(err)
		}
		res := e.mustTurn(agent.TurnRequest{Agent: "support", Identities: ids, Messages: user("hi")})
		reqs := e.model.ChatRequests()
		if got := toolNames(reqs[len(reqs)-1]); !slices.Equal(got, c.want) {
			t.Errorf("read=%v save=%v: tools %q, want %q", c.read, c.save, got, c.want)
		}
		run, _ := runs.NewStore(e.pool).Get(e.ctx, res.RunID)
		if wantOff := !c.read && !c.save; wantOff != strings.HasPrefix(run.Metadata["memory"].(string), "off") {
			t.Errorf("read=%v save=%v: run memory %v", c.read, c.save, run.Metadata["memory"])
		}
		// The run counts what the box's tools cost, about a token for
		// every four bytes of their definitions as the model got them.
		sent, _ := json.Marshal(reqs[len(reqs)-1].Tools)
		want := 0.0
		if len(c.want) > 0 {
			want = float64(len(sent)) / 4
		}
		if got, _ := run.Metadata["addedTokens"].(float64); got < 0.8*want || got > 1.2*want {
			t.Errorf("read=%v save=%v: addedTokens %v, want about %.0f", c.read, c.save, run.Metadata["addedTokens"], want)
		}
	}
	// No identity: no tools, and the reason is recorded.
	res := e.mustTurn(agent.TurnRequest{Agent: "support", Messages: user("hi")})
	reqs := e.model.ChatRequests()
	if got := toolNames(reqs[len(reqs)-1]); len(got) != 0 {
		t.Fatalf("tools without identity: %q", got)
	}
	run, _ := runs.NewStore(e.pool).Get(e.ctx, res.RunID)
	if run.Metadata["memory"] != "off: "+identity.ReasonNoValue {
		t.Fatalf("reason: %v", run.Metadata["memory"])
	}
	// An agent keyed on phoneNumber never takes a phone-shaped customerId.
	e.mustTurn(agent.TurnRequest{Agent: "phone", Identities: identity.Set{"customerId": "+34111111111"}, Messages: user("hi")})
	reqs = e.model.ChatRequests()
	if got := toolNames(reqs[len(reqs)-1]); len(got) != 0 {
		t.Fatalf("phoneNumber filled from customerId: %q", got)
	}
	// An agent with no key: no memory tools.
	e.mustTurn(agent.TurnRequest{Agent: "plain", Identities: ids, Messages: user("hi")})
	reqs = e.model.ChatRequests()
	if got := toolNames(reqs[len(reqs)-1]); len(got) != 0 {
		t.Fatalf("unbound agent got tools: %q", got)
	}
	// The reserved names.
	if _, _, err := e.turn(agent.TurnRequest{Agent: "support", Identities: ids, Messages: user("hi"),
		Tools: []agent.Tool{{Name: "memory_read"}}}); !errors.Is(err, agent.ErrInvalidRequest) {
		t.Fatalf("reserved tool name: %v", err)
	}
}

func TestMemoryToolsReadAndSaveTheSelectedPerson(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := identity.Set{"customerId": "crm/42"}
	// Someone else's facts must never show.
	e.model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"Other person likes tea."}],"summary":"s"}`})
	if _, err := e.mem.Add(e.ctx, memory.AddRequest{AgentID: "support", UserID: "crm/other", Transcript: memory.Transcript{Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	e.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "memory_save", map[string]string{"content": "I prefer email over phone."})}},
		// The extraction request memory_save makes:
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Prefers email."}],"summary":"Stated a contact preference."}`},
		providertest.Reply{Content: "Noted."},
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c2", "memory_read", map[string]string{})}},
		providertest.Reply{Content: "You prefer email."},
	)
	res, evs, err := e.turn(agent.TurnRequest{Agent: "support", Identities: ids, Messages: user("I prefer email over phone.")})
	if err != nil || res.Text != "Noted." {
		t.Fatalf("save turn: %+v %v", res, err)
	}
	reqs := e.model.ChatRequests()
	extract := reqs[2]
	if !strings.Contains(extract.Messages[0].Content, "Remember product preferences.") {
		t.Fatal("memory_save did not use the effective instructions")
	}
	afterSave := reqs[3].Messages
	last := afterSave[len(afterSave)-1]
	if last.Role != "tool" || last.ToolCallID != "c1" || last.Content != `{"saved":true}` {
		t.Fatalf("memory_save answered %+v", last)
	}
	var sawResult bool
	for _, ev := range evs {
		if ev.Kind == agent.EventToolResult && ev.Server && ev.ToolCall.ID == "c1" {
			sawResult = true
		}
	}
	if !sawResult {
		t.Fatal("no tool result event for memory_save")
	}
	// The call record links to the turn's run.
	rec, _ := e.mem.Recall(e.ctx, memory.RecallRequest{AgentID: "support", UserID: "crm/42"})
	if len(rec.Facts) != 1 || rec.Calls[0].RunID == nil || *rec.Calls[0].RunID != res.RunID.String() {
		t.Fatalf("saved memory: %+v", rec)
	}

	res, _, err = e.turn(agent.TurnRequest{Agent: "support", Identities: ids, Messages: user("What do I prefer?")})
	if err != nil || res.Text != "You prefer email." {
		t.Fatalf("read turn: %+v %v", res, err)
	}
	reqs = e.model.ChatRequests()
	msgs := reqs[len(reqs)-1].Messages
	got := msgs[len(msgs)-1]
	var read struct {
		Facts       []string
		RecentCalls []struct{ Summary string }
	}
	json.Unmarshal([]byte(got.Content), &read)
	if got.Role != "tool" || !slices.Equal(read.Facts, []string{"Prefers email."}) || len(read.RecentCalls) != 1 ||
		read.RecentCalls[0].Summary != "Stated a contact preference." || strings.Contains(got.Content, "Other person") {
		t.Fatalf("memory_read answered %s", got.Content)
	}
}

func TestMemoryStorageFailureIsAnError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "memory_read", map[string]string{})}})
	if _, err := e.pool.Exec(e.ctx, `DROP TABLE stackbone_platform.memory_calls`); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.turn(agent.TurnRequest{Agent: "support", Identities: identity.Set{"customerId": "c"}, Messages: user("hi")})
	if !errors.Is(err, agent.ErrMemory) {
		t.Fatalf("got %v, want ErrMemory", err)
	}
}

func TestHeldToolWaitsForADecision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := identity.Set{"customerId": "crm/7"}
	save := providertest.Reply{Content: "Let me note that.", ToolCalls: []providertest.Call{providertest.ToolCall("h1", "memory_save", map[string]string{"content": "Allergic to nuts."})}}
	e.model.Script(save)
	res, evs, err := e.turn(agent.TurnRequest{Agent: "guarded", SessionKey: "s-1", Identities: ids, Messages: user("I am allergic to nuts.")})
	if err != nil || res.Finish != agent.FinishHeld || res.Held == nil || res.Held.ID != "h1" {
		t.Fatalf("held turn: %+v %v", res, err)
	}
	var sawStart bool
	for _, ev := range evs {
		sawStart = sawStart || (ev.Kind == agent.EventToolCallStart && ev.ToolCall.Name == "memory_save" && ev.Server)
	}
	if !sawStart {
		t.Fatal("no tool call event for the held call")
	}
	// Nothing saved yet, and the session refuses new messages.
	if rec, _ := e.mem.Recall(e.ctx, memory.RecallRequest{AgentID: "guarded", UserID: "crm/7"}); len(rec.Facts) != 0 {
		t.Fatal("a held call ran")
	}
	if _, _, err := e.turn(agent.TurnRequest{Agent: "guarded", SessionKey: "s-1", Identities: ids, Messages: user("hello?")}); !errors.Is(err, agent.ErrDecisionPending) {
		t.Fatalf("message while held: %v", err)
	}
	list, _ := e.rt.ListSessions(e.ctx, agent.SessionFilter{Status: "held"})
	if len(list) != 1 {
		t.Fatalf("held sessions: %+v", list)
	}
	d, _ := e.rt.GetSession(e.ctx, list[0].ID)
	if d.Pending == nil || d.Pending.ID != "h1" {
		t.Fatalf("pending: %+v", d.Pending)
	}
	// Settings change while held: the held turn keeps its snapshot.
	f := false
	e.settings.Put(e.ctx, "test", "guarded", memory.Patch{Save: &f})

	e.model.Script(
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Allergic to nuts."}],"summary":"Mentioned an allergy."}`},
		providertest.Reply{Content: "Saved your allergy."},
	)
	res, err = e.rt.Decide(e.ctx, list[0].ID, agent.Decision{Approve: true}, func(agent.Event) error { return nil })
	if err != nil || res.Text != "Saved your allergy." || res.Finish != agent.FinishStop {
		t.Fatalf("approve: %+v %v", res, err)
	}
	if rec, _ := e.mem.Recall(e.ctx, memory.RecallRequest{AgentID: "guarded", UserID: "crm/7"}); len(rec.Facts) != 1 {
		t.Fatalf("approved call did not run: %+v", rec)
	}
	if _, err := e.rt.Decide(e.ctx, list[0].ID, agent.Decision{Approve: true}, nil); !errors.Is(err, agent.ErrNoDecisionPending) {
		t.Fatalf("second decision: %v", err)
	}
	d, _ = e.rt.GetSession(e.ctx, list[0].ID)
	if d.Status != "completed" || d.Turns != 1 || !strings.Contains(d.Transcript[0].Reply, "Saved your allergy.") {
		t.Fatalf("after decision: %+v", d)
	}

	// Reject: the model hears it, nothing is saved; without a session a held
	// tool cannot pause.
	e.settings.Reset(e.ctx, "test", "guarded", "")
	e.model.Script(save, providertest.Reply{Content: "Understood, I will not save it."})
	if res, _, err := e.turn(agent.TurnRequest{Agent: "guarded", SessionKey: "s-2", Identities: ids, Messages: user("again")}); err != nil || res.Finish != agent.FinishHeld {
		t.Fatalf("second hold: %+v %v", res, err)
	}
	held, _ := e.rt.ListSessions(e.ctx, agent.SessionFilter{Status: "held"})
	res, err = e.rt.Decide(e.ctx, held[0].ID, agent.Decision{Approve: false, Reason: "not now"}, func(agent.Event) error { return nil })
	if err != nil || res.Text != "Understood, I will not save it." {
		t.Fatalf("reject: %+v %v", res, err)
	}
	reqs := e.model.ChatRequests()
	msgs := reqs[len(reqs)-1].Messages
	if last := msgs[len(msgs)-1]; last.Role != "tool" || !strings.Contains(last.Content, "rejected") || !strings.Contains(last.Content, "not now") {
		t.Fatalf("the model was not told of the rejection: %+v", last)
	}
	e.model.Script(save)
	if _, _, err := e.turn(agent.TurnRequest{Agent: "guarded", Identities: ids, Messages: user("no session")}); !errors.Is(err, agent.ErrInvalidRequest) ||
		!strings.Contains(err.Error(), "x-stackbone-session") {
		t.Fatalf("held without a session: %v", err)
	}
}

func TestProviderFailureKeepsTheSessionUsable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Script(providertest.Reply{Status: 500, Message: "boom"}, providertest.Reply{Content: "Back."})
	if _, _, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("one")}); !errors.Is(err, agent.ErrProvider) {
		t.Fatalf("provider failure: %v", err)
	}
	res := e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("two")})
	if got := e.sent(1); !slices.Equal(got, []string{"system: You are plain.", "user: two"}) || res.Text != "Back." {
		t.Fatalf("after a failed turn the session holds %q", got)
	}
	failed, _ := runs.NewStore(e.pool).List(e.ctx, runs.Filter{Status: "failed"})
	if len(failed) != 1 || failed[0].ErrorCode != "provider_failed" {
		t.Fatalf("failed run: %+v", failed)
	}
	if _, _, err := e.turn(agent.TurnRequest{Agent: "nobody", Messages: user("x")}); !errors.Is(err, agent.ErrUnknownAgent) {
		t.Fatalf("unknown agent: %v", err)
	}
}

func TestClientToolCallsAndBusySessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	weather := agent.Tool{Name: "get_weather", Description: "Weather in a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}
	e.model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("w1", "get_weather", map[string]string{"city": "Madrid"})}},
		providertest.Reply{Content: "It is sunny in Madrid."})
	res, evs, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Tools: []agent.Tool{weather}, Messages: user("Weather in Madrid?")})
	if err != nil || res.Finish != agent.FinishToolCalls || len(res.ToolCalls) != 1 || res.ToolCalls[0].Arguments != `{"city":"Madrid"}` {
		t.Fatalf("client tool call: %+v %v", res, err)
	}
	var args string
	for _, ev := range evs {
		if ev.Kind == agent.EventToolCallArgs && !ev.Server {
			args += ev.Text
		}
	}
	if args != `{"city":"Madrid"}` {
		t.Fatalf("streamed arguments %q", args)
	}
	res = e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Tools: []agent.Tool{weather},
		Messages: []agent.Message{{Role: agent.RoleTool, ToolCallID: "w1", Content: "sunny, 24C"}}})
	msgs := e.model.ChatRequests()[1].Messages
	if len(msgs) != 4 || msgs[2].ToolCalls[0].ID != "w1" || msgs[3].Role != "tool" || msgs[3].Content != "sunny, 24C" || res.Text != "It is sunny in Madrid." {
		t.Fatalf("continuation sent %+v", msgs)
	}

	// A turn in flight makes the session busy for another.
	gate := make(chan struct{})
	e.model.Script(providertest.Reply{Gate: gate, Content: "slow"})
	done := make(chan error, 1)
	go func() {
		_, _, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "busy", Messages: user("one")})
		done <- err
	}()
	for len(e.model.ChatRequests()) < 3 {
		select {
		case err := <-done:
			t.Fatalf("turn ended early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	if _, _, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "busy", Messages: user("two")}); !errors.Is(err, agent.ErrSessionBusy) {
		t.Fatalf("concurrent turn: %v", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A turn left running by a box that died frees its session within the
// session lease (seconds, not the model timeout), while a live turn longer
// than the lease keeps its session busy: its box's heartbeat renews it.
func TestSessionLeaseOutlivesOnlyLiveTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lease := 2 * time.Second
	reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: e.model.URL()}}, nil)
	box := func() *agent.Runtime {
		return agent.New(agent.Config{Pool: e.pool, Agents: e.cfg.Agents, Models: reg, Memory: e.mem, Settings: e.settings,
			Logger: pgtest.Logger(t), SessionLease: lease})
	}
	a, b := box(), box()
	turn := func(rt *agent.Runtime, key, text string) error {
		_, err := rt.Turn(e.ctx, agent.TurnRequest{Agent: "plain", SessionKey: key, Messages: user(text)}, func(agent.Event) error { return nil })
		return err
	}
	// Box A runs a long turn on "live"; a dead box left "dead" running.
	gate := make(chan struct{})
	e.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if req.Messages[len(req.Messages)-1].Content == "long" {
			return providertest.Reply{Gate: gate, Content: "finally"}
		}
		return providertest.Reply{Content: "ok"}
	})
	done := make(chan error, 1)
	go func() { done <- turn(a, "live", "long") }()
	// The long turn holds its session once its model request went out.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		asked := false
		for _, r := range e.model.ChatRequests() {
			if r.Messages[len(r.Messages)-1].Content == "long" {
				asked = true
			}
		}
		if asked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the long turn never reached the model")
		}
	}
	if err := turn(b, "dead", "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE stackbone_platform.sessions SET status = 'running', running_since = now() - interval '3 seconds'
		WHERE status = 'completed'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := turn(b, "dead", "again"); err != nil {
		t.Fatalf("a session its dead box left running: %v", err)
	}
	// Past three leases, the live turn still holds its session.
	deadline := start.Add(3 * lease)
	for time.Now().Before(deadline) {
		if err := turn(b, "live", "cut in"); !errors.Is(err, agent.ErrSessionBusy) {
			t.Fatalf("a live turn's session taken after %s: %v", time.Since(start), err)
		}
		time.Sleep(lease / 4)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := turn(b, "live", "next"); err != nil {
		t.Fatalf("the session after the long turn: %v", err)
	}
}
