package box_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/analysis"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

const analyzedAgents = `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone and book appointments.
    greeting: Hello, front desk.
    voice:
      stt: openai/whisper-1
      tts: openai/tts-1
    analysis:
      fields:
        type: object
        properties:
          appointmentBooked: {type: boolean}
          followUpDate: {type: [string, "null"]}
        required: [appointmentBooked]
        additionalProperties: false
      criteria:
        - The caller got an answer to their question.
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
`

// Twenty phone calls analyzed after they end: each call's analysis fills
// the schema's fields and judges the criterion, once, in a River job; the
// calls list filters by a field and by success. An answer that breaks the
// schema is asked again (the second request says why) and, broken again,
// recorded as failed with the reason. The heard transcript reaches the
// model as data inside its tags.
func TestPostCallAnalysisOfTwentyCalls(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, analyzedAgents)
	b.Model.RespondTranscripts(func([]byte) string { return "Can I book an appointment for Tuesday?" })
	var mode atomic.Value // "", "bad-once" or "bad"
	mode.Store("")
	var asked, booked atomic.Int64
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if !isAnalysis(req) {
			return providertest.Reply{Content: "Tuesday at ten is booked."}
		}
		n := asked.Add(1)
		retry := strings.Contains(req.Messages[len(req.Messages)-1].Content, "That answer was not usable")
		switch {
		case mode.Load() == "bad", mode.Load() == "bad-once" && !retry:
			return providertest.Reply{Content: `{"summary":"A booking.","fields":{"appointmentBooked":"yes"},"criteria":[{"pass":true,"reason":"Answered."}]}`}
		}
		ok := n%2 == 0 || mode.Load() == "bad-once" // the retried answer books
		if ok && mode.Load() == "" {
			booked.Add(1)
		}
		return providertest.Reply{Content: fmt.Sprintf("```json\n{\"summary\":\"The caller asked to book Tuesday.\",\"fields\":{\"appointmentBooked\":%t,\"followUpDate\":null},"+
			"\"criteria\":[{\"criterion\":\"x\",\"pass\":%t,\"reason\":\"One line.\"}]}\n```", ok, ok)}
	})
	ctx := context.Background()
	// A subscriber to call.analyzed (its receiver is down: deliveries
	// retry; the events are what is checked).
	sub, _ := http.NewRequest(http.MethodPost, b.URL+"/api/webhooks",
		strings.NewReader(`{"url":"http://127.0.0.1:9/hooks","events":["call.analyzed"],"includeTranscript":true}`))
	sub.Header.Set("Authorization", "Bearer "+boxtest.Key)
	sub.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(sub); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("subscribe: %v %v", res, err)
	}
	caller := siptest.NewCaller(t)
	call := func(number string) {
		c, err := caller.Call(ctx, "100", b.Phones.Addr(), number)
		if err != nil {
			t.Errorf("call %s: %v", number, err)
			return
		}
		talkOnce(t, b, c, number)
	}
	analyzed := func(number string) analysis.Result {
		var res analysis.Result
		poll.Until(t, "the analysis of "+number, 60*time.Second, func() bool {
			var raw []byte
			err := b.Pool.QueryRow(ctx, `SELECT analysis FROM stackbone_platform.voice_calls WHERE phone_number = $1 AND analysis IS NOT NULL`, number).Scan(&raw)
			return err == nil && json.Unmarshal(raw, &res) == nil
		})
		return res
	}
	// 18 calls, 6 at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for i := range 18 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			call(fmt.Sprintf("+3461100040%02d", i))
		}()
	}
	wg.Wait()
	trues := 0
	for i := range 18 {
		res := analyzed(fmt.Sprintf("+3461100040%02d", i))
		if res.Status != analysis.StatusDone || res.Summary == "" || res.Success == nil || len(res.Criteria) != 1 {
			t.Fatalf("call %d: analysis %+v", i, res)
		}
		if res.Criteria[0].Criterion != "The caller got an answer to their question." {
			t.Fatalf("call %d: criterion %q, want the operator's words", i, res.Criteria[0].Criterion)
		}
		v, ok := res.Fields["appointmentBooked"].(bool)
		if !ok || v != *res.Success {
			t.Fatalf("call %d: fields %v", i, res.Fields)
		}
		if v {
			trues++
		}
	}
	if n := asked.Load(); n != 18 || int64(trues) != booked.Load() {
		t.Fatalf("%d analysis requests for 18 calls; %d booked, the model said %d", n, trues, booked.Load())
	}
	// The transcript is data inside its tags.
	for _, req := range b.Model.ChatRequests() {
		if isAnalysis(req) {
			u := req.Messages[len(req.Messages)-1].Content
			if !strings.HasPrefix(u, "<transcript>\n") || !strings.Contains(u, "Caller: Can I book an appointment for Tuesday?") {
				t.Fatalf("the analysis request's data: %q", u)
			}
			break
		}
	}

	// A broken answer, then a good one: done after one retry.
	mode.Store("bad-once")
	call("+346110004018")
	if res := analyzed("+346110004018"); res.Status != analysis.StatusDone {
		t.Fatalf("an answer fixed on the retry: %+v", res)
	}
	// Broken twice: failed, with the reason.
	mode.Store("bad")
	before := asked.Load()
	call("+346110004019")
	res := analyzed("+346110004019")
	if res.Status != analysis.StatusFailed || !strings.Contains(res.Error, "schema") || res.Fields != nil {
		t.Fatalf("an answer broken twice: %+v", res)
	}
	if n := asked.Load() - before; n != 2 {
		t.Fatalf("a broken answer was asked %d times, want 2", n)
	}

	// One call.analyzed event per call; the summary only as content.
	var events, failed, summaries int
	err := b.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE data->>'status' = 'failed'),
		count(*) FILTER (WHERE content->>'summary' <> '' AND NOT data ? 'summary')
		FROM stackbone_platform.webhook_events WHERE type = 'call.analyzed'`).Scan(&events, &failed, &summaries)
	if err != nil || events != 20 || failed != 1 || summaries != 19 {
		t.Fatalf("call.analyzed events: %d, %d failed, %d with a summary as content (%v)", events, failed, summaries, err)
	}

	// The calls list filters by a field's value and by success.
	list := func(query string) []voice.CallRecord {
		req, _ := http.NewRequest(http.MethodGet, b.URL+"/api/voice/calls?limit=200&"+query, nil)
		req.Header.Set("Authorization", "Bearer "+boxtest.Key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var env struct{ Data []voice.CallRecord }
		if err := json.NewDecoder(res.Body).Decode(&env); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("list %s: %d %v", query, res.StatusCode, err)
		}
		return env.Data
	}
	if got := list("field.appointmentBooked=true"); len(got) != trues+1 { // the retried one booked
		t.Fatalf("field.appointmentBooked=true: %d calls, want %d", len(got), trues+1)
	}
	for _, c := range list("success=false") {
		if c.Analysis == nil || c.Analysis.Success == nil || *c.Analysis.Success {
			t.Fatalf("success=false listed %+v", c.Analysis)
		}
	}
	if got := len(list("success=true")) + len(list("success=false")); got != 19 {
		t.Fatalf("%d calls judged, want 19 (the failed analysis judged nothing)", got)
	}
}

// isAnalysis reports whether req is a post-call analysis request.
func isAnalysis(req *openai.ChatCompletionRequest) bool {
	for _, m := range req.Messages {
		if m.Role == "system" && strings.Contains(m.Content, "You analyze a finished phone call") {
			return true
		}
	}
	return false
}
