package studio_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stackbone/box/auth"
)

// An operator edits an agent's model and text-to-speech chains on the
// Agents screen: the chains in force and their origin badges become
// "studio" (speech-to-text, left alone, stays "default"); an unknown
// provider is refused with a sentence and nothing saved; a reset goes
// back to the config's chain. A key without config:write sees the chains
// and their origins but no control to change them.
func TestAgentModelChains(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/agents")
	p.waitFor(`!!document.querySelector('#agent-support input[name=chain-model]')`, "the support agent's models")
	if got := p.text("#agent-support [data-chain=model]"); !strings.Contains(got, "openai/chat") || !strings.Contains(got, "code") {
		t.Fatalf("the model chain before: %q", got)
	}

	p.set("#agent-support input[name=chain-model]", " openai/chat,openai/backup-chat ")
	p.set("#agent-support input[name=chain-tts]", "openai/tts-1, espeak")
	p.click("#agent-support button.save-models")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Models saved. Applies to the next call.")`, "the saved models")
	v := chainsOf(b, "support")
	if strings.Join(v.Value.Model, ",") != "openai/chat,openai/backup-chat" || v.Origins.Model != "studio" ||
		strings.Join(v.Value.TTS, ",") != "openai/tts-1,espeak" || v.Origins.TTS != "studio" || v.Origins.STT != "default" {
		t.Fatalf("after the save: %+v", v)
	}
	var listed []string
	p.js(`[...document.querySelectorAll("#agent-support [data-chain=model] ol.chain li code")].map(c => c.textContent)`, &listed)
	if strings.Join(listed, ",") != "openai/chat,openai/backup-chat" {
		t.Fatalf("the model chain shown: %v", listed)
	}
	for chain, want := range map[string]string{"model": "studio", "tts": "studio", "stt": "default"} {
		if got := p.text("#agent-support [data-chain=" + chain + "] .badge"); got != want {
			t.Fatalf("the %s badge says %q, want %q", chain, got, want)
		}
	}

	p.set("#agent-support input[name=chain-model]", "acme/gpt")
	p.click("#agent-support button.save-models")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes('no provider "acme" is configured')`, "the refusal of an unknown provider")
	if v := chainsOf(b, "support"); strings.Join(v.Value.Model, ",") != "openai/chat,openai/backup-chat" {
		t.Fatalf("the refused chain changed the saved one: %+v", v.Value)
	}

	p.click("#agent-support [data-chain=model] button.reset")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Model reset")`, "the reset")
	if v := chainsOf(b, "support"); strings.Join(v.Value.Model, ",") != "openai/chat" || v.Origins.Model != "code" || v.Origins.TTS != "studio" {
		t.Fatalf("after the reset: %+v", v)
	}
	if got := p.text("#agent-support [data-chain=model] .badge"); got != "code" {
		t.Fatalf("the model badge after the reset: %q", got)
	}
	p.js(`document.querySelector("#agent-support details.log").open = true`)
	p.waitFor(`document.querySelectorAll("#agent-support details.log li").length === 2`, "two entries in the activity log")
	if got := p.text("#agent-support details.log"); !strings.Contains(got, "agent.models.saved model, tts") || !strings.Contains(got, "agent.models.reset model") {
		t.Fatalf("activity log %q", got)
	}

	// A key that may only read the config.
	agentsAsReader(t, b, p, `#agent-support [data-chain=tts] ol.chain`)
	if got := p.text("#agent-support [data-chain=tts]"); !strings.Contains(got, "espeak") || !strings.Contains(got, "studio") {
		t.Fatalf("the tts chain for a reader: %q", got)
	}
	noControls(t, p, "#agent-support .models")
}

// agentsAsReader signs p in again with a new key that may only read the
// config and opens the Agents screen, until selector is drawn.
func agentsAsReader(t *testing.T, b *box, p *page, selector string) {
	t.Helper()
	reader, _, err := b.keys.Create(context.Background(), "reader", []string{auth.ScopeConfigRead})
	if err != nil {
		t.Fatal(err)
	}
	p.js(`sessionStorage.clear(); location.hash = ""; location.reload()`)
	p.signIn(reader)
	p.goTo("#/agents")
	p.waitFor(`!!document.querySelector(`+strconv.Quote(selector)+`)`, selector+", read-only")
}

// noControls fails when the part of the screen at selector has an input,
// a choice or a button.
func noControls(t *testing.T, p *page, selector string) {
	t.Helper()
	var controls int
	p.js(`document.querySelectorAll(`+strconv.Quote(selector)+`).length === 1 ? document.querySelector(`+strconv.Quote(selector)+`).querySelectorAll("input, select, textarea, button").length : -1`, &controls)
	if controls != 0 {
		t.Fatalf("a reader gets %d controls in %s", controls, selector)
	}
}

type chainsView struct {
	Value   struct{ Model, STT, TTS []string }
	Origins struct{ Model, STT, TTS string }
}

func chainsOf(b *box, name string) chainsView {
	var v chainsView
	if st, code := b.do(adminKey, "GET", "/api/agents/"+name+"/models", nil, &v); st != 200 {
		b.t.Fatalf("models of %s: %d %s", name, st, code)
	}
	return v
}
