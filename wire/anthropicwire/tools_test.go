package anthropicwire_test

import (
	"slices"
	"testing"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/tools/toolstest"
)

// An agent's http tool runs in the box during a streamed message: the
// official client sees text blocks only, the last built from the tool's
// result, and the model was sent that result.
func TestHTTPToolInAStreamedMessage(t *testing.T) {
	t.Parallel()
	orders := toolstest.NewOrders(t)
	wb := boxtest.New(t, "agents:\n  receptionist:\n    model: openai/chat\n"+orders.ToolYAML(""), boxtest.Env(toolstest.Env()))
	b := &box{t: t, url: wb.URL, model: wb.Model, pool: wb.Pool}
	b.model.Script(
		providertest.Reply{Content: "Let me check.", ToolCalls: []providertest.Call{providertest.ToolCall("call_o", "order_status", map[string]string{"orderId": "A-1001"})}},
		providertest.Reply{Content: "Order A-1001 has shipped and arrives tomorrow."})
	msg, events := stream(t, b.client(), params("receptionist", user("Where is order A-1001?")))
	var texts []string
	for _, bl := range msg.Content {
		if bl.Type != "text" {
			t.Fatalf("the box's own tool call leaked to the client: %s", bl.RawJSON())
		}
		texts = append(texts, bl.Text)
	}
	if !slices.Equal(texts, []string{"Let me check.", "Order A-1001 has shipped and arrives tomorrow."}) || msg.StopReason != "end_turn" {
		t.Fatalf("streamed %q (%s), events %q", texts, msg.StopReason, compact(types(events)))
	}
	if got := b.sent(1); got[len(got)-1] != "tool: "+toolstest.Answer("A-1001") {
		t.Fatalf("the model was sent %q", got)
	}
}
