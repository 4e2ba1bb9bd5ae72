package aguiwire_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
)

// While the provider is slow to answer, the run's stream carries SSE
// comment keep-alives after RUN_STARTED; the AG-UI SDK's client skips them
// and receives the whole run.
func TestStreamKeepsAliveWhileTheProviderIsSlow(t *testing.T) {
	t.Parallel()
	wb := boxtest.New(t, boxYAML+"http: {streamKeepAlive: 100ms}\n")
	b := &box{url: wb.URL, model: wb.Model, keys: wb.Keys, pool: wb.Pool}
	const answer = "Sorry for the wait."
	b.model.Script(providertest.Reply{Content: answer, Delay: time.Second}, providertest.Reply{Content: answer, Delay: time.Second})

	// On the wire: RUN_STARTED, keep-alives while the provider is silent,
	// then the answer.
	in := types.RunAgentInput{ThreadID: "thread-ka", RunID: "run-1", Messages: []types.Message{userMsg("u1", "Hello?")}}
	resp, raw := post(t, b.url+"/agui/support", boxKey, body(t, in))
	s := string(raw)
	n := strings.Count(s, "\n: keep-alive\n\n")
	started, first, text := strings.Index(s, "RUN_STARTED"), strings.Index(s, ": keep-alive"), strings.Index(s, "TEXT_MESSAGE_START")
	if resp.StatusCode != http.StatusOK || n < 2 || started < 0 || first < started || text < first {
		t.Fatalf("status %d, %d keep-alives: want RUN_STARTED, keep-alives, then the answer:\n%s", resp.StatusCode, n, s)
	}
	checkRun(t, parseSSE(t, strings.NewReader(s)), in.ThreadID, in.RunID)

	// The SDK's client reads past them.
	in.ThreadID, in.RunID = "thread-ka-2", "run-2"
	r := b.run(t, "support", in)
	textRun(t, r, answer)
	t.Logf("%d keep-alives while the provider was silent", n)
}
