package studio_test

import (
	"strings"
	"testing"

	"github.com/stackbone/box/provider/providertest"
)

// An operator creates a curated store and a memory, edits it (markup kept
// as text), is refused a stale edit with the other change intact, compares
// two versions, restores the first (and the agent's read_memory then
// returns it), redacts a version, and finds an agent's learned store
// read-only.
func TestMemoryStoresScreen(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/stores")
	p.newStore("Release policy", "How we version and ship.", "release-policy")
	p.newMemory("/releases/versioning.md", "How versions are chosen.", "Bump the minor version for features.")

	v2 := "<script>window.pwned=1</script>\nBump the major version for breaking changes."
	p.set("#memory textarea[name=content]", v2)
	p.js(`document.getElementById("memory").requestSubmit()`)
	p.waitFor(`location.hash.includes("saved=") && document.getElementById("root").dataset.state === "ready" && document.querySelectorAll("table.versions tbody tr").length === 2`, "two versions")
	var shown string
	var pwned any
	p.js(`document.querySelector("#memory textarea[name=content]").value`, &shown)
	p.js(`window.pwned`, &pwned)
	if shown != v2 || pwned != nil {
		t.Fatalf("content shown %q, pwned %v", shown, pwned)
	}

	// Someone else changes the memory while it is open: the save is refused.
	var m struct {
		ID  string `json:"memory_id"`
		SHA string `json:"content_sha256"`
	}
	b.do(adminKey, "GET", "/api/memory_stores/release-policy/memory?path=/releases/versioning.md", nil, &m)
	v3 := "Bump the patch version for fixes."
	if st, code := b.do(adminKey, "POST", "/api/memory_stores/release-policy/memories/"+m.ID, map[string]any{"content": v3, "content_sha256": m.SHA}, nil); st != 200 {
		t.Fatalf("the other edit: %d %s", st, code)
	}
	p.set("#memory textarea[name=content]", "My stale edit.")
	p.js(`document.getElementById("memory").requestSubmit()`)
	p.waitFor(`document.getElementById("memory-status").textContent.includes("someone changed this memory")`, "the stale-edit refusal")
	if got := b.memoryContent("/releases/versioning.md"); got != v3 {
		t.Fatalf("after the stale edit the memory holds %q", got)
	}

	// Reload, compare the first and the newest version, restore the first.
	p.goTo("#/stores/release-policy?path=/releases/&memory=" + m.ID)
	p.waitFor(`document.querySelectorAll("table.versions tbody tr").length === 3`, "three versions")
	p.js(`(() => { const boxes = document.querySelectorAll("table.versions input[name=pick]"); boxes[0].click(); boxes[2].click(); })()`)
	p.waitFor(`!!document.querySelector("#diff pre.diff")`, "the diff")
	if got := p.text("#diff pre.diff"); !strings.Contains(got, "- Bump the minor version for features.") || !strings.Contains(got, "+ Bump the patch version for fixes.") {
		t.Fatalf("diff %q", got)
	}
	p.click(`table.versions tbody tr:last-child button.restore`)
	p.waitFor(`location.hash.includes("restored=") && document.getElementById("root").dataset.state === "ready" && document.querySelectorAll("table.versions tbody tr").length === 4`, "the restore")
	if got := b.memoryContent("/releases/versioning.md"); got != "Bump the minor version for features." {
		t.Fatalf("after restore %q", got)
	}
	// The agent reads what was restored.
	b.model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("r1", "read_memory",
		map[string]string{"store": "release-policy", "path": "/releases/versioning.md"})}}, providertest.Reply{Content: "Minor."})
	b.chat("release", "s-release", "crm/1", "How do we version a feature?")
	reqs := b.model.ChatRequests()
	last := reqs[len(reqs)-1]
	var toolResult string
	for _, msg := range last.Messages {
		if msg.Role == "tool" {
			toolResult = msg.Content
		}
	}
	if !strings.Contains(toolResult, "Bump the minor version for features.") || strings.Contains(toolResult, "patch") {
		t.Fatalf("read_memory returned %q", toolResult)
	}

	// Redact the version holding markup (the second, now not current).
	p.click(`table.versions tbody tr:nth-child(3) button.redact`)
	p.click(`table.versions .confirm button.yes`)
	p.waitFor(`document.getElementById("root").dataset.state === "ready" && (document.querySelector("table.versions tbody tr:nth-child(3)") || {}).textContent.includes("redacted")`, "the redacted version")
	var vid string
	p.js(`document.querySelector("table.versions tbody tr:nth-child(3)").dataset.id`, &vid)
	var ver struct {
		Redacted bool    `json:"redacted"`
		Content  *string `json:"content"`
	}
	b.do(adminKey, "GET", "/api/memory_stores/release-policy/memory_versions/"+vid, nil, &ver)
	if !ver.Redacted || ver.Content != nil {
		t.Fatalf("version after redact %+v", ver)
	}

	// An agent's learned store is read-only here.
	var page struct {
		Stores []struct {
			Slug, Origin string
		} `json:"memory_stores"`
	}
	b.do(adminKey, "GET", "/api/memory_stores?origin=reflection", nil, &page)
	if len(page.Stores) == 0 {
		t.Fatal("no learned store")
	}
	p.goTo("#/stores/" + page.Stores[0].Slug)
	if got := p.text("#store .readonly"); !strings.Contains(got, "cannot be edited by hand") {
		t.Fatalf("learned store: %q", got)
	}
	var forms int
	p.js(`document.querySelectorAll("#new-memory, #memory button[type=submit]").length`, &forms)
	if forms != 0 || !strings.Contains(p.text("#learning"), "Learning") {
		t.Fatalf("learned store offers %d editing forms; learning %q", forms, p.text("#learning"))
	}
}

func (b *box) memoryContent(path string) string {
	b.t.Helper()
	var m struct{ Content string }
	if st, code := b.do(adminKey, "GET", "/api/memory_stores/release-policy/memory?path="+path, nil, &m); st != 200 {
		b.t.Fatalf("read %s: %d %s", path, st, code)
	}
	return m.Content
}

// newStore creates a memory store on the Memory stores screen and waits
// for it to open at its slug.
func (p *page) newStore(name, description, slug string) {
	p.t.Helper()
	p.set("#new-store input[name=name]", name)
	p.set("#new-store input[name=description]", description)
	p.js(`document.getElementById("new-store").requestSubmit()`)
	p.waitFor(`location.hash === "#/stores/`+slug+`" && document.getElementById("root").dataset.state === "ready" && !!document.getElementById("new-memory")`, "the new store "+slug)
}

// newMemory creates a memory in the open store and waits for its editor.
func (p *page) newMemory(path, summary, content string) {
	p.t.Helper()
	p.set("#new-memory input[name=path]", path)
	p.set("#new-memory input[name=summary]", summary)
	p.set("#new-memory textarea[name=content]", content)
	p.js(`document.getElementById("new-memory").requestSubmit()`)
	p.waitFor(`document.getElementById("root").dataset.state === "ready" && !!document.getElementById("memory")`, "the memory's editor")
}
