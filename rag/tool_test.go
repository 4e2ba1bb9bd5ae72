package rag_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
)

const supportYAML = `
agents:
  support:
    model: openai/chat
    instructions: Use search_docs for any question about policies and answer from what it returns.
    tools:
      - name: search_docs
        kind: retrieval
        collection: help-center
        topK: 2
        description: Search the help center before answering a question about policies.
`

// TestAgentAnswersFromTheHits runs a real turn: the model calls the declared
// retrieval tool, the box searches the tool's collection, and the next
// model request carries the hits.
func TestAgentAnswersFromTheHits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createCollection("help-center")
	e.createCollection("internal")
	e.ingest("help-center", "returns",
		rag.Chunk{Content: "You can return any item within 30 days of delivery."},
		rag.Chunk{Content: "Refunds reach your card within 5 business days."},
		rag.Chunk{Content: "Gift cards cannot be returned."})
	e.ingest("internal", "secret", chunks("Internal: return fraud threshold is 3 returns per month.")...)

	cfg, err := config.Parse([]byte(supportYAML))
	if err != nil {
		t.Fatal(err)
	}
	log := pgtest.Logger(t)
	mem := memory.NewService(memory.Config{Pool: e.pool, Models: e.models, Logger: log, FallbackModel: "openai/extractor"})
	settings := memory.NewSettings(e.pool, memory.AgentsFromConfig(cfg), log)
	rt := agent.New(agent.Config{Pool: e.pool, Agents: cfg.Agents, Models: e.models, Memory: mem, Settings: settings,
		Tools: e.svc.Tools(cfg.Agents), Logger: log})

	e.prov.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_1", "search_docs", map[string]string{"query": "how long to return an item"})}},
		providertest.Reply{Content: "You have 30 days to return an item."},
	)
	var results []string
	res, err := rt.Turn(context.Background(), agent.TurnRequest{Agent: "support", Wire: "test",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "How long do I have to return something?"}}},
		func(ev agent.Event) error {
			if ev.Kind == agent.EventToolResult {
				results = append(results, ev.Text)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "You have 30 days to return an item." {
		t.Fatalf("answer = %q", res.Text)
	}
	chats := e.prov.ChatRequests()
	if len(chats) != 2 {
		t.Fatalf("%d chat requests", len(chats))
	}
	var offered []string
	for _, tl := range chats[0].Tools {
		offered = append(offered, tl.Function.Name+": "+tl.Function.Description)
	}
	if len(offered) != 1 || offered[0] != "search_docs: Search the help center before answering a question about policies." {
		t.Fatalf("tools offered = %v", offered)
	}
	// The second request carries the tool result: the hits of help-center, best first.
	var toolMsg string
	for _, m := range chats[1].Messages {
		if m.Role == "tool" && m.ToolCallID == "call_1" {
			toolMsg = m.Content
		}
	}
	blocks := strings.Split(toolMsg, "\n\n")
	if len(blocks) != 2 || !strings.HasPrefix(blocks[0], "[") || !strings.Contains(blocks[0], "] You can return any item within 30 days of delivery.") {
		t.Fatalf("tool result sent to the model = %q", toolMsg)
	}
	if strings.Contains(toolMsg, "fraud") {
		t.Fatal("the tool searched beyond its collection")
	}
	if len(results) != 1 || results[0] != toolMsg {
		t.Fatalf("tool result events = %q", results)
	}
	// The query the model chose is what was embedded.
	embs := e.prov.EmbeddingsRequests()
	if q := embs[len(embs)-1]; len(q.Input) != 1 || q.Input[0] != "how long to return an item" {
		t.Fatalf("embedded query = %+v", q)
	}

	// A failed search reaches the model as a result, not a failed turn.
	e.prov.ScriptEmbeddings(providertest.EmbedReply{Status: 500, Message: "down"})
	e.prov.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_2", "search_docs", map[string]string{"query": "refunds"})}},
		providertest.Reply{Content: "I cannot search right now."},
	)
	if _, err := rt.Turn(context.Background(), agent.TurnRequest{Agent: "support", Messages: []agent.Message{{Role: agent.RoleUser, Content: "Refunds?"}}},
		func(agent.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	last := e.prov.ChatRequests()[3]
	if m := last.Messages[len(last.Messages)-1]; m.Role != "tool" || m.Content != "search_failed: rag_embedding_failed" {
		t.Fatalf("failed search result = %+v", m)
	}
}
