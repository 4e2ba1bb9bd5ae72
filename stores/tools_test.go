package stores_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/bench/storesbench"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/postgres/notify"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/stores"
)

func toolsOf(r *openai.ChatCompletionRequest) map[string]*openai.FunctionDefinition {
	out := map[string]*openai.FunctionDefinition{}
	for _, tl := range r.Tools {
		out[tl.Function.Name] = tl.Function
	}
	return out
}

// lastToolResult decodes the last tool message a request carries.
func lastToolResult(t *testing.T, r *openai.ChatCompletionRequest) map[string]any {
	t.Helper()
	m := r.Messages[len(r.Messages)-1]
	if m.Role != openai.ChatMessageRoleTool {
		t.Fatalf("last message is %s, not a tool result", m.Role)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(m.Content), &v); err != nil {
		t.Fatalf("tool result %q: %v", m.Content, err)
	}
	return v
}

func TestSessionBrowsesSearchesAndReadsAttachedStores(t *testing.T) {
	t.Parallel()
	tap := &logTap{}
	e := newEnv(t, tapLogs(tap))
	e.createStore("Release policy", nil)
	e.createMemory("release-policy", "/releases/versioning.md", "How release versions are chosen.", "Bump the minor version for features and the patch version for fixes.")
	e.createMemory("release-policy", "/releases/checklists/deploy.md", "The deploy checklist.", "Freeze, tag, deploy, announce.")
	e.createStore("Team notes", ptr("release"))
	e.createStore("Other agents store", ptr("support"))
	e.createStore("Frozen", nil)
	if r := e.call("POST", "/api/memory_stores/frozen/archive", nil); r.status != 204 {
		t.Fatal(r.raw)
	}

	e.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "list_memories", map[string]any{"store": "release-policy", "path_prefix": "/releases/"})}},
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c2", "search_memories", map[string]any{"query": "minor version"})}},
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c3", "read_memory", map[string]any{"store": "release-policy", "path": "/releases/versioning.md"})}},
		providertest.Reply{ToolCalls: []providertest.Call{
			providertest.ToolCall("c4", "create_memory", map[string]any{"store": "team-notes", "path": "/releases/2.4.md", "summary": "What 2.4 shipped.", "content": "2.4 is a minor release."}),
			providertest.ToolCall("c5", "create_memory", map[string]any{"store": "release-policy", "path": "/x.md", "summary": "X.", "content": "X."}),
		}},
		providertest.Reply{Content: "Bump the minor version: 2.4.0."},
	)
	rt := e.runtime()
	res, err := rt.Turn(e.ctx, agent.TurnRequest{Agent: "release", SessionKey: "k1",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "We added a feature. What version do we ship?"}}}, func(agent.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Bump the minor version: 2.4.0." {
		t.Fatalf("answer %q", res.Text)
	}
	reqs := e.model.ChatRequests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests", len(reqs))
	}

	// The first request: the stores' names, descriptions and instructions
	// in the tools, their contents nowhere.
	first := reqs[0]
	tools := toolsOf(first)
	for _, name := range []string{"list_memories", "search_memories", "read_memory", "create_memory", "update_memory", "delete_memory"} {
		if tools[name] == nil {
			t.Fatalf("tool %s not offered: %v", name, tools)
		}
	}
	desc := tools["list_memories"].Description
	for _, want := range []string{
		"- learned-release (Learned memory, read only): What the agent release learned",
		"- release-policy (Release policy, read only): About Release policy. Instructions: Check release policy before you change a release workflow.",
		"- team-notes (Team notes, read and write): About Team notes.",
	} {
		if !strings.Contains(desc, want) {
			t.Fatalf("list_memories description lacks %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "other-agents-store") || strings.Contains(desc, "frozen") {
		t.Fatalf("a store scoped to another agent or archived was offered:\n%s", desc)
	}
	raw, _ := json.Marshal(first)
	if strings.Contains(string(raw), "Bump the minor version for features") || strings.Contains(string(raw), "Freeze, tag") {
		t.Fatal("store contents were put in the prompt")
	}
	var params struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(tools["read_memory"].Parameters)
	if err := json.Unmarshal(b, &params); err != nil {
		t.Fatal(err)
	}
	if got := params.Properties["store"].Enum; !slices.Equal(got, []string{"learned-release", "release-policy", "team-notes"}) {
		t.Fatalf("store choices %v", got)
	}
	b, _ = json.Marshal(tools["create_memory"].Parameters)
	_ = json.Unmarshal(b, &params)
	if got := params.Properties["store"].Enum; !slices.Equal(got, []string{"team-notes"}) {
		t.Fatalf("writable store choices %v", got)
	}

	// What each tool answered, as the model received it.
	list := lastToolResult(t, reqs[1])
	raw, _ = json.Marshal(list["entries"])
	var entries []stores.Entry
	if err := json.Unmarshal(raw, &entries); err != nil || len(entries) != 2 || strings.Contains(string(raw), "Bump") ||
		entries[0].Type != "memory_prefix" || entries[0].Path != "/releases/checklists/" || *entries[0].Count != 1 ||
		entries[1].Type != "memory" || entries[1].Path != "/releases/versioning.md" || *entries[1].Summary != "How release versions are chosen." {
		t.Fatalf("list_memories result: %s", raw)
	}
	search := lastToolResult(t, reqs[2])
	hits, _ := search["results"].([]any)
	if len(hits) != 1 || hits[0].(map[string]any)["path"] != "/releases/versioning.md" || hits[0].(map[string]any)["store"] != "release-policy" {
		t.Fatalf("search_memories result: %v", search)
	}
	read := lastToolResult(t, reqs[3])
	if read["content"] != "Bump the minor version for features and the patch version for fixes." ||
		read["content_sha256"] != stores.SHA256("Bump the minor version for features and the patch version for fixes.") {
		t.Fatalf("read_memory result: %v", read)
	}
	msgs := reqs[4].Messages
	created, refused := map[string]any{}, map[string]any{}
	_ = json.Unmarshal([]byte(msgs[len(msgs)-2].Content), &created)
	_ = json.Unmarshal([]byte(msgs[len(msgs)-1].Content), &refused)
	if created["path"] != "/releases/2.4.md" || created["store"] != "team-notes" {
		t.Fatalf("create_memory result: %v", created)
	}
	if e, _ := refused["error"].(map[string]any); e == nil || e["code"] != "invalid_request" || !strings.Contains(e["message"].(string), "read only") {
		t.Fatalf("write to a read-only store: %v", refused)
	}

	// The session's write is a version by the session.
	var m stores.Memory
	e.call("GET", "/api/memory_stores/team-notes/memory?path=/releases/2.4.md", nil).ok(t, 200, &m)
	var d stores.VersionDetail
	e.call("GET", "/api/memory_stores/team-notes/memory_versions/"+m.HeadVersionID.String(), nil).ok(t, 200, &d)
	if d.AuthorKind != "session" || !strings.HasPrefix(d.AuthorID, "ses_") {
		t.Fatalf("session version: %+v", d)
	}
	e.call("GET", "/api/memory_stores/release-policy/memory?path=/x.md", nil).fails(t, 404, "not_found")

	// An agent with no attachments and an empty learned store is offered
	// no store tools: they could not help, and their definitions cost
	// input tokens on every request.
	e.model.Script(providertest.Reply{Content: "Hello."})
	if _, err := rt.Turn(e.ctx, agent.TurnRequest{Agent: "support", Messages: []agent.Message{{Role: agent.RoleUser, Content: "Hi"}}},
		func(agent.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	reqs = e.model.ChatRequests()
	if tools = toolsOf(reqs[len(reqs)-1]); len(tools) != 0 {
		t.Fatalf("support's tools with an empty learned store: %v", tools)
	}
	tap.refuteLogged(t, "Bump the minor", "Freeze, tag", "2.4 is a minor release", "minor version")
}

// TestStoreToolsFollowTheLearnedStore: the tools each agent is offered are
// cached, and a learned store that starts to hold memories (written by any
// box or job) reaches the cache by notification: the next turns offer its
// tools, read only.
func TestStoreToolsFollowTheLearnedStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := notify.New(e.pool, pgtest.Logger(t))
	e.svc.Subscribe(l)
	ctx, cancel := context.WithCancel(e.ctx)
	t.Cleanup(cancel)
	go l.Run(ctx)
	rt := e.runtime()
	toolsNow := func() map[string]*openai.FunctionDefinition {
		e.model.Script(providertest.Reply{Content: "Hello."})
		if _, err := rt.Turn(e.ctx, agent.TurnRequest{Agent: "support", Messages: []agent.Message{{Role: agent.RoleUser, Content: "Hi"}}},
			func(agent.Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
		reqs := e.model.ChatRequests()
		return toolsOf(reqs[len(reqs)-1])
	}
	if tools := toolsNow(); len(tools) != 0 {
		t.Fatalf("tools with an empty learned store: %v", tools)
	}
	am, err := e.svc.GetAgentMemory(e.ctx, "support")
	if err != nil {
		t.Fatal(err)
	}
	if err := storesbench.Seed(e.ctx, e.pool, am.MemoryStoreID, 2, 200); err != nil {
		t.Fatal(err)
	}
	var tools map[string]*openai.FunctionDefinition
	poll.Until(t, "the learned store's tools offered", 10*time.Second, func() bool {
		tools = toolsNow()
		return len(tools) > 0
	})
	if len(tools) != 3 || tools["list_memories"] == nil || tools["create_memory"] != nil ||
		!strings.Contains(tools["list_memories"].Description, "- learned-support (Learned memory, read only)") {
		t.Fatalf("support's tools: %v", tools)
	}
	// The agent's config can ask for them always.
	e2 := newEnv(t)
	a := e2.cfg.Agents["support"]
	a.StoreTools = true
	e2.cfg.Agents["support"] = a
	e2.svc = stores.New(stores.Config{Pool: e2.pool, Agents: e2.cfg.Agents, Models: e2.reg, Logger: pgtest.Logger(t)})
	e2.model.Script(providertest.Reply{Content: "Hello."})
	if _, err := e2.runtime().Turn(e2.ctx, agent.TurnRequest{Agent: "support", Messages: []agent.Message{{Role: agent.RoleUser, Content: "Hi"}}},
		func(agent.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	reqs := e2.model.ChatRequests()
	if tools := toolsOf(reqs[len(reqs)-1]); len(tools) != 3 {
		t.Fatalf("tools with storeTools: true: %v", tools)
	}
}

func TestToolCallErrorsAnswerTheModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createStore("Team notes", ptr("release"))
	m := e.createMemory("team-notes", "/a.md", "A.", "Alpha.")
	e.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{
			providertest.ToolCall("c1", "read_memory", map[string]any{"store": "nope", "path": "/a.md"}),
			providertest.ToolCall("c2", "read_memory", map[string]any{"store": "team-notes", "path": "/missing.md"}),
			providertest.ToolCall("c3", "list_memories", map[string]any{"store": "team-notes", "path_prefix": "/../"}),
			providertest.ToolCall("c4", "update_memory", map[string]any{"store": "team-notes", "path": "/a.md", "content": "Beta.", "content_sha256": strings.Repeat("0", 64)}),
			providertest.ToolCall("c5", "update_memory", map[string]any{"store": "team-notes", "path": "/a.md", "content": "Beta.", "content_sha256": m.ContentSHA256}),
			providertest.ToolCall("c6", "delete_memory", map[string]any{"store": "team-notes", "path": "/a.md"}),
			providertest.ToolCall("c7", "search_memories", map[string]any{}),
		}},
		providertest.Reply{Content: "Done."},
	)
	rt := e.runtime()
	if _, err := rt.Turn(e.ctx, agent.TurnRequest{Agent: "release", Messages: []agent.Message{{Role: agent.RoleUser, Content: "Go"}}},
		func(agent.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	msgs := e.model.ChatRequests()[1].Messages
	var codes []string
	for _, msg := range msgs[len(msgs)-7:] {
		var v map[string]any
		if err := json.Unmarshal([]byte(msg.Content), &v); err != nil {
			t.Fatal(err)
		}
		if er, ok := v["error"].(map[string]any); ok {
			codes = append(codes, er["code"].(string))
		} else {
			codes = append(codes, "ok")
		}
	}
	if strings.Join(codes, ",") != "invalid_request,not_found,invalid_request,content_sha256_mismatch,ok,ok,invalid_request" {
		t.Fatalf("tool results: %v", codes)
	}
	var page stores.VersionPage
	e.call("GET", "/api/memory_stores/team-notes/memory_versions?memory_id="+m.ID.String(), nil).ok(t, 200, &page)
	if len(page.Versions) != 3 || page.Versions[0].Operation != "deleted" || page.Versions[0].AuthorKind != "session" ||
		!strings.HasPrefix(page.Versions[0].AuthorID, "run:") {
		t.Fatalf("history: %+v", page.Versions)
	}
}
