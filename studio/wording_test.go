package studio_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/stores"
)

// No screen writes a missing value as a literal null or undefined.
// The screens are read with a key that may change things and with one
// that may only read.
func TestNoLiteralNull(t *testing.T) {
	b := newBox(t)
	b.insertCall("call_done", "inbound", "receptionist", "+34600111222", "completed", time.Now().Add(-time.Minute), `[]`, `{"read":true,"save":true}`, `[]`)
	reader, _, err := b.keys.Create(context.Background(), "reader", []string{auth.ScopeConfigRead, auth.ScopeRAGRead, auth.ScopeRunsRead, auth.ScopeSessionsRead, auth.ScopeVoice})
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`\b(null|undefined|NaN)\b`)
	for _, key := range []string{adminKey, reader} {
		p := b.open(t)
		p.signIn(key)
		for _, hash := range []string{"#/system", "#/agents", "#/runs", "#/costs", "#/rag", "#/webhooks", "#/calls/call_done"} {
			p.goTo(hash)
			p.waitFor(`document.querySelector("main").children.length > 1`, hash+" drawn")
			var text string
			p.js(`document.querySelector("main").innerText + " " + [...document.querySelectorAll("main input, main textarea")].map(i => i.value + " " + (i.placeholder || "")).join(" ")`, &text)
			if m := word.FindString(text); m != "" {
				i := strings.Index(text, m)
				t.Fatalf("%s shows %q: …%s…", hash, m, text[max(0, i-120):min(len(text), i+60)])
			}
			// This box has a provider: no screen says it lacks one.
			if got := p.text("#no-provider"); got != "" {
				t.Fatalf("%s says %q", hash, got)
			}
		}
	}
}

// Counts read in the singular for one, on every screen that shows them:
// RAG (documents, chunks, hits), Memory stores (memories, bytes) and
// People (rows erased).
func TestCountsReadInTheSingular(t *testing.T) {
	b := newBox(t)
	plural := regexp.MustCompile(`\b1 (docs|chunks|hits|memories|bytes|rows|facts|calls|times|dimensions)\b`)
	check := func(p *page, where string) {
		t.Helper()
		var text string
		p.js(`document.querySelector("main").innerText`, &text)
		if m := plural.FindString(text); m != "" {
			t.Fatalf("%s reads %q", where, m)
		}
	}
	if st, code := b.do(adminKey, "POST", "/api/rag/collections", map[string]any{"name": "faq"}, nil); st != 201 {
		t.Fatalf("create collection: %d %s", st, code)
	}
	doc := filepath.Join(t.TempDir(), "hours.txt")
	if err := os.WriteFile(doc, []byte("We open at nine."), 0o644); err != nil {
		t.Fatal(err)
	}
	p := b.openAt(t, "#/rag/faq")
	p.upload(doc, "")
	p.waitFor(`document.querySelector("table.documents tbody tr td:nth-child(2)")?.textContent.startsWith("succeeded")`, "the ingest")
	p.waitFor(`document.querySelector("#collections a.active small").textContent === "1 doc · 1 chunk"`, "the collection's counts")
	p.set("#search input[name=text]", "When do you open?")
	p.js(`document.getElementById("search").requestSubmit()`)
	p.waitFor(`!!document.getElementById("search-head")`, "the search")
	if got := p.text("#search-head"); !strings.HasPrefix(got, "1 hit ·") {
		t.Fatalf("search header %q", got)
	}
	check(p, "RAG")

	p.goTo("#/stores")
	p.newStore("Hours", "", "hours")
	p.newMemory("/open/weekdays.md", "Weekdays.", "A")
	p.goTo("#/stores/hours")
	p.waitFor(`document.querySelectorAll("#entries li.folder").length === 1`, "the store's folder")
	if got := p.text("#entries li.folder small"); got != "1 memory" {
		t.Fatalf("the folder reads %q", got)
	}
	check(p, "Memory stores")

	b.model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"Prefers mornings."}],"summary":"Talked about hours."}`})
	if st, code := b.do(adminKey, "POST", "/api/memory/add", map[string]any{"agentId": "support", "userId": "crm/1", "content": "I prefer mornings."}, nil); st != 200 {
		t.Fatalf("add: %d %s", st, code)
	}
	p.goTo("#/people?agent=support&user=crm%2F1")
	p.waitFor(`document.querySelectorAll("#facts li").length === 1`, "the person's fact")
	p.click("#erase")
	p.click("#person .confirm button.yes")
	p.waitFor(`(document.getElementById("erase-result") || {}).textContent?.startsWith("Erased")`, "the erase")
	check(p, "People")
}

// The Runs screen's kind filter suggests only kinds of run the box writes.
func TestRunsKindPlaceholderNamesRealKinds(t *testing.T) {
	b := newBox(t)
	p := b.openAt(t, "#/runs")
	var placeholder string
	p.js(`document.querySelector("#run-filters input[name=kind]").placeholder`, &placeholder)
	real := map[string]bool{agent.KindAgentTurn: true, runs.KindMemoryExtraction: true, rag.KindIngest: true,
		stores.KindSessionReport: true, stores.KindLearningRun: true}
	named := strings.FieldsFunc(strings.TrimSuffix(placeholder, "…"), func(r rune) bool { return r == ',' || r == ' ' })
	if len(named) == 0 {
		t.Fatalf("placeholder %q names no kind", placeholder)
	}
	for _, k := range named {
		if !real[k] {
			t.Fatalf("the placeholder %q names %q, not a kind of run", placeholder, k)
		}
	}
}

// The browser shows Studio's icon: the page names one and it loads as an
// image.
func TestFavicon(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.waitFor(`document.getElementById("root").dataset.state === "signin"`, "the sign-in form")
	var icon struct {
		Href  string
		Width int
	}
	p.js(`new Promise((resolve) => {
		const link = document.querySelector('link[rel~="icon"]');
		if (!link) return resolve({Href: "", Width: 0});
		const img = new Image();
		img.onload = () => resolve({Href: link.href, Width: img.naturalWidth});
		img.onerror = () => resolve({Href: link.href, Width: 0});
		img.src = link.href;
	})`, &icon)
	if icon.Href == "" || icon.Width == 0 {
		t.Fatalf("the page's icon %q does not load (width %d)", icon.Href, icon.Width)
	}
}
