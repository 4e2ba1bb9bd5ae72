package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/tools"
)

func user(text string) []agent.Message { return []agent.Message{{Role: agent.RoleUser, Content: text}} }

// toolResult is the content of the tool message the model was sent in
// its nth chat request (negative n counts from the end).
func toolResult(t *testing.T, reqs []*openai.ChatCompletionRequest, n int) string {
	t.Helper()
	if n < 0 {
		n += len(reqs)
	}
	if n < 0 || n >= len(reqs) {
		t.Fatalf("the model got %d requests", len(reqs))
	}
	msgs := reqs[n].Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" {
			return msgs[i].Content
		}
	}
	t.Fatalf("request %d holds no tool result", n)
	return ""
}

// toolRuns is the toolCalls of a run's metadata.
func toolRuns(t *testing.T, b *boxtest.Box, run uuid.UUID) []map[string]any {
	t.Helper()
	var meta []byte
	if err := b.Pool.QueryRow(t.Context(), `SELECT metadata FROM stackbone_platform.runs WHERE id = $1`, run).Scan(&meta); err != nil {
		t.Fatal(err)
	}
	var m struct {
		ToolCalls []map[string]any `json:"toolCalls"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		t.Fatal(err)
	}
	return m.ToolCalls
}

// runMeta is a run's whole metadata as JSON text.
func runMeta(t *testing.T, b *boxtest.Box, run uuid.UUID) string {
	t.Helper()
	var meta []byte
	if err := b.Pool.QueryRow(t.Context(), `SELECT metadata FROM stackbone_platform.runs WHERE id = $1`, run).Scan(&meta); err != nil {
		t.Fatal(err)
	}
	return string(meta)
}

func offered(r *openai.ChatCompletionRequest) []string {
	var out []string
	for _, tl := range r.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func toolsNew(agents map[string]config.Agent, env map[string]string) (*tools.Service, error) {
	return tools.New(tools.Config{Agents: agents, Getenv: func(k string) string { return env[k] }})
}

type agentRequests struct {
	reqs []*openai.ChatCompletionRequest
}
