package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
)

// stdioServerArg makes the test binary an MCP server over stdio (see
// TestMain): a real server process the box starts, which a test can kill
// in the middle of a call.
const stdioServerArg = "stackbone-test-mcp-stdio-server"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == stdioServerArg {
		serveStdio()
		return
	}
	os.Exit(m.Run())
}

type lookupArgs struct {
	CustomerID string `json:"customerId" jsonschema:"the customer's number"`
}

func serveStdio() {
	s := mcp.NewServer(&mcp.Implementation{Name: "local", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a customer number."}, func(_ context.Context, _ *mcp.CallToolRequest, a lookupArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + a.CustomerID}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Dies in the middle of the call."}, func(context.Context, *mcp.CallToolRequest, lookupArgs) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

const crmToken = "crm-mcp-token-91d2"

// newCRM is an MCP server over streamable HTTP, built with the official Go
// SDK, that wants a bearer token.
func newCRM(t *testing.T) (*mcp.Server, string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "crm", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup_customer", Description: "Find a customer by number."}, func(_ context.Context, _ *mcp.CallToolRequest, a lookupArgs) (*mcp.CallToolResult, any, error) {
		if a.CustomerID == "0" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no customer 0"}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Customer " + a.CustomerID + ": Ada Lovelace, gold tier"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_customer", Description: "Delete a customer."}, func(context.Context, *mcp.CallToolRequest, lookupArgs) (*mcp.CallToolResult, any, error) {
		panic("the allow-list must keep this tool from the model")
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+crmToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/mcp"
}

// closedURL is a loopback URL nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

func turnOn(t *testing.T, b *boxtest.Box, agentName string, replies ...providertest.Reply) (agent.Result, *agentRequests) {
	t.Helper()
	before := len(b.Model.ChatRequests())
	b.Model.Script(replies...)
	res, err := b.Runtime.Turn(t.Context(), agent.TurnRequest{Agent: agentName, Messages: user("Help me.")}, func(agent.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return res, &agentRequests{reqs: b.Model.ChatRequests()[before:]}
}

// TestMCPOverStreamableHTTP: the allowed tools of a real MCP server are
// offered under the server's prefix with their own schemas and called
// through a turn; a tool added later is offered once the server says its
// list changed; a tool's error reaches the model as an error.
func TestMCPOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	crm, url := newCRM(t)
	b := boxtest.New(t, fmt.Sprintf(`
agents:
  concierge:
    model: openai/chat
    tools:
      - name: crm
        kind: mcp
        url: %s
        tokenEnv: CRM_MCP_TOKEN
        allow: [lookup_customer, add_note]
`, url), boxtest.Env(map[string]string{"CRM_MCP_TOKEN": crmToken}))

	res, reqs := turnOn(t, b, "concierge",
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "crm__lookup_customer", map[string]string{"customerId": "42"})}},
		providertest.Reply{Content: "You are a gold customer."})
	if got := offered(reqs.reqs[0]); strings.Join(got, ",") != "crm__lookup_customer" {
		t.Fatalf("offered %v, want only crm__lookup_customer", got)
	}
	if schema, _ := json.Marshal(reqs.reqs[0].Tools[0].Function.Parameters); !strings.Contains(string(schema), `"customerId"`) {
		t.Fatalf("the server's schema was not passed on: %s", schema)
	}
	if got := toolResult(t, reqs.reqs, 1); got != "Customer 42: Ada Lovelace, gold tier" {
		t.Fatalf("the model saw %q", got)
	}
	if calls := toolRuns(t, b, res.RunID); len(calls) != 1 || calls[0]["outcome"] != "ok" || calls[0]["name"] != "crm__lookup_customer" {
		t.Fatalf("run history %+v", calls)
	}

	// The tool's own error.
	res, reqs = turnOn(t, b, "concierge",
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "crm__lookup_customer", map[string]string{"customerId": "0"})}},
		providertest.Reply{Content: "No such customer."})
	if got := toolResult(t, reqs.reqs, 1); got != "error: crm__lookup_customer failed: no customer 0" {
		t.Fatalf("the model saw %q", got)
	}
	if calls := toolRuns(t, b, res.RunID); calls[0]["outcome"] != "tool_error" {
		t.Fatalf("run history %+v", calls)
	}

	// The server adds a tool: it says its list changed, and the box lists again.
	mcp.AddTool(crm, &mcp.Tool{Name: "add_note", Description: "Add a note to a customer."}, func(_ context.Context, _ *mcp.CallToolRequest, a lookupArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noted for " + a.CustomerID}}}, nil, nil
	})
	poll.Until(t, "the new tool listed after the server said its list changed", 10*time.Second, func() bool {
		for _, st := range b.Tools.List(t.Context(), "concierge") {
			if st.Def.Name == "crm__add_note" {
				return true
			}
		}
		return false
	})
	_, reqs = turnOn(t, b, "concierge",
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "crm__add_note", map[string]string{"customerId": "7"})}},
		providertest.Reply{Content: "Noted."})
	if got := offered(reqs.reqs[0]); strings.Join(got, ",") != "crm__add_note,crm__lookup_customer" {
		t.Fatalf("offered %v", got)
	}
	if got := toolResult(t, reqs.reqs, 1); got != "noted for 7" {
		t.Fatalf("the model saw %q", got)
	}
}

// TestMCPServerDown: a server that is down does not stop the box or the
// turn: its tools are left out and the run says why.
func TestMCPServerDown(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, fmt.Sprintf(`
agents:
  concierge:
    model: openai/chat
    tools:
      - name: crm
        kind: mcp
        url: %s
        timeout: 2s
`, closedURL(t)))
	res, reqs := turnOn(t, b, "concierge", providertest.Reply{Content: "I cannot look that up right now."})
	if got := offered(reqs.reqs[0]); len(got) != 0 {
		t.Fatalf("offered %v, want nothing of a server that is down", got)
	}
	if res.Text != "I cannot look that up right now." {
		t.Fatalf("turn %+v", res)
	}
	meta := runMeta(t, b, res.RunID)
	if !strings.Contains(meta, `"toolsLeftOut": [{"name": "crm", "reason": "mcp server crm: cannot connect to the mcp server at http://127.0.0.1:`) {
		t.Fatalf("the run does not say why the tools were left out: %s", meta)
	}
}

// TestMCPServerDiesMidCall: a stdio server that exits during a call gives
// the model a short error and the turn goes on; the next turn leaves the
// server's tools out and says why, and the server is started again.
func TestMCPServerDiesMidCall(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := boxtest.New(t, fmt.Sprintf(`
agents:
  concierge:
    model: openai/chat
    tools:
      - name: local
        kind: mcp
        command: [%q, %s]
        timeout: 5s
`, exe, stdioServerArg))
	res, reqs := turnOn(t, b, "concierge",
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "local__echo", map[string]string{"customerId": "5"})}},
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c2", "local__crash", map[string]string{"customerId": "5"})}},
		providertest.Reply{Content: "Sorry, that did not work."})
	if got := toolResult(t, reqs.reqs, 1); got != "echo 5" {
		t.Fatalf("the model saw %q", got)
	}
	if got := toolResult(t, reqs.reqs, 2); !strings.HasPrefix(got, "error: the local tool server stopped answering") {
		t.Fatalf("the model saw %q", got)
	}
	if res.Text != "Sorry, that did not work." {
		t.Fatalf("turn %+v", res)
	}
	calls := toolRuns(t, b, res.RunID)
	if len(calls) != 2 || calls[0]["outcome"] != "ok" || calls[1]["outcome"] != "unavailable" {
		t.Fatalf("run history %+v", calls)
	}
	res, reqs = turnOn(t, b, "concierge", providertest.Reply{Content: "Tools are down."})
	if got := offered(reqs.reqs[0]); len(got) != 0 {
		t.Fatalf("offered %v after the server died", got)
	}
	if meta := runMeta(t, b, res.RunID); !strings.Contains(meta, `"toolsLeftOut"`) {
		t.Fatalf("the run does not say why: %s", meta)
	}
	poll.Until(t, "the server started again", 20*time.Second, func() bool {
		list := b.Tools.List(t.Context(), "concierge")
		return len(list) == 2 && list[0].Unavailable == ""
	})
}

// TestMCPEverythingOverStdio runs the reference server of the MCP project
// (@modelcontextprotocol/server-everything, installed by scripts/test with
// npm ci under testdata/mcp) over stdio: its tools are listed and called
// through a real turn.
func TestMCPEverythingOverStdio(t *testing.T) {
	t.Parallel()
	index, err := filepath.Abs("testdata/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("server-everything is not installed (scripts/test runs npm ci in tools/testdata/mcp): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required (scripts/test installs it): %v", err)
	}
	b := boxtest.New(t, fmt.Sprintf(`
agents:
  concierge:
    model: openai/chat
    tools:
      - name: everything
        kind: mcp
        command: [%q, %q, stdio]
        allow: [echo, get-sum]
        timeout: 20s
`, node, index))
	res, reqs := turnOn(t, b, "concierge",
		providertest.Reply{ToolCalls: []providertest.Call{
			providertest.ToolCall("c1", "everything__echo", map[string]string{"message": "hello from the box"}),
			providertest.ToolCall("c2", "everything__get-sum", map[string]int{"a": 2, "b": 40}),
		}},
		providertest.Reply{Content: "Done."})
	if got := offered(reqs.reqs[0]); strings.Join(got, ",") != "everything__echo,everything__get-sum" {
		t.Fatalf("offered %v", got)
	}
	var results []string
	for _, m := range reqs.reqs[1].Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || results[0] != "Echo: hello from the box" || results[1] != "The sum of 2 and 40 is 42." {
		t.Fatalf("the model saw %q", results)
	}
	if calls := toolRuns(t, b, res.RunID); len(calls) != 2 || calls[0]["outcome"] != "ok" || calls[1]["outcome"] != "ok" {
		t.Fatalf("run history %+v", calls)
	}
}
