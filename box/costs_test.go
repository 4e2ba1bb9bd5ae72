package box_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

// The price table: the desk's models and trunk are priced, the annex
// speaks through a voice that is not.
const pricedAgents = `
costs: {currency: EUR}
providers:
  openai:
    prices:
      chat: {input: 0.15, output: 0.6}
      whisper-1: {perMinute: 0.006}
      tts-1: {perMillionCharacters: 15}
agents:
  desk:
    model: openai/chat
    instructions: You answer the phone at the front desk.
    greeting: Hello, front desk.
    memory: {read: false, save: false}
    voice: {stt: openai/whisper-1, tts: openai/tts-1}
  annex:
    model: openai/chat
    instructions: You answer the phone at the annex.
    greeting: Hello, annex.
    memory: {read: false, save: false}
    voice: {stt: openai/whisper-1, tts: openai/tts-hd}
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        pricePerMinute: 0.0085
        routes: [{number: "200", agent: annex}, {number: "*", agent: desk}]
`

// A phone call's recorded cost is the price table applied to what the
// scripted provider reported and was sent: the tokens of its answers, the
// seconds of audio it transcribed, the characters it spoke; plus the
// call's answered minutes on its trunk. A call whose voice has no price
// records that part as not priced (null), its total null, never 0. The
// totals per agent and per day, /metrics and a text session's cost agree.
func TestCallCostIsThePriceTableAppliedToProviderUsage(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, pricedAgents)
	b.Model.RespondTranscripts(func([]byte) string { return "Can I book a table for Tuesday?" })
	var mu sync.Mutex
	reported := map[string]costs.Tokens{} // by the agent whose instructions the request carried
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		r := providertest.Reply{Content: "Tuesday at ten is booked.", PromptTokens: 1234, CompletionTokens: 56}
		agent := "desk"
		if strings.Contains(req.Messages[0].Content, "annex") {
			agent, r.PromptTokens, r.CompletionTokens = "annex", 999, 77
		}
		mu.Lock()
		n := reported[agent]
		n.InputTokens += int64(r.PromptTokens)
		n.OutputTokens += int64(r.CompletionTokens)
		reported[agent] = n
		mu.Unlock()
		return r
	})
	ctx := context.Background()
	caller := siptest.NewCaller(t)
	call := func(to, number string) voice.CallRecord {
		c, err := caller.Call(ctx, to, b.Phones.Addr(), number)
		if err != nil {
			t.Fatal(err)
		}
		talkOnce(t, b, c, number)
		var id string
		poll.Until(t, "the call's cost recorded", 30*time.Second, func() bool {
			err := b.Pool.QueryRow(ctx, `SELECT id FROM stackbone_platform.voice_calls WHERE phone_number = $1 AND cost IS NOT NULL`, number).Scan(&id)
			return err == nil
		})
		var rec voice.CallRecord
		getJSON(t, b, "/api/voice/calls/"+id, &rec)
		if rec.Usage == nil || rec.Cost == nil {
			t.Fatalf("call %s has no usage or cost: %+v", id, rec)
		}
		return rec
	}

	desk := call("100", "+34611000501")
	// What the provider was sent: every transcription's WAV (its samples
	// at its rate) and every text it spoke, all of them this call's.
	var samples int64
	rate := 0
	for _, wav := range b.Model.Uploads() {
		samples += int64(len(wav)-44) / 2
		rate = int(binary.LittleEndian.Uint32(wav[24:28]))
	}
	var chars int64
	for _, text := range b.Model.SpeechRequests() {
		chars += int64(utf8.RuneCountInString(text))
	}
	mu.Lock()
	tokens := reported["desk"]
	mu.Unlock()
	if samples == 0 || chars == 0 || tokens.InputTokens == 0 {
		t.Fatalf("the call used nothing: %d samples, %d characters, %+v", samples, chars, tokens)
	}
	u, c := desk.Usage, desk.Cost
	seconds := float64(samples) / float64(rate)
	if u.Model.Tokens != tokens || u.SpeechToText.Seconds != seconds || u.TextToSpeech.Characters != chars {
		t.Fatalf("usage %+v; the provider reported %+v and was sent %v s and %d characters", u, tokens, seconds, chars)
	}
	var answered, ended time.Time
	if err := b.Pool.QueryRow(ctx, `SELECT answered_at, ended_at FROM stackbone_platform.voice_calls WHERE id = $1`, desk.ID).
		Scan(&answered, &ended); err != nil {
		t.Fatal(err)
	}
	if line := ended.Sub(answered).Seconds(); u.Telephony.Trunk != "local" || u.Telephony.Seconds < line-0.001 || u.Telephony.Seconds > line+0.001 {
		t.Fatalf("telephony %+v, the call was answered for %.6f s", u.Telephony, line)
	}
	wantModel := (float64(tokens.InputTokens)*0.15 + float64(tokens.OutputTokens)*0.6) / 1e6
	wantSTT := seconds * 0.006 / 60
	wantTTS := float64(chars) * 15 / 1e6
	wantLine := u.Telephony.Seconds * 0.0085 / 60
	wantTotal := wantModel + wantSTT + wantTTS + wantLine
	if c.Currency != "EUR" || c.Model == nil || *c.Model != wantModel || c.SpeechToText == nil || *c.SpeechToText != wantSTT ||
		c.TextToSpeech == nil || *c.TextToSpeech != wantTTS || c.Telephony == nil || *c.Telephony != wantLine ||
		c.Total == nil || *c.Total != wantTotal || len(c.Unpriced) != 0 {
		t.Fatalf("cost %s, want model %v, speech-to-text %v, text-to-speech %v, telephony %v, total %v EUR",
			mustJSON(c), wantModel, wantSTT, wantTTS, wantLine, wantTotal)
	}

	// The annex's voice has no price: that part is null, so is the total;
	// what is priced is still there.
	before := len(b.Model.SpeechRequests())
	annex := call("200", "+34611000502")
	var annexChars int64
	for _, text := range b.Model.SpeechRequests()[before:] {
		annexChars += int64(utf8.RuneCountInString(text))
	}
	ac := annex.Cost
	if annex.Usage.TextToSpeech.ByModel["openai/tts-hd"] != annexChars || ac.TextToSpeech != nil || ac.Total != nil ||
		len(ac.Unpriced) != 1 || ac.Unpriced[0] != costs.PartTextToSpeech || ac.Model == nil || ac.SpeechToText == nil ||
		ac.Priced != *ac.Model+*ac.SpeechToText+*ac.Telephony {
		t.Fatalf("a call with an unpriced voice: usage %s, cost %s", mustJSON(annex.Usage), mustJSON(ac))
	}
	raw := getRaw(t, b, "/api/voice/calls/"+annex.ID)
	if !strings.Contains(raw, `"textToSpeech":null`) || !strings.Contains(raw, `"total":null`) {
		t.Fatalf("the call's JSON does not say the voice is not priced: %s", raw)
	}

	// Totals per agent and per day.
	var byAgent costs.Totals
	getJSON(t, b, "/api/costs?by=agent", &byAgent)
	rows := map[string]costs.Total{}
	for _, r := range byAgent.Rows {
		rows[r.Key] = r
	}
	if d := rows["desk"]; d.Calls != 1 || d.Currency != "EUR" || d.Cost.Total == nil || *d.Cost.Total != wantTotal ||
		d.Usage.TextToSpeechCharacters != chars {
		t.Fatalf("the desk's total: %s", mustJSON(d))
	}
	if a := rows["annex"]; a.Calls != 1 || a.Cost.Total != nil || a.Cost.TextToSpeech != nil || a.Cost.Priced != ac.Priced {
		t.Fatalf("the annex's total: %s", mustJSON(a))
	}
	var byDay costs.Totals
	getJSON(t, b, "/api/costs?by=day", &byDay)
	day := time.Now().UTC().Format("2006-01-02")
	if len(byDay.Rows) == 0 || byDay.Rows[len(byDay.Rows)-1].Key != day || byDay.Rows[len(byDay.Rows)-1].Calls != 2 {
		t.Fatalf("totals by day: %s", mustJSON(byDay))
	}

	// /metrics: the desk's cost per part, the annex's voice counted as
	// used and not priced.
	metrics := getRaw(t, b, "/metrics")
	for _, want := range []string{
		`stackbone_cost_total{agent="desk",currency="EUR",part="textToSpeech"}`,
		`stackbone_usage_total{agent="annex",part="textToSpeech",unit="characters"}`,
		`stackbone_unpriced_calls_total{agent="annex",part="textToSpeech"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics has no %s", want)
		}
	}

	// A text session: its turns' tokens, priced.
	req, _ := http.NewRequest(http.MethodPost, b.URL+"/openai/v1/chat/completions",
		strings.NewReader(`{"model":"desk","messages":[{"role":"user","content":"Are you open on Sunday?"}]}`))
	req.Header.Set("Authorization", "Bearer "+boxtest.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-stackbone-session", "costs-session")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("text turn: %v %v", res, err)
	}
	res.Body.Close()
	var sessions []struct{ ID, Agent string }
	getJSON(t, b, "/api/sessions?agent=desk", &sessions)
	if len(sessions) != 1 {
		t.Fatalf("sessions %+v", sessions)
	}
	var sc costs.SessionCost
	getJSON(t, b, "/api/costs/sessions/"+sessions[0].ID, &sc)
	in, out := 1234, 56 // what the provider reported, priced at run time as the box prices them
	wantSession := (float64(in)*0.15 + float64(out)*0.6) / 1e6
	if sc.Turns != 1 || sc.Usage.Model.InputTokens != int64(in) || sc.Usage.Model.OutputTokens != int64(out) || sc.Cost.Total == nil || *sc.Cost.Total != wantSession {
		t.Fatalf("the session's cost: %s, want %v", mustJSON(sc), wantSession)
	}
}

func getRaw(t *testing.T, b *boxtest.Box, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+boxtest.Key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
	}
	return string(body)
}

func getJSON(t *testing.T, b *boxtest.Box, path string, v any) {
	t.Helper()
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal([]byte(getRaw(t, b, path)), &env); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
