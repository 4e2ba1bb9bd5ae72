package studio_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/costs"
)

// An operator opens a call and reads what it used and cost per part; a
// call whose voice has no price says "not priced" for that part and for
// its total, with what is priced. The Costs screen totals the calls per
// agent and per day.
func TestCallCostAndTotals(t *testing.T) {
	b := newBox(t)
	perMinute, perMillion, line := 0.006, 15.0, 0.01
	table := costs.NewTable(&config.Config{
		Costs: config.Costs{Currency: "EUR"},
		Providers: map[string]config.Provider{"openai": {Prices: map[string]config.Price{
			"chat": {Input: 2, Output: 8}, "whisper-1": {PerMinute: &perMinute}, "tts-1": {PerMillionCharacters: &perMillion}}}},
		SIP: config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{Name: "local", PricePerMinute: &line}}}},
	})
	priced := func(id, tts string) costs.Cost {
		u := costs.NewUsage()
		u.AddTokens("openai/chat", costs.Tokens{InputTokens: 1500, OutputTokens: 200})
		u.SpeechToText.ByModel["openai/whisper-1"], u.SpeechToText.Seconds = 30, 30
		u.TextToSpeech.ByModel[tts], u.TextToSpeech.Characters = 400, 400
		u.Telephony = costs.LineUsage{Seconds: 42, Trunk: "local"}
		c := table.Price(u)
		ub, _ := json.Marshal(u)
		cb, _ := json.Marshal(c)
		b.insertCall(id, "inbound", "frontdesk", "+34600222333", "completed", time.Now().Add(-time.Minute), `[]`, `{"read":true,"save":true,"saved":true}`, `[]`)
		if _, err := b.pool.Exec(context.Background(), `UPDATE stackbone_platform.voice_calls SET trunk = 'local', usage = $2, cost = $3 WHERE id = $1`, id, ub, cb); err != nil {
			t.Fatal(err)
		}
		return c
	}
	full := priced("call_priced", "openai/tts-1")
	part := priced("call_unpriced", "openai/tts-hd")
	if full.Total == nil || part.Total != nil {
		t.Fatalf("the calls' costs: %+v, %+v", full, part)
	}

	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls/call_priced")
	p.waitFor(`!!document.getElementById("call-cost-total")`, "the call's cost")
	rows := p.text("table.call-cost tbody")
	for _, want := range []string{"1,500 in, 200 out tokens", "30.0 s of audio", "400 characters", "42.0 s answered on trunk local",
		"€0.0046", "€0.003", "€0.006", "€0.007"} {
		if !strings.Contains(rows, want) {
			t.Fatalf("the call's usage and cost %q has no %q", rows, want)
		}
	}
	if got := p.text("#call-cost-total"); !strings.Contains(got, "€0.0206") || strings.Contains(got, "not priced") {
		t.Fatalf("the call's total: %q", got)
	}
	p.goTo("#/calls/call_unpriced")
	p.waitFor(`!!document.getElementById("call-cost-total")`, "the unpriced call's cost")
	var tts string
	p.js(`document.querySelector("table.call-cost tr[data-id=textToSpeech]").innerText`, &tts)
	if !strings.Contains(tts, "not priced") || !strings.Contains(tts, "openai/tts-hd") {
		t.Fatalf("the unpriced voice: %q", tts)
	}
	if got := p.text("#call-cost-total"); !strings.Contains(got, "not priced") || !strings.Contains(got, "€0.0146") || !strings.Contains(got, "text-to-speech") {
		t.Fatalf("the unpriced call's total: %q", got)
	}

	p.goTo("#/costs")
	p.waitFor(`!!document.querySelector("table.costs")`, "the totals per agent")
	var agentRow string
	p.js(`document.querySelector("table.costs tr[data-id='frontdesk/EUR']").innerText`, &agentRow)
	for _, want := range []string{"frontdesk", "2", "€0.0092", "not priced", "€0.0352"} {
		if !strings.Contains(agentRow, want) {
			t.Fatalf("the agent's total %q has no %q", agentRow, want)
		}
	}
	p.set("#cost-filters select[name=by]", "day") // a choice shows at once
	day := time.Now().UTC().Format("2006-01-02")
	p.waitFor(`location.hash.includes("by=day") && !!document.querySelector("table.costs tr[data-id='`+day+`/EUR']")`, "the totals per day")
}
