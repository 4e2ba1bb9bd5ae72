package jsclients_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
)

// The scripted model reports usage on every chunk when asked, as vLLM
// does; the box asks it (continuousUsage), so message_start on the
// Anthropic stream reports the input tokens.
const agentsYAML = `
providers:
  openai: {continuousUsage: true}
agents:
  support:
    model: openai/chat
    instructions: You help customers.
    memory: {identityKey: customerId, read: true, save: false}
  guarded:
    model: openai/chat
    memory: {identityKey: customerId, read: false, save: true}
    interruptOn: [memory_save]
  chained:
    model: [openai/chat, backup/chat]
    instructions: You help customers.
`

// The scripted model answers by rule, so each script can check what the
// model was sent through the answer it gets:
//   - after a tool result: the weather answer (or, after memory_read, the
//     second step of a box-run tool turn), with counts of the user
//     messages, tool calls and tool results the model received;
//   - "weather" with a get_weather tool offered: a call of it;
//   - "remember": text, then memory_read (a tool the box runs);
//   - "save that": text, then memory_save, held for a person's decision on
//     the guarded agent;
//   - "long story": a slow answer, for stopping;
//   - "fail": a provider error;
//   - anything else: a greeting with the counts, and whether the model saw
//     a cut answer.
func respond(req *goopenai.ChatCompletionRequest) providertest.Reply {
	users, calls, results, cut := 0, 0, 0, false
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			users++
		case "assistant":
			calls += len(m.ToolCalls)
			cut = cut || strings.Contains(m.Content, agent.CutMarker)
		case "tool":
			results++
		}
	}
	counts := fmt.Sprintf("[users=%d calls=%d results=%d cut=%v]", users, calls, results, cut)
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" {
		if strings.HasPrefix(last.ToolCallID, "call_mem") {
			return providertest.Reply{Content: "I have nothing saved about you yet."}
		}
		return providertest.Reply{Content: "Rain in Oslo. " + counts}
	}
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Function.Name == "get_weather"
	}
	text := strings.ToLower(last.Content)
	switch {
	case strings.Contains(text, "weather") && offered:
		return providertest.Reply{ToolCalls: []providertest.Call{
			providertest.ToolCall(fmt.Sprintf("call_w%d", len(req.Messages)), "get_weather", map[string]string{"city": "Oslo"})}}
	case strings.Contains(text, "save that"):
		return providertest.Reply{Content: "I will save that.",
			ToolCalls: []providertest.Call{providertest.ToolCall(fmt.Sprintf("call_save%d", len(req.Messages)), "memory_save", map[string]string{"content": "Likes tea."})}}
	case strings.Contains(text, "remember"):
		return providertest.Reply{Content: "Let me check your saved details.",
			ToolCalls: []providertest.Call{providertest.ToolCall(fmt.Sprintf("call_mem%d", len(req.Messages)), "memory_read", map[string]any{})}}
	case strings.Contains(text, "long story"):
		return providertest.Reply{Content: strings.Repeat("Once upon a time there was a parcel that travelled far. ", 40), ChunkDelay: 50 * time.Millisecond}
	case strings.Contains(text, "fall back"):
		return providertest.Reply{Status: 503, Message: "scripted outage"}
	case strings.Contains(text, "cut short"):
		return providertest.Reply{Content: "The first half", Cut: true}
	case strings.Contains(text, "fail"):
		return providertest.Reply{Status: 500, Message: "scripted failure"}
	}
	// GREETING_USAGE in testdata/lib.mjs.
	return providertest.Reply{Content: "Hello from the box. " + counts, PromptTokens: 321, CompletionTokens: 12}
}

// respondBackup is the second model of the chained agent's chain: it
// answers what the primary fails ("fall back") and continues what the
// primary cut ("cut short").
func respondBackup(req *goopenai.ChatCompletionRequest) providertest.Reply {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "system" && strings.Contains(last.Content, "cut off") {
		return providertest.Reply{Content: " and the second half."}
	}
	return providertest.Reply{Content: "Backup here."}
}

func TestJavaScriptClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the JavaScript client tests need Node 20 (scripts/test installs it)")
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatal("the JavaScript clients are not installed: run `npm ci` in wire/jsclients/testdata (scripts/test does)")
	}
	for _, script := range []string{"openai.mjs", "anthropic.mjs", "aisdk.mjs", "langchain.mjs", "agui.mjs", "responses.mjs"} {
		t.Run(strings.TrimSuffix(script, ".mjs"), func(t *testing.T) {
			t.Parallel()
			backup := providertest.New(t)
			backup.Respond(respondBackup)
			b := boxtest.New(t, agentsYAML, boxtest.Tune(func(cfg *config.Config) {
				cfg.Providers["backup"] = config.Provider{BaseURL: backup.URL()}
			}))
			b.Model.Respond(respond)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "BOX_URL="+b.URL, "BOX_KEY="+boxtest.Key)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				t.Log(line)
			}
			if err != nil {
				t.Fatalf("%s: %v", script, err)
			}
		})
	}
}
