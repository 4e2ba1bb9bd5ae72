package box_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

// tunedAgents: the receptionist's config reads the caller's words to end
// turns and sets how many words interrupt it.
const tunedAgents = `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    voice:
      endpointing: {mode: words}
      interruption: {minWords: 3}
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
`

// turnTakingView is what the turn-taking routes answer.
type turnTakingView struct {
	Value struct {
		EndpointingMode                                          string
		MinWords                                                 int
		MinEndpointDelayMs, MaxEndpointDelayMs                   int
		ClosedClauseDelayMs, SentenceDelayMs, SilenceDelayMs     int
		ResumeAfterMs, MinVoicedMs, ImmediateAfterMs             int
		VAD, TurnDetection, Eagerness, InterruptionMode, STTMode string
		Backchannels                                             []string
	}
	Origins   map[string]string
	UpdatedBy *string
}

func newTunedBox(t *testing.T, opts ...boxtest.Option) *boxtest.Box {
	t.Helper()
	b := boxtest.New(t, tunedAgents, opts...)
	b.Model.RespondTranscripts(func([]byte) string { return "What are your opening hours?" })
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: "We open at nine."}
	})
	return b
}

func turnView(t *testing.T, raw string) turnTakingView {
	t.Helper()
	var env struct{ Data turnTakingView }
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		t.Fatal(err)
	}
	return env.Data
}

// The turn-taking routes: every setting in force with its origin (the
// defaults filled in), a PUT that patches, refusals that name the setting
// and keep nothing, a reset of one setting and of all, 404 for an unknown
// agent, and a key without config:write that may read but not change.
func TestTurnTakingRoutes(t *testing.T) {
	t.Parallel()
	b := newTunedBox(t)
	c := &client{t: t, url: b.URL}
	const path = "/api/agents/receptionist/turntaking"

	_, raw := c.want(boxtest.Key, "GET", path, "", nil, 200)
	v := turnView(t, raw)
	if v.Value.EndpointingMode != "words" || v.Origins["endpointingMode"] != "code" || v.Value.MinWords != 3 || v.Origins["minWords"] != "code" ||
		v.Value.MinEndpointDelayMs != 200 || v.Value.MaxEndpointDelayMs != 1500 || v.Value.ClosedClauseDelayMs != 250 ||
		v.Value.SentenceDelayMs != 600 || v.Value.SilenceDelayMs != 600 || v.Value.ResumeAfterMs != 1000 || v.Value.MinVoicedMs != 900 ||
		v.Value.ImmediateAfterMs != 300 || v.Value.VAD != "auto" || v.Value.TurnDetection != "box" || v.Value.Eagerness != "auto" ||
		v.Value.InterruptionMode != "words" || v.Value.STTMode != "http" || len(v.Value.Backchannels) < 20 ||
		v.Origins["vad"] != "default" || v.Origins["backchannels"] != "default" || v.UpdatedBy != nil {
		t.Fatalf("before any override: %s", raw)
	}

	_, raw = c.want(boxtest.Key, "PUT", path, `{"minWords":5,"resumeAfterMs":1500,"minEndpointDelayMs":300}`, nil, 200)
	v = turnView(t, raw)
	if v.Value.MinWords != 5 || v.Origins["minWords"] != "studio" || v.Value.ResumeAfterMs != 1500 || v.Value.MinEndpointDelayMs != 300 ||
		v.Value.ClosedClauseDelayMs != 300 || v.Origins["endpointingMode"] != "code" || v.UpdatedBy == nil || *v.UpdatedBy != "key:test" {
		t.Fatalf("after the PUT: %s", raw)
	}

	// Refusals: 400 naming the setting, nothing saved.
	for _, tc := range []struct{ body, want string }{
		{`{"endpointingMode":"eager"}`, `endpointingMode: voice.endpointing.mode \"eager\" is not one of words, cautious, silence`},
		{`{"vad":"loud"}`, `vad: voice.vad \"loud\" is not auto, energy or silero`},
		{`{"turnDetection":"provider"}`, `turnDetection: voice.turnDetection provider needs a live sttMode (realtime or deepgram)`},
		{`{"eagerness":"very"}`, `eagerness: voice.eagerness \"very\" is not one of low, medium, high, auto`},
		{`{"minWords":25}`, `minWords: voice.interruption.minWords must be 1 to 20`},
		{`{"minWords":0}`, `minWords: an empty or zero value is no setting`},
		{`{"maxEndpointDelayMs":250}`, `maxEndpointDelayMs: voice.minEndpointDelay must not exceed voice.maxEndpointDelay`},
		{`{"resumeAfterMs":60000}`, `resumeAfterMs: voice.interruption.minVoiced, resumeAfter and immediateAfter must be 0 to 10s`},
		{`{"interruptionMode":"never"}`, `interruptionMode: voice.interruption.mode must be words or immediate`},
		{`{"backchannels":["mm",""]}`, `backchannels: voice.interruption.backchannels`},
		{`{"minWords":null}`, `minWords must not be null; DELETE ?field=minWords`},
		{`{"minWords":"5"}`, `minWords must be a number`},
		{`{"minWords":2.5}`, `invalid_request`},
		{`{"minWord":2}`, `unknown field`},
		{`{}`, `nothing to save`},
		{`{"minWords":4,"vad":"loud"}`, `vad: voice.vad`},
	} {
		if _, raw := c.want(boxtest.Key, "PUT", path, tc.body, nil, 400); !strings.Contains(raw, tc.want) {
			t.Errorf("PUT %s: %s, want it to say %s", tc.body, raw, tc.want)
		}
	}
	c.want(boxtest.Key, "DELETE", path+"?field=voice", "", nil, 400)
	c.want(boxtest.Key, "DELETE", path+"?field=", "", nil, 400)
	_, raw = c.want(boxtest.Key, "GET", path, "", nil, 200)
	if v := turnView(t, raw); v.Value.MinWords != 5 || v.Value.VAD != "auto" || v.Origins["vad"] != "default" || v.Origins["endpointingMode"] != "code" {
		t.Fatalf("a refused change was saved: %s", raw)
	}

	_, raw = c.want(boxtest.Key, "DELETE", path+"?field=minWords", "", nil, 200)
	if v := turnView(t, raw); v.Value.MinWords != 3 || v.Origins["minWords"] != "code" || v.Origins["resumeAfterMs"] != "studio" {
		t.Fatalf("after resetting minWords: %s", raw)
	}
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		if _, raw := c.want(boxtest.Key, method, "/api/agents/nobody/turntaking", `{"minWords":4}`, nil, 404); !strings.Contains(raw, "agent_not_found") {
			t.Errorf("%s of an unknown agent: %s", method, raw)
		}
	}
	reader, _, err := b.Keys.Create(t.Context(), "reader", []string{auth.ScopeConfigRead})
	if err != nil {
		t.Fatal(err)
	}
	c.want(reader, "GET", path, "", nil, 200)
	c.want(reader, "PUT", path, `{"minWords":4}`, nil, 403)
	c.want(reader, "DELETE", path, "", nil, 403)
	_, raw = c.want(boxtest.Key, "DELETE", path, "", nil, 200)
	if v := turnView(t, raw); v.Origins["resumeAfterMs"] != "default" || v.Origins["minEndpointDelayMs"] != "default" || v.UpdatedBy != nil {
		t.Fatalf("after resetting all: %s", raw)
	}
	_, raw = c.want(boxtest.Key, "GET", "/api/activity?subject=agent:receptionist", "", nil, 200)
	if !strings.Contains(raw, `"action":"agent.turntaking.saved","subject":"agent:receptionist","fields":["minEndpointDelayMs","minWords","resumeAfterMs"]`) ||
		!strings.Contains(raw, `"action":"agent.turntaking.reset","subject":"agent:receptionist","fields":["minWords"]`) {
		t.Fatalf("activity log: %s", raw)
	}
}

// A call takes the agent's turn-taking when it opens: the caller's
// question ends its turn as a complete one under the config's words mode;
// with endpointing mode silence set through the API, the next call ends
// the same question's turn on the VAD's delay alone, and its record says
// so.
func TestCallTakesTheTurnTakingInForceWhenItOpens(t *testing.T) {
	t.Parallel()
	// Words not known yet wait the longest delay (1.2 s), so a busy
	// machine's transcription of the question still arrives in time for
	// the words to end the turn.
	b := newTunedBox(t, boxtest.TuneCalls(func(c *voice.Config) { c.VAD.EndFrames = 60 }))
	c := &client{t: t, url: b.URL}
	caller := siptest.NewCaller(t)
	ctx := context.Background()
	endpoints := func(number string) []string {
		t.Helper()
		call, err := caller.Call(ctx, "100", b.Phones.Addr(), number)
		if err != nil {
			t.Fatal(err)
		}
		call.Talk(1)
		// The answer is heard: its turn is recorded on the call.
		poll.Until(t, "the answer", 30*time.Second, func() bool { return call.Voiced() > 25 })
		if err := call.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
		var out []string
		poll.Until(t, "the call's turn metrics", 30*time.Second, func() bool {
			var raw []byte
			if err := b.Pool.QueryRow(ctx, `SELECT metrics FROM stackbone_platform.voice_calls WHERE phone_number = $1 AND ended_at IS NOT NULL`,
				number).Scan(&raw); err != nil {
				return false
			}
			var metrics []map[string]any
			_ = json.Unmarshal(raw, &metrics)
			out = nil
			for _, m := range metrics {
				if e, ok := m["endpoint"]; ok {
					out = append(out, fmt.Sprint(e))
				}
			}
			return len(out) > 0
		})
		return out
	}
	if got := endpoints("+34612000101"); strings.Join(got, ",") != "complete" {
		t.Fatalf("under the config's words mode the turn ended as %v", got)
	}
	c.want(boxtest.Key, "PUT", "/api/agents/receptionist/turntaking", `{"endpointingMode":"silence"}`, nil, 200)
	if got := endpoints("+34612000102"); strings.Join(got, ",") != "silence" {
		t.Fatalf("under the override's silence mode the turn ended as %v", got)
	}
}
