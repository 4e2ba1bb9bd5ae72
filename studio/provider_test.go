package studio_test

import (
	"strings"
	"testing"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
)

// noProviderBox is a box whose configuration names no model provider
// (no OPENAI_API_KEY, no providers.NAME).
func noProviderBox(t *testing.T) *box {
	t.Helper()
	return newBox(t, boxtest.Tune(func(c *config.Config) {
		c.Providers = map[string]config.Provider{"openai": {}}
	}))
}

// Without a model provider, every screen that needs one says so and names
// the setting to set, before anything is tried; and what is tried anyway
// says it too.
func TestNoProviderSaysWhichSettingToSet(t *testing.T) {
	b := noProviderBox(t)
	p := b.openAt(t, "#/sessions")
	for _, hash := range []string{"#/playground", "#/rag", "#/agents", "#/system", "#/calls"} {
		p.goTo(hash)
		if got := p.text("#no-provider"); !strings.Contains(got, "OPENAI_API_KEY") || !strings.Contains(got, "providers.") {
			t.Fatalf("%s without a provider says %q", hash, got)
		}
	}
	p.goTo("#/playground")
	p.set("main select[name=agent]", "support")
	p.set("#composer textarea", "Hello")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the refused run")
	if got := p.text("#chat-status"); !strings.Contains(got, "OPENAI_API_KEY") {
		t.Fatalf("the Playground's refusal says %q", got)
	}
}
