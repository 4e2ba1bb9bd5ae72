package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stackbone/box/tools/toolstest"
)

// TestToolsCLI lists an agent's http tool and calls it against a real
// service, as an operator would, with the secret from the environment.
func TestToolsCLI(t *testing.T) {
	orders := toolstest.NewOrders(t)
	t.Setenv("ORDERS_TOKEN", toolstest.Token)
	path := filepath.Join(t.TempDir(), "box.yaml")
	yaml := "agents:\n  receptionist:\n    model: openai/chat\n" + orders.ToolYAML("")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		cmd := toolsCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append(args, "--config", path))
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}
	out, _, err := run("list", "receptionist")
	if err != nil || !strings.Contains(out, "order_status") || !strings.Contains(out, "Look up an order by its number.") || !strings.Contains(out, `"orderId"`) {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, errOut, err := run("call", "receptionist", "order_status", "--args", `{"orderId":"A-1001"}`)
	if err != nil || strings.TrimSpace(out) != toolstest.Answer("A-1001") || !strings.HasPrefix(errOut, "outcome ok in ") {
		t.Fatalf("call: %v\n%s\n%s", err, out, errOut)
	}
	if _, _, err := run("call", "receptionist", "nope", "--args", `{}`); err == nil || !strings.Contains(err.Error(), `has no http or mcp tool "nope"`) {
		t.Fatalf("unknown tool: %v", err)
	}
	if _, _, err := run("list", "ghost"); err == nil || !strings.Contains(err.Error(), `no agent "ghost"`) {
		t.Fatalf("unknown agent: %v", err)
	}
	if strings.Contains(out+errOut, toolstest.Token) {
		t.Fatal("the secret was printed")
	}
}
