// Package typescript_test runs the @stackbone/sdk suites (node --test)
// against a real box with the scripted provider: every method, the seeds'
// examples as written, the error envelope of each documented code,
// pagination, retries and aborts.
package typescript_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
)

const configYAML = `
agents:
  support:
    model: openai/chat
    instructions: You help customers.
    memory: {identityKey: customerId, read: true, save: true}
`

// extract plays the memory extractor by what the transcript says.
func extract(req *goopenai.ChatCompletionRequest) providertest.Reply {
	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Content)
	}
	text := all.String()
	if !strings.Contains(text, `"operations"`) {
		return providertest.Reply{Content: "Hello from the box."}
	}
	switch {
	case strings.Contains(text, "GARBLED"):
		return providertest.Reply{Content: "this is not JSON"}
	case strings.Contains(text, "PROVIDER DOWN"):
		return providertest.Reply{Status: 500, Message: "scripted failure"}
	case strings.Contains(text, "CONFLICT"):
		return providertest.Reply{Delay: 3 * time.Second, Content: `{"operations":[{"op":"add","content":"Raced an erasure."}],"summary":"Raced."}`}
	case strings.Contains(text, "SLOW"):
		return providertest.Reply{Delay: 20 * time.Second, Content: `{"operations":[],"summary":"Slow."}`}
	case strings.Contains(text, "where is my order"):
		return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Called about an order."}],"summary":"Asked about an order."}`}
	case strings.Contains(text, "interested in the AI master"):
		return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master; call after 16:00."}],"summary":"Asked about the AI master; wants an afternoon call back."}`}
	}
	return providertest.Reply{Content: `{"operations":[],"summary":"A short call."}`}
}

func TestTypeScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the SDK tests need Node 20 (scripts/test installs it)")
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "typescript")); err != nil {
		t.Fatal("the SDK's build tools are not installed: run `npm ci` in sdk/typescript (scripts/test does)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, node, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The generated types are those of the committed OpenAPI document.
	run("scripts/generate.mjs", "--check")
	// Both builds, as npm pack makes them.
	run("node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	run("node_modules/typescript/bin/tsc", "-p", "tsconfig.cjs.json")
	run("scripts/cjs-package.mjs")
	// Studio's test call and the call page run the build's browser call
	// module (placeCall).
	run("scripts/served.mjs", "--check")
	// The seeds' examples type-check against the declarations.
	run("node_modules/typescript/bin/tsc", "-p", "tsconfig.typecheck.json")

	b := boxtest.New(t, configYAML)
	b.Model.Respond(extract)
	// 250 calls to page through.
	if _, err := b.Pool.Exec(ctx, `INSERT INTO stackbone_platform.voice_calls
		(id, direction, agent_id, phone_number, status, started_at, ended_at, outcome, duration_seconds)
		SELECT 'call_page_' || lpad(g::text, 3, '0'), 'inbound', 'support', '+34600000' || lpad(g::text, 3, '0'), 'ended',
		       now() - g * interval '1 minute', now() - g * interval '1 minute' + interval '30 seconds', 'completed', 30
		FROM generate_series(1, 250) g`); err != nil {
		t.Fatal(err)
	}

	// MODEL_SEEN_URL answers 200 once the model was asked about a text
	// (?text=), so a suite can act while an extraction is in flight.
	seen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, req := range b.Model.ChatRequests() {
			for _, m := range req.Messages {
				if strings.Contains(m.Content, r.URL.Query().Get("text")) {
					return
				}
			}
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer seen.Close()

	suites, err := filepath.Glob(filepath.Join("test", "*.test.mjs"))
	if err != nil || len(suites) == 0 {
		t.Fatalf("no test suites in sdk/typescript/test: %v", err)
	}
	runSuites(ctx, t, node, dir, b.URL, suites, "MODEL_SEEN_URL="+seen.URL)

	// A box whose person-memory tables are gone answers memory_schema_missing.
	broken := boxtest.New(t, configYAML)
	if _, err := broken.Pool.Exec(ctx, `DROP TABLE stackbone_platform.memory_facts, stackbone_platform.memory_calls CASCADE`); err != nil {
		t.Fatal(err)
	}
	runSuites(ctx, t, node, dir, broken.URL, []string{filepath.Join("test", "schema", "missing.test.mjs")})
}

func runSuites(ctx context.Context, t *testing.T, node, dir, url string, suites []string, env ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-concurrency=1"}, suites...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BOX_URL="+url, "BOX_KEY="+boxtest.Key, "STACKBONE_URL=", "STACKBONE_API_KEY=")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		t.Log(line)
	}
	if err != nil {
		t.Fatalf("node --test %s: %v", strings.Join(suites, " "), err)
	}
}
