package box_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

const turnTakingAgents = `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    memory: {identityKey: phoneNumber, read: true, save: true}
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
`

// longReply is about 5.5 s of the scripted voice.
const longReply = "Our opening hours are nine to five on weekdays. On Saturdays we open at ten and close at two. On Sundays and holidays we are closed all day."

// A real softphone (baresip) asks a question and, while the long answer
// plays, says "mm-hm" and then, on a second call, "No, wait, I meant
// Tuesday.": the backchannel leaves the answer whole (heard and committed
// once, no turn of the caller, the model asked once), the barge-in cuts it
// and is answered.
func TestBaresipBackchannelAndBargeIn(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	b := boxtest.New(t, turnTakingAgents)
	var second atomic.Value
	var heard atomic.Int32
	b.Model.RespondTranscripts(func([]byte) string {
		if heard.Add(1) == 1 {
			return "What are your opening hours?"
		}
		return second.Load().(string)
	})
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[],"summary":"Asked for the hours."}`}
		}
		if last := req.Messages[len(req.Messages)-1].Content; strings.Contains(last, "Tuesday") {
			return providertest.Reply{Content: "Tuesday, nine to five."}
		}
		return providertest.Reply{Content: longReply}
	})
	answers := func() int {
		n := 0
		for _, r := range b.Model.ChatRequests() {
			if !strings.Contains(r.Messages[0].Content, `"operations"`) {
				n++
			}
		}
		return n
	}
	type entry struct {
		Role, Text string
		Cut        bool
	}
	call := func(number, overlap string) []entry {
		t.Helper()
		heard.Store(0)
		second.Store(overlap)
		asked := answers()
		// The answer starts about a second after the question; the second
		// part comes two seconds into it.
		mic := siptest.SpeechScript(t, t.TempDir(), 9, siptest.Spoken{Pause: 1.5, Text: "What are your opening hours?"},
			siptest.Spoken{Pause: 3, Text: map[bool]string{true: "mm hmm", false: overlap}[overlap == "Mm-hmm."]})
		ph := siptest.StartBaresip(t, number, mic, "sip:100@"+b.Phones.Addr())
		ph.CallEnded(t, 60*time.Second)
		var entries []entry
		poll.Until(t, "the call's record", 30*time.Second, func() bool {
			var raw []map[string]any
			err := b.Pool.QueryRow(t.Context(), `SELECT transcript FROM stackbone_platform.voice_calls
				WHERE phone_number = $1 AND status = 'ended'`, number).Scan(&raw)
			entries = entries[:0]
			for _, e := range raw {
				cut, _ := e["cut"].(bool)
				entries = append(entries, entry{Role: e["role"].(string), Text: e["text"].(string), Cut: cut})
			}
			return err == nil
		})
		t.Logf("%s: %+v; the model answered %d times", overlap, entries, answers()-asked)
		return entries
	}

	got := call("+34611000501", "Mm-hmm.")
	if len(got) != 2 || got[1].Text != longReply || got[1].Cut {
		t.Fatalf("after a backchannel: heard transcript %+v, want the question and the whole answer once", got)
	}
	if n := answers(); n != 1 {
		t.Fatalf("the model answered %d times: the backchannel was taken as a turn", n)
	}
	var metrics string
	if err := b.Pool.QueryRow(t.Context(), `SELECT metrics::text FROM stackbone_platform.voice_calls WHERE phone_number = '+34611000501'`).Scan(&metrics); err != nil ||
		!strings.Contains(metrics, `"outcome": "resumed"`) {
		t.Fatalf("the call's metrics do not show the backchannel paused and resumed the agent (%v): %s", err, metrics)
	}

	got = call("+34611000502", "No, wait, I meant Tuesday.")
	if len(got) < 4 || !got[1].Cut || !strings.HasPrefix(longReply, got[1].Text) || got[1].Text == longReply ||
		got[2].Text != "No, wait, I meant Tuesday." || got[3].Text != "Tuesday, nine to five." {
		t.Fatalf("after a barge-in: heard transcript %+v", got)
	}
}
