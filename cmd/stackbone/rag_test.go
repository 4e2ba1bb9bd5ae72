package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
)

// TestRAGCLI drives `stackbone rag` against a box with the rag routes:
// create a collection, ingest two files with progress, query, list jobs,
// and see a bad file reported without losing the good one.
func TestRAGCLI(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	b := boxtest.New(t, "agents: {}\n")
	secret, _, err := b.Keys.Create(ctx, "cli", []string{auth.ScopeRAGRead, auth.ScopeRAGWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	bc := &boxClient{base: b.URL, key: secret, http: &http.Client{Timeout: 30 * time.Second}}

	run := func(args ...string) (string, string, error) {
		cmd := ragCommand(func() *boxClient { return bc })
		var out, errw bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errw)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		return out.String(), errw.String(), err
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if out, _, err := run("collections", "create", "help-center", "--description", "Policies"); err != nil || !strings.Contains(out, "created collection help-center (openai/text-embedding-3-small, 1536 dimensions)") {
		t.Fatalf("create: %q %v", out, err)
	}
	returns := write("returns.md", "# Returns\n\nYou can return any item within 30 days of delivery.\n")
	shipping := write("shipping.txt", "Standard shipping to Germany takes 2 to 4 working days.\n")
	out, progress, err := run("ingest", "--collection", "help-center", "--metadata", `{"lang":"en"}`, returns, shipping)
	if err != nil {
		t.Fatalf("ingest: %v\n%s\n%s", err, out, progress)
	}
	if strings.Count(out, "succeeded") != 2 || !strings.Contains(progress, "ingesting") || !strings.Contains(progress, "returns.md") {
		t.Fatalf("ingest output:\n%s\nprogress:\n%s", out, progress)
	}
	if n := ragCount(t, b.Pool, `SELECT count(*) FROM stackbone_platform.rag_chunks WHERE metadata @> '{"lang":"en"}'`); n != 2 {
		t.Fatalf("%d chunks stored", n)
	}
	out, _, err = run("query", "--collection", "help-center", "--top-k", "1", "how", "long", "to", "return", "an", "item")
	if err != nil || !strings.Contains(out, "1 hits, embedded with openai/text-embedding-3-small") || !strings.Contains(out, "30 days") {
		t.Fatalf("query: %q %v", out, err)
	}
	out, _, err = run("collections", "list")
	if err != nil || !strings.Contains(out, "help-center") || !strings.Contains(out, "Policies") {
		t.Fatalf("list: %q %v", out, err)
	}
	out, _, err = run("jobs", "--collection", "help-center")
	if err != nil || strings.Count(out, "completed") != 2 {
		// Jobs complete just after their documents; poll briefly.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && (err != nil || strings.Count(out, "completed") != 2) {
			time.Sleep(50 * time.Millisecond)
			out, _, err = run("jobs", "--collection", "help-center")
		}
		if err != nil || strings.Count(out, "completed") != 2 {
			t.Fatalf("jobs: %q %v", out, err)
		}
	}
	// A bad file fails the command but the good one is ingested.
	bad := write("notes.docx", "PK")
	good := write("faq.txt", "Gift cards cannot be returned.")
	out, progress, err = run("ingest", "--collection", "help-center", bad, good)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 files were not ingested") || !strings.Contains(progress, "rag_unsupported_type") || !strings.Contains(out, "succeeded") {
		t.Fatalf("mixed ingest: %v\n%s\n%s", err, out, progress)
	}
	if _, _, err := run("query", "--collection", "nope", "x"); err == nil || !strings.Contains(err.Error(), "rag_collection_not_found") {
		t.Fatalf("unknown collection: %v", err)
	}
}

func ragCount(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
