package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/stores"
)

// TestStoresCLI drives `stackbone memory-stores` against a box with the
// store routes: create, write from stdin, list, read, a compare-and-swap
// edit, search, history, the redact rule, delete and restore, learning.
func TestStoresCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := boxtest.New(t, "agents:\n  support:\n    model: openai/x\n")
	run := func(stdin string, args ...string) (string, error) {
		cmd := storesCommand(func() *boxClient { return &boxClient{base: b.URL, key: boxtest.Key, http: http.DefaultClient} })
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetIn(strings.NewReader(stdin))
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	must := func(v any, stdin string, args ...string) {
		t.Helper()
		out, err := run(stdin, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if v != nil {
			if err := json.Unmarshal([]byte(out), v); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
		}
	}
	var st stores.Store
	must(&st, "", "create", "Release policy", "--description", "How we ship.")
	if st.Slug != "release-policy" {
		t.Fatalf("created %+v", st)
	}
	var m stores.Memory
	must(&m, "Bump the minor version for features.", "write", "release-policy", "/releases/versioning.md", "--summary", "How versions are chosen.")
	var l stores.Listing
	must(&l, "", "ls", "release-policy")
	if len(l.Entries) != 1 || l.Entries[0].Path != "/releases/" || *l.Entries[0].Count != 1 {
		t.Fatalf("ls: %+v", l.Entries)
	}
	var got stores.Memory
	must(&got, "", "read", "release-policy", "/releases/versioning.md")
	if got.Content != "Bump the minor version for features." {
		t.Fatalf("read %+v", got)
	}
	must(&got, "Bump the minor version for features and the patch version for fixes.", "edit", "release-policy", m.ID.String(), "--file", "-", "--sha", m.ContentSHA256)
	if _, err := run("Stale.", "edit", "release-policy", m.ID.String(), "--file", "-", "--sha", m.ContentSHA256); err == nil ||
		!strings.HasPrefix(err.Error(), "content_sha256_mismatch:") {
		t.Fatalf("stale edit: %v", err)
	}
	var res stores.SearchResult
	must(&res, "", "search", "release-policy", "patch fixes")
	if len(res.Memories) != 1 {
		t.Fatalf("search %+v", res)
	}
	var h stores.VersionPage
	must(&h, "", "history", "release-policy", "--memory", m.ID.String())
	if len(h.Versions) != 2 {
		t.Fatalf("history %+v", h)
	}
	if _, err := run("", "redact", "release-policy", got.HeadVersionID.String()); err == nil || !strings.HasPrefix(err.Error(), "memory_version_current:") {
		t.Fatalf("redact current: %v", err)
	}
	must(nil, "", "rm", "release-policy", m.ID.String())
	if _, err := run("", "read", "release-policy", "/releases/versioning.md"); err == nil || !strings.HasPrefix(err.Error(), "not_found:") {
		t.Fatalf("read deleted: %v", err)
	}
	must(&got, "", "restore", "release-policy", got.HeadVersionID.String())
	if got.ID != m.ID || got.Status != "active" {
		t.Fatalf("restored %+v", got)
	}
	var am stores.AgentMemory
	must(nil, "", "learning", "support", "--model", "openai/memory")
	must(&am, "", "learning", "support")
	if am.EffectiveModel != "openai/memory" || am.State != "waiting" {
		t.Fatalf("learning %+v", am)
	}
	must(nil, "", "archive", "release-policy")
	must(nil, "", "delete", "release-policy")
	var page stores.StorePage
	must(&page, "", "list", "--origin", "curated", "--include-archived")
	if len(page.Stores) != 0 {
		t.Fatalf("stores left: %+v", page.Stores)
	}
}
