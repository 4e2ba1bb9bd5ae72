package studio_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
)

// An operator creates a collection, uploads two documents (progress, then
// the ingest status updating by itself to succeeded), finds the right one
// with the Search panel, narrows the table with a JSONB filter, is refused
// a 26 MB file and a bad filter with nothing changed, and deletes a
// document with its chunks.
func TestRAGScreen(t *testing.T) {
	b := newBox(t)
	dir := t.TempDir()
	returns := filepath.Join(dir, "returns.md")
	shipping := filepath.Join(dir, "shipping.txt")
	huge := filepath.Join(dir, "huge.pdf")
	os.WriteFile(returns, []byte("# Returns\n\nYou can return any item within 30 days. The refund arrives within 5 days.\n"), 0o644)
	os.WriteFile(shipping, []byte("Orders ship from Madrid. Delivery takes two working days in Spain.\n"), 0o644)
	if err := os.WriteFile(huge, nil, 0o644); err != nil || os.Truncate(huge, 26<<20) != nil {
		t.Fatal("cannot make the 26 MB file")
	}

	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/rag")
	p.set("#new-collection input[name=name]", "help-center")
	p.set("#new-collection input[name=description]", "Policies")
	p.js(`document.getElementById("new-collection").requestSubmit()`)
	p.waitFor(`location.hash === "#/rag/help-center" && document.getElementById("root").dataset.state === "ready" && !!document.getElementById("upload")`, "the new collection")

	uploadFile := p.upload
	uploadFile(huge, "")
	p.waitFor(`document.getElementById("upload-result").textContent.includes("the limit is 25 MB")`, "the refusal of 26 MB")
	if n := b.count(`SELECT count(*) FROM stackbone_platform.rag_documents`); n != 0 {
		t.Fatalf("%d documents after the refused upload", n)
	}
	uploadFile(returns, `{"lang": "en", "topic": "returns"}`)
	p.waitFor(`document.querySelector("table.documents").dataset.rows === "1"`, "the first upload in the table")
	uploadFile(shipping, `{"lang": "es"}`)
	p.waitFor(`document.querySelector("table.documents").dataset.rows === "2"`, "the second upload in the table")
	// Status updates by itself, without a reload.
	p.waitFor(`[...document.querySelectorAll("table.documents tbody tr td:nth-child(2)")].every(td => td.textContent.startsWith("succeeded"))`, "both ingests to succeed")
	if got := p.text("table.documents"); !strings.Contains(got, "You can return any item within 30 days.") {
		t.Fatalf("no preview: %q", got)
	}
	if n := b.count(`SELECT count(*) FROM stackbone_platform.rag_chunks`); n < 2 {
		t.Fatalf("%d chunks stored", n)
	}

	p.set("#search input[name=text]", "How long do I have to return an item?")
	p.set("#search input[name=topK]", "1")
	p.js(`document.getElementById("search").requestSubmit()`)
	p.waitFor(`document.querySelectorAll("table.hits tbody tr").length === 1`, "one hit")
	if got := p.text("table.hits"); !strings.Contains(got, "return any item within 30 days") || !strings.Contains(got, `"topic":"returns"`) {
		t.Fatalf("the hit: %q", got)
	}
	if got := p.text("#search-head"); !strings.Contains(got, "embed_with openai/text-embedding-3-small") || !strings.Contains(got, "dim 1536") {
		t.Fatalf("search header %q", got)
	}

	p.set("#doc-filter input[name=filter]", `{"lang": `)
	p.js(`document.getElementById("doc-filter").requestSubmit()`)
	p.waitFor(`document.querySelector("#doc-filter .error").textContent.includes("JSON object")`, "the bad filter message")
	p.set("#doc-filter input[name=filter]", `{"lang": "es"}`)
	p.js(`document.getElementById("doc-filter").requestSubmit()`)
	p.waitFor(`document.getElementById("root").dataset.state === "ready" && document.querySelector("table.documents") && document.querySelector("table.documents").dataset.rows === "1"`, "the filtered table")
	if got := p.text("table.documents tbody"); !strings.Contains(got, "shipping.txt") {
		t.Fatalf("filtered documents %q", got)
	}
	p.click("table.documents button.delete")
	p.click("table.documents .confirm button.yes")
	p.waitFor(`document.querySelector("table.documents") && document.querySelector("table.documents").dataset.rows === "0"`, "the deleted document gone")
	if n := b.count(`SELECT count(*) FROM stackbone_platform.rag_documents WHERE filename = 'shipping.txt'`); n != 0 {
		t.Fatal("the deleted document is still stored")
	}
	if n := b.count(`SELECT count(*) FROM stackbone_platform.rag_chunks c JOIN stackbone_platform.rag_documents d ON d.id = c.document_id WHERE d.filename = 'returns.md'`); n == 0 {
		t.Fatal("the other document lost its chunks")
	}
}

// upload chooses the file at path in the RAG screen's upload form, with
// its metadata, and sends it.
func (p *page) upload(path, meta string) {
	p.t.Helper()
	if err := p.br.SetFiles(p.ctx, "#upload input[type=file]", path); err != nil {
		p.t.Fatal(err)
	}
	p.set("#upload input[name=metadata]", meta)
	p.js(`document.getElementById("upload").requestSubmit()`)
}

// ragWithDocument opens the collection help-center in a 1280x800 window,
// uploads a document whose first ingest fails for good (the embeddings
// answer another dimension) and waits for its failed row.
func ragWithDocument(t *testing.T) (*box, *page) {
	b := newBox(t)
	if st, code := b.do(adminKey, "POST", "/api/rag/collections", map[string]any{"name": "help-center", "description": "Policies"}, nil); st != 201 {
		t.Fatalf("create collection: %d %s", st, code)
	}
	b.model.ScriptEmbeddings(providertest.EmbedReply{Dimensions: 8})
	doc := filepath.Join(t.TempDir(), "returns-and-refunds-policy.md")
	if err := os.WriteFile(doc, []byte("# Returns\n\nYou can return any item within 30 days. The refund arrives within 5 days.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := b.open(t)
	p.window(1280, 800)
	p.signIn(adminKey)
	p.goTo("#/rag/help-center")
	p.upload(doc, `{"lang": "en", "topic": "returns", "audience": "customers"}`)
	p.waitFor(`[...document.querySelectorAll("table.documents tbody tr td:nth-child(2)")].some(td => td.textContent.startsWith("failed"))`, "the failed ingest")
	return b, p
}

// At 1280x800 the RAG screen fits the window: nothing scrolls sideways and
// a document's actions are on screen.
func TestRAGScreenFitsTheWindow(t *testing.T) {
	_, p := ragWithDocument(t)
	var fit struct {
		Width, Scroll int
		Actions       []struct {
			Text  string
			Right float64
		}
	}
	p.js(`({Width: window.innerWidth, Scroll: document.documentElement.scrollWidth,
		Actions: [...document.querySelectorAll("table.documents tbody tr td:last-child button, table.documents tbody tr td:last-child a")]
			.map(e => ({Text: e.textContent, Right: e.getBoundingClientRect().right}))})`, &fit)
	if fit.Width != 1280 || fit.Scroll > fit.Width {
		t.Fatalf("the page is %d px wide in a %d px window", fit.Scroll, fit.Width)
	}
	seen := map[string]bool{}
	for _, a := range fit.Actions {
		seen[a.Text] = true
		if a.Right > float64(fit.Width) {
			t.Fatalf("%s ends at %.0f px, outside the %d px window", a.Text, a.Right, fit.Width)
		}
	}
	if !seen["Download"] || !seen["Delete"] {
		t.Fatalf("the document's actions: %+v", fit.Actions)
	}
}

// A failed document has a Retry; retried, it is ingested, and the
// collection's chunk counts (its stats and the rail) follow without a
// reload.
func TestRAGRetryAndLiveCounts(t *testing.T) {
	b, p := ragWithDocument(t)
	if got := p.text("#stats"); !strings.Contains(got, "0 chunks") {
		t.Fatalf("stats before the ingest: %q", got)
	}
	// The box closes the failed attempt's job a moment after the document
	// reads failed; a retry is for a job that has stopped.
	job := b.count(`SELECT job_id FROM stackbone_platform.rag_documents`)
	poll.Until(t, "the failed job to stop", 15*time.Second, func() bool {
		var j struct{ State string }
		b.do(adminKey, "GET", "/api/rag/jobs/"+strconv.Itoa(job), nil, &j)
		return j.State == "cancelled" || j.State == "discarded"
	})
	p.click("table.documents button.retry")
	p.waitFor(`document.querySelector("table.documents tbody tr td:nth-child(2)")?.textContent.startsWith("succeeded")`, "the retried ingest to succeed")
	chunks := b.count(`SELECT count(*) FROM stackbone_platform.rag_chunks`)
	if chunks == 0 {
		t.Fatal("the retried document has no chunks")
	}
	want := count(chunks, "chunk")
	p.waitFor(`document.getElementById("stats").textContent.includes(`+strconv.Quote(want)+`) &&
		document.querySelector("#collections a.active small").textContent === `+strconv.Quote("1 doc · "+want), "the counts after the ingest: "+want)
	if got := p.text("table.documents tbody tr td:nth-child(3)"); got != strconv.Itoa(chunks) {
		t.Fatalf("the document's chunks %q, stored %d", got, chunks)
	}
}

// count is n and its noun as Studio writes it: "1 chunk", "2 chunks".
func count(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + one + "s"
}
