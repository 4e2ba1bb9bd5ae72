package rag_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
)

func TestCollections(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var c rag.Collection
	e.must(e.call("POST", "/api/rag/collections", map[string]any{"name": "help-center", "description": "Policies"}), http.StatusCreated, &c)
	if c.Model != "openai/text-embedding-3-small" || c.Dimensions != 1536 {
		t.Fatalf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"name": "help-center"}, 409, "rag_collection_exists"},
		{map[string]any{"name": "Help Center"}, 400, "rag_invalid_request"},
		{map[string]any{"name": "x", "model": "local/e5"}, 400, "rag_invalid_request"}, // unknown dimension
		{map[string]any{"name": "x", "model": "nope"}, 400, "rag_invalid_request"},
		{map[string]any{"name": "x", "extra": 1}, 400, "rag_invalid_request"},
	} {
		v := e.call("POST", "/api/rag/collections", tc.body)
		if v.status != tc.status || v.code() != tc.code {
			t.Errorf("%v: %d %s, want %d %s", tc.body, v.status, v.code(), tc.status, tc.code)
		}
	}
	e.must(e.call("POST", "/api/rag/collections", map[string]any{"name": "e5", "model": "local/e5", "dimensions": 384}), http.StatusCreated, nil)
	e.ingest("help-center", "a", chunks("one", "two")...)
	var list []rag.Collection
	e.must(e.call("GET", "/api/rag/collections", nil), http.StatusOK, &list)
	var names []string
	for _, c := range list {
		names = append(names, fmt.Sprintf("%s:%s:%d:%d:%d", c.Name, c.Model, c.Dimensions, c.Documents, c.Chunks))
	}
	want := []string{"default:openai/text-embedding-3-small:1536:0:0", "e5:local/e5:384:0:0", "help-center:openai/text-embedding-3-small:1536:1:2"}
	if !slices.Equal(names, want) {
		t.Fatalf("collections = %v, want %v", names, want)
	}
}

func TestCodeIngestAndRetrieve(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createCollection("help-center")
	d := e.ingest("help-center", "faq-returns",
		rag.Chunk{Content: "You can return any item within 30 days of delivery.", Metadata: map[string]any{"topic": "returns"}},
		rag.Chunk{Content: "Refunds reach your card within 5 business days.", Metadata: map[string]any{"topic": "refunds"}},
		rag.Chunk{Content: "Standard shipping to Germany takes 2 to 4 working days.", Metadata: map[string]any{"topic": "shipping"}})
	if d.ID != "faq-returns" || d.Status != "succeeded" || d.Chunks != 3 || d.Source != "code" || d.Collection != "help-center" {
		t.Fatalf("document = %+v", d)
	}
	// What the provider was sent: the chunks, with the collection's model and dimension.
	reqs := e.prov.EmbeddingsRequests()
	if len(reqs) != 1 || reqs[0].Model != "text-embedding-3-small" || reqs[0].Dimensions != 1536 || len(reqs[0].Input) != 3 {
		t.Fatalf("embeddings requests = %+v", reqs)
	}
	hits := e.retrieve(rag.RetrieveRequest{Text: "how many days to return an item", Namespace: "help-center", TopK: 2})
	if len(hits) != 2 || !strings.Contains(hits[0].Content, "return any item") {
		t.Fatalf("hits = %v", contents(hits))
	}
	h := hits[0]
	if h.DocumentID != "faq-returns" || h.ChunkID == 0 || h.Model != "openai/text-embedding-3-small" || h.Collection != "help-center" ||
		h.Metadata["topic"] != "returns" || h.ChunkIndex != 0 {
		t.Fatalf("hit = %+v", h)
	}
	if !(hits[0].Score >= hits[1].Score && hits[0].Score <= 1 && hits[1].Score >= 0) {
		t.Fatalf("scores not in [0,1] best first: %v %v", hits[0].Score, hits[1].Score)
	}
	// The query was embedded with the collection's model.
	reqs = e.prov.EmbeddingsRequests()
	if q := reqs[len(reqs)-1]; q.Model != "text-embedding-3-small" || len(q.Input) != 1 || q.Input[0] != "how many days to return an item" {
		t.Fatalf("query embedding request = %+v", q)
	}
	// Default collection when none is named: it exists and is empty.
	if hits := e.retrieve(rag.RetrieveRequest{Text: "return"}); len(hits) != 0 {
		t.Fatalf("default collection hits = %v", contents(hits))
	}
	// No content in the logs.
	for _, s := range []string{"return any item", "how many days"} {
		if e.logs.contains(s) {
			t.Fatalf("the logs hold content %q", s)
		}
	}
}

func TestReingestReplacesChunksAtomically(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createCollection("kb")
	e.ingest("kb", "page-1", chunks("old alpha", "old beta", "old gamma")...)
	e.ingest("kb", "page-1", chunks("new alpha", "new beta")...)
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_chunks WHERE document_id = 'page-1'`); n != 2 {
		t.Fatalf("chunks after re-ingest = %d, want 2", n)
	}
	for _, h := range e.retrieve(rag.RetrieveRequest{Text: "alpha beta gamma old", Namespace: "kb", TopK: 10}) {
		if strings.HasPrefix(h.Content, "old") {
			t.Fatalf("an old chunk came back: %q", h.Content)
		}
	}
	// A failed re-ingest changes nothing.
	e.prov.ScriptEmbeddings(providertest.EmbedReply{Status: 500, Message: "boom"})
	v := e.call("POST", "/api/rag/ingest", rag.IngestRequest{ID: "page-1", Collection: "kb", Chunks: chunks("broken")})
	if v.status != http.StatusBadGateway || v.code() != "rag_embedding_failed" {
		t.Fatalf("failed ingest: %d %s", v.status, v.code())
	}
	if got := contents(e.retrieve(rag.RetrieveRequest{Text: "alpha beta", Namespace: "kb", TopK: 10})); !slices.Equal(sorted(got), []string{"new alpha", "new beta"}) {
		t.Fatalf("after a failed re-ingest: %v", got)
	}
	// Racing re-crawls converge on one complete set, never a mix or a duplicate.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.ingest("kb", "page-1", chunks(fmt.Sprintf("v%d one", i), fmt.Sprintf("v%d two", i), fmt.Sprintf("v%d three", i))...)
		}()
	}
	wg.Wait()
	var versions []string
	rows, _ := e.pool.Query(e.ctx, `SELECT DISTINCT split_part(content, ' ', 1) FROM stackbone_platform.rag_chunks WHERE document_id = 'page-1'`)
	for rows.Next() {
		var s string
		rows.Scan(&s)
		versions = append(versions, s)
	}
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_chunks WHERE document_id = 'page-1'`); n != 3 || len(versions) != 1 {
		t.Fatalf("after racing re-ingests: %d chunks of versions %v", n, versions)
	}
	if hits := e.retrieve(rag.RetrieveRequest{Text: "one two three", Namespace: "kb", TopK: 10}); len(hits) != 3 {
		t.Fatalf("index after racing re-ingests: %v", contents(hits))
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func TestFiltersTopKAndOneCollection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createCollection("en")
	e.createCollection("de")
	var cs []rag.Chunk
	for i := range 12 {
		lang := []string{"en", "fr"}[i%2]
		cs = append(cs, rag.Chunk{Content: fmt.Sprintf("returns policy article %d", i), Metadata: map[string]any{"lang": lang, "n": i, "tags": []string{"policy"}}})
	}
	e.ingest("en", "articles", cs...)
	e.ingest("de", "artikel", chunks("returns policy article Rückgabe", "returns policy article Versand")...)

	if hits := e.retrieve(rag.RetrieveRequest{Text: "returns policy article", Namespace: "en", TopK: 4}); len(hits) != 4 {
		t.Fatalf("topK 4: %d hits", len(hits))
	}
	if hits := e.retrieve(rag.RetrieveRequest{Text: "returns policy article", Namespace: "en"}); len(hits) != rag.DefaultTopK {
		t.Fatalf("default topK: %d hits", len(hits))
	}
	// One collection only: the same words in "de" never come back from "en", and the reverse.
	for _, h := range e.retrieve(rag.RetrieveRequest{Text: "returns policy article Rückgabe Versand", Namespace: "en", TopK: 100}) {
		if h.Collection != "en" || h.DocumentID != "articles" {
			t.Fatalf("a hit from another collection: %+v", h)
		}
	}
	if hits := e.retrieve(rag.RetrieveRequest{Text: "returns policy article", Namespace: "de", TopK: 100}); len(hits) != 2 {
		t.Fatalf("de: %v", contents(hits))
	}
	// JSONB containment filters.
	hits := e.retrieve(rag.RetrieveRequest{Text: "returns policy article", Namespace: "en", TopK: 100, Filter: map[string]any{"lang": "fr"}})
	if len(hits) != 6 {
		t.Fatalf("lang=fr: %d hits", len(hits))
	}
	for _, h := range hits {
		if h.Metadata["lang"] != "fr" {
			t.Fatalf("filter let through %+v", h.Metadata)
		}
	}
	if hits := e.retrieve(rag.RetrieveRequest{Text: "x", Namespace: "en", Filter: map[string]any{"n": 3, "tags": []string{"policy"}}}); len(hits) != 1 || hits[0].Metadata["n"] != float64(3) {
		t.Fatalf("n=3 & tags ⊇ [policy]: %+v", hits)
	}
	if hits := e.retrieve(rag.RetrieveRequest{Text: "x", Namespace: "en", Filter: map[string]any{"lang": "es"}}); len(hits) != 0 {
		t.Fatalf("no match: %v", contents(hits))
	}
	for _, tc := range []struct {
		body   any
		status int
		code   string
	}{
		{rag.RetrieveRequest{Text: "x", Namespace: "nope"}, 404, "rag_collection_not_found"},
		{rag.RetrieveRequest{Text: "", Namespace: "en"}, 400, "rag_invalid_request"},
		{rag.RetrieveRequest{Text: "x", Namespace: "en", TopK: 101}, 400, "rag_invalid_request"},
		{map[string]any{"text": "x", "namespace": "en", "filter": "lang=en"}, 400, "rag_invalid_request"},
		{map[string]any{"text": "x", "unknown": true}, 400, "rag_invalid_request"},
	} {
		if v := e.call("POST", "/api/rag/retrieve", tc.body); v.status != tc.status || v.code() != tc.code {
			t.Errorf("%+v: %d %s, want %d %s", tc.body, v.status, v.code(), tc.status, tc.code)
		}
	}
}

func TestModelMismatchIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createCollection("kb")
	e.ingest("kb", "doc", chunks("returns within 30 days")...)
	before := len(e.prov.EmbeddingsRequests())
	v := e.call("POST", "/api/rag/retrieve", rag.RetrieveRequest{Text: "returns", Namespace: "kb", Model: "openai/text-embedding-3-large"})
	if v.status != http.StatusConflict || v.code() != "rag_model_mismatch" || !strings.Contains(v.Error.Message, "openai/text-embedding-3-small") {
		t.Fatalf("query with another model: %d %+v", v.status, v.Error)
	}
	v = e.call("POST", "/api/rag/ingest", rag.IngestRequest{ID: "doc2", Collection: "kb", Model: "openai/text-embedding-3-large", Chunks: chunks("x")})
	if v.status != http.StatusConflict || v.code() != "rag_model_mismatch" {
		t.Fatalf("ingest with another model: %d %+v", v.status, v.Error)
	}
	if n := len(e.prov.EmbeddingsRequests()); n != before {
		t.Fatalf("a mismatched request reached the provider (%d requests)", n-before)
	}
	// A provider that answers another dimension is refused, never stored or compared.
	e.prov.ScriptEmbeddings(providertest.EmbedReply{Dimensions: 768})
	v = e.call("POST", "/api/rag/retrieve", rag.RetrieveRequest{Text: "returns", Namespace: "kb"})
	if v.status != http.StatusConflict || v.code() != "rag_model_mismatch" || !strings.Contains(v.Error.Message, "768") {
		t.Fatalf("query embedded with 768 dimensions: %d %+v", v.status, v.Error)
	}
	e.prov.ScriptEmbeddings(providertest.EmbedReply{Dimensions: 768})
	v = e.call("POST", "/api/rag/ingest", rag.IngestRequest{ID: "doc3", Collection: "kb", Chunks: chunks("x")})
	if v.status != http.StatusConflict || v.code() != "rag_model_mismatch" {
		t.Fatalf("ingest embedded with 768 dimensions: %d %+v", v.status, v.Error)
	}
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_documents WHERE id = 'doc3'`); n != 0 {
		t.Fatal("a mismatched ingest was stored")
	}
	// Search with a vector of the wrong dimension.
	if _, err := e.svc.Search(e.ctx, rag.SearchRequest{Collection: "kb", Vector: make([]float32, 3)}); rag.Code(err) != "rag_model_mismatch" {
		t.Fatalf("search with 3 dimensions: %v", err)
	}
}

func TestDocumentIDBelongsToOneCollection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createCollection("a")
	e.createCollection("b")
	e.ingest("a", "shared-id", chunks("one")...)
	v := e.call("POST", "/api/rag/ingest", rag.IngestRequest{ID: "shared-id", Collection: "b", Chunks: chunks("two")})
	if v.status != http.StatusConflict || v.code() != "rag_document_conflict" {
		t.Fatalf("%d %+v", v.status, v.Error)
	}
	for _, bad := range []rag.IngestRequest{
		{ID: "", Collection: "a", Chunks: chunks("x")},
		{ID: "has space", Collection: "a", Chunks: chunks("x")},
		{ID: "ok", Collection: "a"},
		{ID: "ok", Collection: "a", Chunks: chunks("   ")},
		{ID: "ok", Collection: "a", Chunks: chunks(strings.Repeat("x", rag.MaxChunkChars+1))},
	} {
		if v := e.call("POST", "/api/rag/ingest", bad); v.status != 400 || v.code() != "rag_invalid_request" {
			t.Errorf("%+.60v: %d %s", bad, v.status, v.code())
		}
	}
	if v := e.call("POST", "/api/rag/ingest", rag.IngestRequest{ID: "ok", Collection: "zzz", Chunks: chunks("x")}); v.code() != "rag_collection_not_found" {
		t.Fatalf("unknown collection: %s", v.code())
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withScopes(auth.ScopeRAGRead))
	if v := e.call("POST", "/api/rag/ingest", rag.IngestRequest{ID: "x", Chunks: chunks("x")}); v.status != http.StatusForbidden {
		t.Fatalf("ingest with rag:read only: %d", v.status)
	}
	if v := e.call("GET", "/api/rag/collections", nil); v.status != http.StatusOK {
		t.Fatalf("list with rag:read: %d", v.status)
	}
}
