package openapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/openapi"
)

var update = flag.Bool("update", false, "rewrite api/openapi.json from the route table")

const committed = "../api/openapi.json"

// The committed document is the one the table builds.
func TestDocumentIsCurrent(t *testing.T) {
	doc, err := openapi.Document()
	if err != nil {
		t.Fatal(err)
	}
	doc = append(doc, '\n')
	if *update {
		if err := os.WriteFile(committed, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range openapi.Routes {
		if r.Tag == "" || !strings.Contains(string(doc), `"name": "`+r.Tag+`"`) {
			t.Errorf("%s: tag %q is not in the document's tags", r.Pattern, r.Tag)
		}
		if openapi.TagDescription(r.Tag) == "" {
			t.Errorf("%s: tag %q has no description (tagDescriptions in openapi/openapi.go)", r.Pattern, r.Tag)
		}
	}
	if !bytes.Equal(old, doc) {
		t.Fatal("api/openapi.json is stale: run go test ./openapi -run TestDocumentIsCurrent -update, then the SDK's types: (cd sdk/typescript && npm run generate)")
	}
}

const agentsYAML = `
agents:
  support:
    model: openai/chat
`

// Every /api route the box's router serves is in the document with the
// scope and person rule the router enforces, and the document names no
// route the router lacks; the document is served without a key.
func TestDocumentCoversTheRouter(t *testing.T) {
	b := boxtest.New(t, agentsYAML)
	served := map[string]bool{}
	for _, r := range b.API.Routes() {
		_, path, ok := strings.Cut(r.Pattern, " ")
		if !ok || !strings.HasPrefix(path, "/api/") {
			continue // a wire, a page, or the catch-all of unknown /api routes
		}
		served[r.Pattern] = true
		i := slices.IndexFunc(openapi.Routes, func(d openapi.Route) bool { return d.Pattern == r.Pattern })
		if i < 0 {
			t.Errorf("%s is served but missing from the document: add it to Routes in openapi/routes.go, then go test ./openapi -run TestDocumentIsCurrent -update", r.Pattern)
			continue
		}
		d := openapi.Routes[i]
		if d.Scope != r.Scope || d.Person != r.Person {
			t.Errorf("%s: the document says scope %q person %v, the router %q %v", r.Pattern, d.Scope, d.Person, r.Scope, r.Person)
		}
	}
	for _, d := range openapi.Routes {
		if !served[d.Pattern] {
			t.Errorf("%s is in the document but the box does not serve it", d.Pattern)
		}
	}

	resp, err := http.Get(b.URL + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, _ := os.ReadFile(committed)
	if resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("GET /api/openapi.json without a key: %d, %d bytes; want 200 and the committed document", resp.StatusCode, len(body))
	}
}

// The validator accepts what the document describes and refuses the rest;
// every example request fits its route's schema.
func TestValidator(t *testing.T) {
	doc, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	v, err := openapi.NewValidator(doc)
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, r := range openapi.Routes {
		if r.Example == nil {
			continue
		}
		examples++
		body, _ := json.Marshal(r.Example)
		if err := v.Request(r.Method(), strings.ReplaceAll(r.Path(), "{", "x"), body); err != nil {
			t.Errorf("the example of %s: %v", r.Pattern, err)
		}
	}
	if examples < 5 {
		t.Errorf("%d example requests, want the person-memory and RAG ones", examples)
	}
	if err := v.Request("POST", "/api/memory/recall", []byte(`{"agentId":"support","userId":"p","calls":"3"}`)); err == nil {
		t.Error("a recall with calls as a string fits the schema")
	}
	if err := v.Request("POST", "/api/memory/recall", []byte(`{"agentId":"support","userId":"p","extra":1}`)); err == nil {
		t.Error("a recall with an unknown member fits the schema")
	}
	for _, c := range []struct {
		method, path string
		status       int
		body         string
		ok           bool
	}{
		{"POST", "/api/memory/delete-all", 200, `{"data":{"deleted":3},"error":null}`, true},
		{"POST", "/api/memory/delete-all", 200, `{"data":{"deleted":"3"},"error":null}`, false},
		{"POST", "/api/memory/delete-all", 200, `{"data":{},"error":null}`, false},
		{"POST", "/api/memory/add", 409, `{"data":null,"error":{"code":"memory_conflict","message":"x"}}`, true},
		{"POST", "/api/memory/add", 409, `{"data":null,"error":{"code":"rag_collection_exists","message":"x"}}`, false},
		{"POST", "/api/memory/add", 418, `{"data":null,"error":{"code":"teapot","message":"x"}}`, false},
		{"POST", "/api/memory/recall", 200, `{"data":{"facts":[{"id":"a","content":"c","createdAt":"t","updatedAt":"t"}],"calls":[]},"error":null}`, true},
		{"POST", "/api/memory/recall", 200, `{"data":{"facts":null,"calls":[]},"error":null}`, false},
		{"GET", "/api/voice/calls/abc", 200, `{"data":{"id":"abc"},"error":null}`, false},
		{"GET", "/api/memory_stores/s/memories/search", 200, `{"data":{"data":[]},"error":null}`, false},
		{"POST", "/api/memory/add", 401, `{"data":null,"error":{"code":"unauthorized","message":"x"}}`, true},
		{"POST", "/api/memory/add", 401, `{"data":null,"error":{"code":"forbidden","message":"x"}}`, false},
		{"GET", "/api/nothing/here", 404, `{"data":null,"error":{"code":"not_found","message":"x"}}`, true},
		{"DELETE", "/api/memory_stores/s", 204, ``, true},
		{"DELETE", "/api/keys/ci%20%3Cb%3Ebot%3C%2Fb%3E", 200, `{"data":{"revoked":"ci <b>bot</b>"},"error":null}`, true},
	} {
		err := v.Response(c.method, c.path, c.status, []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s %s %d %s: got %v, want ok=%v", c.method, c.path, c.status, c.body, err, c.ok)
		}
	}
}
