package studio_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

	uploadFile := func(path, meta string) {
		t.Helper()
		if err := p.br.SetFiles(p.ctx, "#upload input[type=file]", path); err != nil {
			t.Fatal(err)
		}
		p.set("#upload input[name=metadata]", meta)
		p.js(`document.getElementById("upload").requestSubmit()`)
	}
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
