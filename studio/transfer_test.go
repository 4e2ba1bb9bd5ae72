package studio_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
)

// A call's detail says who a warm transfer went to and how it ended.
func TestCallDetailShowsTheTransfer(t *testing.T) {
	b := newBox(t)
	b.insertCall("call_tr", "inbound", "receptionist", "+34600111555", "transferred", time.Now().Add(-time.Minute), `[]`,
		`{"read":true,"save":true,"saved":true}`,
		`[{"transfer":{"target":"sales","mode":"warm","result":"no_answer","ringMs":30000}},{"transfer":{"target":"billing","mode":"warm","result":"bridged","ringMs":1200}}]`)
	b.insertCall("call_plain_tr", "inbound", "receptionist", "+34600111556", "completed", time.Now().Add(-time.Minute), `[]`,
		`{"read":true,"save":true,"saved":true}`, `[]`)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls/call_tr")
	p.waitFor(`!!document.getElementById("transfer")`, "the transfer")
	if got := p.text("#transfer"); got != "to sales: no answer: back to the caller (rang 30.0 s); to billing: joined (rang 1.2 s)" {
		t.Fatalf("transfer %q", got)
	}
	p.goTo("#/calls/call_plain_tr")
	var has bool
	p.js(`!!document.getElementById("transfer")`, &has)
	if has || strings.Contains(p.text("main"), "Transfer") {
		t.Fatal("a call without a transfer shows one")
	}
}

// The Agents screen shows each agent's phone line as its config sets it:
// who answered, keys, recording, analysis, and the people a call can be
// handed to; an agent with none of it shows no such section.
func TestAgentsShowThePhoneLine(t *testing.T) {
	b := newBox(t, boxtest.Tune(func(cfg *config.Config) {
		a := cfg.Agents["frontdesk"]
		a.Voice = &config.AgentVoice{Keypad: true,
			AnsweringMachine: &config.AnsweringMachine{Detect: config.DetectOutbound, Voicemail: config.VoicemailMessage, Message: "Call us back."},
			Recording:        &config.Recording{Enabled: true},
			Transfer: &config.Transfer{Targets: []config.TransferTarget{
				{Name: "billing", Description: "Invoices and payments.", Number: "+34600999001"},
				{Name: "sales", Description: "New customers.", Number: "+34600999002", Trunk: "carrier"}}}}
		a.Analysis = &config.Analysis{Fields: map[string]any{"type": "object", "properties": map[string]any{"appointmentBooked": map[string]any{"type": "boolean"}}},
			Criteria: []string{"The caller got an answer."}}
		cfg.Agents["frontdesk"] = a
	}))
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/agents")
	p.waitFor(`!!document.querySelector("#agent-frontdesk section.line")`, "the front desk's phone line")
	for sel, want := range map[string]string{
		`#agent-frontdesk [data-line=answeringMachine]`: "screens outbound calls; voicemail: leaves a message; menu: talks",
		`#agent-frontdesk [data-line=keypad]`:           "presses keys (send_dtmf)",
		`#agent-frontdesk [data-line=recording]`:        "on, kept 30 days; says first: " + config.DefaultRecordingConsent,
		`#agent-frontdesk [data-line=analysis]`:         "fields appointmentBooked; 1 criterion",
		`#agent-frontdesk tr[data-target=sales]`:        "salesNew customers.+34600999002 via carrier",
	} {
		if got := p.text(sel); got != want {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
	var other bool
	p.js(`!!document.querySelector("#agent-support section.line")`, &other)
	if other {
		t.Fatal("an agent without a phone line policy shows one")
	}
}
