package studio_test

import (
	"testing"
	"time"

	"github.com/stackbone/box/provider/providertest"
)

// Studio's colours: a badge that says nothing good or bad (its
// background), errors and successes (text).
const (
	neutral = "rgb(238, 240, 244)"
	bad     = "rgb(201, 42, 42)"
	good    = "rgb(43, 138, 62)"
)

// A refusal or a failure reads in the error colour, never in the success
// colour: on the System, Agents and Playground screens.
func TestErrorsReadAsErrors(t *testing.T) {
	b := newBox(t)
	p := b.openAt(t, "#/system")
	p.set("#selection select[name=modelChoice]", "other")
	p.set("#selection input[name=model]", "not a model")
	p.js(`document.getElementById("selection").requestSubmit()`)
	p.waitFor(`document.querySelector("#extraction .status").textContent.includes("provider/model")`, "the refusal")
	if c := p.colour("#extraction .status", "color"); c != bad {
		t.Fatalf("System's refusal reads in %s (errors: %s, success: %s)", c, bad, good)
	}

	p.goTo("#/agents")
	p.set("#agent-support textarea[name=instructions]", "   ")
	p.clickText("#agent-support button", "Save instructions")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("cannot be blank")`, "the refusal of blank instructions")
	if c := p.colour("#agent-support .status", "color"); c != bad {
		t.Fatalf("Agents' refusal reads in %s (errors: %s)", c, bad)
	}
	p.click("#agent-support input[name=read]")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("read is now")`, "the saved toggle")
	if c := p.colour("#agent-support .status", "color"); c != good {
		t.Fatalf("Agents' saved change reads in %s (success: %s)", c, good)
	}

	b.model.Script(providertest.Reply{Status: 400, Message: "bad request"})
	p.goTo("#/playground")
	p.set("main select[name=agent]", "support")
	p.set("#composer textarea", "Hello")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the failed run")
	if c := p.colour("#chat-status", "color"); c != bad || p.text("#chat-status") == "" {
		t.Fatalf("the Playground's failure %q reads in %s (errors: %s)", p.text("#chat-status"), c, bad)
	}
}

// A call's outcome and a setting's origin are badges in colours that tell
// them apart: what ended well, what was cut short, what failed.
func TestOutcomeAndOriginBadgesAreColoured(t *testing.T) {
	b := newBox(t)
	t0 := time.Now().Add(-time.Hour)
	b.insertCall("call_ok", "inbound", "receptionist", "+34600000001", "completed", t0, `[]`, `{}`, `[]`)
	b.insertCall("call_cut", "inbound", "receptionist", "+34600000002", "caller_hangup", t0.Add(time.Second), `[]`, `{}`, `[]`)
	b.insertCall("call_bad", "inbound", "receptionist", "+34600000003", "provider_failed", t0.Add(2*time.Second), `[]`, `{}`, `[]`)
	p := b.openAt(t, "#/calls")
	p.waitFor(`document.querySelector("table.calls").dataset.rows === "3"`, "three calls")
	seen := map[string]string{}
	for _, id := range []string{"call_ok", "call_cut", "call_bad"} {
		c := p.colour(`table.calls tr[data-id="`+id+`"] td:nth-child(6) .badge`, "background-color")
		if c == neutral {
			t.Fatalf("the outcome of %s is not coloured", id)
		}
		if other, ok := seen[c]; ok {
			t.Fatalf("the outcomes of %s and %s read alike (%s)", other, id, c)
		}
		seen[c] = id
	}
	p.goTo("#/calls/call_bad")
	if c := p.colour("main h1 .badge.outcome", "background-color"); c == neutral {
		t.Fatal("the call's own outcome is not coloured")
	}

	// support's read comes from the config (code); receptionist has no
	// memory settings (default); a change in Studio is studio.
	p.goTo("#/agents")
	p.click("#agent-support input[name=save]")
	p.waitFor(`document.querySelector('#agent-support [data-field="save"] .badge').textContent === "studio"`, "the studio origin")
	origins := map[string]string{}
	for origin, sel := range map[string]string{
		"code":    `#agent-support [data-field="read"] .badge`,
		"studio":  `#agent-support [data-field="save"] .badge`,
		"default": `#agent-receptionist [data-field="read"] .badge`,
	} {
		if got := p.text(sel); got != origin {
			t.Fatalf("%s reads %q, want %s", sel, got, origin)
		}
		c := p.colour(sel, "background-color") + " " + p.colour(sel, "color")
		if other, ok := origins[c]; ok {
			t.Fatalf("the origins %s and %s read alike (%s)", other, origin, c)
		}
		origins[c] = origin
	}
}
