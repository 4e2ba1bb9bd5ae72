package studio_test

import (
	"strings"
	"testing"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
)

// An operator tunes an agent's turn-taking on the Agents screen: every
// setting shows the value in force with its origin (the config's minWords
// as code, the rest as default with the default's value, not a blank);
// changing minWords and the endpointing mode saves both (the API shows
// them, origin studio); a value the config's rules refuse is refused with
// the setting named and nothing saved; a reset goes back to the config's
// value, and "Reset turn-taking" removes every override. A key without
// config:write sees the settings but no control to change them.
func TestAgentTurnTaking(t *testing.T) {
	b := newBox(t, boxtest.Tune(func(cfg *config.Config) {
		a := cfg.Agents["support"]
		a.Voice = &config.AgentVoice{Interruption: &config.Interruption{MinWords: 3}}
		cfg.Agents["support"] = a
	}))
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/agents")
	p.waitFor(`!!document.querySelector('#agent-support input[name=turn-minWords]')`, "the support agent's turn-taking")
	for name, want := range map[string]string{"minWords": "code", "endpointingMode": "default", "resumeAfterMs": "default", "backchannels": "default"} {
		if got := p.text("#agent-support tr[data-turn=" + name + "] .badge"); got != want {
			t.Fatalf("the %s badge says %q, want %q", name, got, want)
		}
	}
	var values []string
	p.js(`["minWords", "endpointingMode", "minEndpointDelayMs", "maxEndpointDelayMs", "resumeAfterMs", "vad"].map(n => document.querySelector("#agent-support [name=turn-" + n + "]").value)`, &values)
	if got := strings.Join(values, ","); got != "3,words,200,1500,1000,auto" {
		t.Fatalf("the values shown: %s", got)
	}
	if got := p.text("#agent-support section.turntaking"); !strings.Contains(got, "a closed clause ends after 250 ms, an opener after 600 ms") ||
		!strings.Contains(got, "phrases") {
		t.Fatalf("the turn-taking part: %q", got)
	}

	p.set("#agent-support input[name=turn-minWords]", "4")
	p.set("#agent-support select[name=turn-endpointingMode]", "cautious")
	p.click("#agent-support button.save-turns")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Turn-taking saved. Applies to the next call.")`, "the saved turn-taking")
	v := turnsOf(b, "support")
	if v.Value.MinWords != 4 || v.Origins["minWords"] != "studio" || v.Value.EndpointingMode != "cautious" || v.Origins["endpointingMode"] != "studio" ||
		v.Origins["resumeAfterMs"] != "default" {
		t.Fatalf("after the save: %+v", v)
	}
	for name, want := range map[string]string{"minWords": "studio", "endpointingMode": "studio", "vad": "default"} {
		if got := p.text("#agent-support tr[data-turn=" + name + "] .badge"); got != want {
			t.Fatalf("after the save the %s badge says %q, want %q", name, got, want)
		}
	}

	p.set("#agent-support input[name=turn-minWords]", "40")
	p.click("#agent-support button.save-turns")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("minWords: voice.interruption.minWords must be 1 to 20")`, "the refusal of 40 words")
	if v := turnsOf(b, "support"); v.Value.MinWords != 4 {
		t.Fatalf("the refused value was saved: %+v", v.Value)
	}

	p.click("#agent-support tr[data-turn=minWords] button.reset")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Words that interrupt reset")`, "the reset")
	if v := turnsOf(b, "support"); v.Value.MinWords != 3 || v.Origins["minWords"] != "code" || v.Origins["endpointingMode"] != "studio" {
		t.Fatalf("after the reset: %+v", v)
	}
	p.click("#agent-support button.reset-turns")
	p.click("#agent-support section.turntaking .confirm button.yes")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Every turn-taking override removed")`, "the reset of all")
	if v := turnsOf(b, "support"); v.Value.EndpointingMode != "words" || v.Origins["endpointingMode"] != "default" {
		t.Fatalf("after resetting all: %+v", v)
	}

	agentsAsReader(t, b, p, "#agent-support tr[data-turn=minWords]")
	if got := p.text("#agent-support tr[data-turn=minWords]"); !strings.Contains(got, "3") || !strings.Contains(got, "code") {
		t.Fatalf("minWords for a reader: %q", got)
	}
	noControls(t, p, "#agent-support section.turntaking")
}

type turnsView struct {
	Value struct {
		MinWords        int
		EndpointingMode string
	}
	Origins map[string]string
}

func turnsOf(b *box, name string) turnsView {
	var v turnsView
	if st, code := b.do(adminKey, "GET", "/api/agents/"+name+"/turntaking", nil, &v); st != 200 {
		b.t.Fatalf("turn-taking of %s: %d %s", name, st, code)
	}
	return v
}
