package openaiwire_test

import (
	"testing"

	openai "github.com/openai/openai-go/v3"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/tools/toolstest"
)

// An agent's http tool runs in the box during a streamed completion: the
// official client sees only the answer built from the tool's result, and
// the model was sent that result.
func TestHTTPToolInAStreamedCompletion(t *testing.T) {
	t.Parallel()
	orders := toolstest.NewOrders(t)
	wb := boxtest.New(t, "agents:\n  receptionist:\n    model: openai/chat\n"+orders.ToolYAML(""), boxtest.Env(toolstest.Env()))
	b := &box{t: t, url: wb.URL, model: wb.Model, pool: wb.Pool, box: wb}
	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_o", "order_status", map[string]string{"orderId": "A-1001"})}},
		providertest.Reply{Content: "Order A-1001 has shipped and arrives tomorrow."})
	acc, chunks := stream(t, b.client(), openai.ChatCompletionNewParams{Model: "receptionist", Messages: user("Where is order A-1001?")})
	if got := acc.Choices[0].Message.Content; got != "Order A-1001 has shipped and arrives tomorrow." {
		t.Fatalf("streamed %q", got)
	}
	if len(chunks) < 2 || len(acc.Choices[0].Message.ToolCalls) != 0 || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("the box's own tool call leaked to the client, or the stream was not streamed: %d chunks, %+v", len(chunks), acc.Choices[0])
	}
	if got := b.sent(1); got[len(got)-1] != "tool: "+toolstest.Answer("A-1001") {
		t.Fatalf("the model was sent %q", got)
	}
	if orders.Calls() != 1 {
		t.Fatalf("the order service got %d calls", orders.Calls())
	}
}
