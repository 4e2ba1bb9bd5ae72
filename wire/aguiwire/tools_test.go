package aguiwire_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/tools/toolstest"
)

// An agent's http tool runs in the box during an AG-UI run: the SDK client
// sees the call, its result and the answer built from it, streamed.
func TestHTTPToolInAnAGUIRun(t *testing.T) {
	t.Parallel()
	orders := toolstest.NewOrders(t)
	wb := boxtest.New(t, "agents:\n  receptionist:\n    model: openai/chat\n"+orders.ToolYAML(""), boxtest.Env(toolstest.Env()))
	b := &box{url: wb.URL, model: wb.Model, keys: wb.Keys, pool: wb.Pool}
	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_o", "order_status", map[string]string{"orderId": "A-1001"})}},
		providertest.Reply{Content: "Order A-1001 has shipped and arrives tomorrow."})
	r := b.run(t, "receptionist", types.RunAgentInput{ThreadID: "thread-o", RunID: "run-1", Messages: []types.Message{userMsg("u1", "Where is order A-1001?")}})
	want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if got := slices.Compact(r.types()); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if c := r.Calls["call_o"]; c == nil || c.Name != "order_status" || c.Args != `{"orderId":"A-1001"}` {
		t.Fatalf("call %+v", r.Calls["call_o"])
	}
	if got := r.Results["call_o"].str("content"); got != toolstest.Answer("A-1001") {
		t.Fatalf("result %q", got)
	}
	if r.text() != "Order A-1001 has shipped and arrives tomorrow." {
		t.Fatalf("text %q", r.text())
	}
}
