package stores_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stackbone/box/stores"
)

func TestStoreLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	st := e.createStore("Release policy", nil)
	if st.Slug != "release-policy" || st.Origin != "curated" || st.Status != "active" || st.AgentID != nil ||
		st.MemoryCount != 0 || st.TotalBytes != 0 || st.Revision != 0 || st.Description != "About Release policy." {
		t.Fatalf("created store: %+v", st)
	}
	scoped := e.createStore("Release policy", ptr("support"))
	if scoped.Slug != "release-policy-2" || scoped.AgentID == nil || *scoped.AgentID != "support" {
		t.Fatalf("second store of the same name: %+v", scoped)
	}
	e.call("POST", "/api/memory_stores", map[string]any{"name": "X", "agent_id": "nobody"}).fails(t, 404, "not_found")
	e.call("POST", "/api/memory_stores", map[string]any{"description": "no name"}).fails(t, 400, "invalid_request")
	e.call("POST", "/api/memory_stores", map[string]any{"name": strings.Repeat("n", 101)}).fails(t, 400, "invalid_request")
	e.call("POST", "/api/memory_stores", map[string]any{"name": "X", "description": strings.Repeat("d", 2001)}).fails(t, 400, "invalid_request")
	e.call("POST", "/api/memory_stores", map[string]any{"name": "X", "colour": "red"}).fails(t, 400, "invalid_request")
	e.call("POST", "/api/memory_stores", `{"name": "X"`).fails(t, 400, "invalid_request")
	e.call("POST", "/api/memory_stores", map[string]any{"name": 5}).fails(t, 400, "invalid_request")

	// Rename and redescribe: the slug stays; omitted fields stay.
	var renamed stores.Store
	e.call("POST", "/api/memory_stores/"+st.ID.String(), map[string]any{"name": "Shipping policy"}).ok(t, 200, &renamed)
	if renamed.Name != "Shipping policy" || renamed.Slug != "release-policy" || renamed.Description != st.Description {
		t.Fatalf("renamed: %+v", renamed)
	}
	e.call("PATCH", "/api/memory_stores/release-policy", map[string]any{"description": "When and how we ship."}).ok(t, 200, &renamed)
	if renamed.Name != "Shipping policy" || renamed.Description != "When and how we ship." {
		t.Fatalf("redescribed: %+v", renamed)
	}
	var got stores.Store
	e.call("GET", "/api/memory_stores/release-policy", nil).ok(t, 200, &got)
	if got.ID != st.ID {
		t.Fatalf("by slug: %+v", got)
	}
	e.call("GET", "/api/memory_stores/00000000-0000-0000-0000-000000000001", nil).fails(t, 404, "not_found")
	e.call("GET", "/api/memory_stores/no-such-slug", nil).fails(t, 404, "not_found")

	// Lists: the two learned stores (created with their agents) and ours.
	var page stores.StorePage
	e.call("GET", "/api/memory_stores", nil).ok(t, 200, &page)
	if len(page.Stores) != 4 || page.NextCursor != nil {
		t.Fatalf("all stores: %d %v", len(page.Stores), page.NextCursor)
	}
	e.call("GET", "/api/memory_stores?origin=curated", nil).ok(t, 200, &page)
	if len(page.Stores) != 2 {
		t.Fatalf("curated: %d", len(page.Stores))
	}
	e.call("GET", "/api/memory_stores?origin=reflection&agent_id=support", nil).ok(t, 200, &page)
	if len(page.Stores) != 1 || page.Stores[0].Origin != "reflection" || page.Stores[0].Slug != "learned-support" || page.Stores[0].Name != "Learned memory" {
		t.Fatalf("learned store of support: %+v", page.Stores)
	}
	learned := page.Stores[0]
	var seen []string
	cursor := ""
	for i := 0; i < 10; i++ {
		e.call("GET", "/api/memory_stores?limit=1&cursor="+cursor, nil).ok(t, 200, &page)
		for _, s := range page.Stores {
			seen = append(seen, s.Slug)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(seen) != 4 {
		t.Fatalf("paged through %v", seen)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "origin=mine", "status=gone", "cursor=zzz", "include_archived=yes"} {
		e.call("GET", "/api/memory_stores?"+q, nil).fails(t, 400, "invalid_request")
	}

	// Archive: read-only, left out of lists, no unarchive, idempotent.
	e.createMemory("release-policy", "/a.md", "A.", "Alpha.")
	if r := e.call("POST", "/api/memory_stores/release-policy/archive", nil); r.status != 204 {
		t.Fatalf("archive: %d %s", r.status, r.raw)
	}
	if r := e.call("POST", "/api/memory_stores/release-policy/archive", nil); r.status != 204 {
		t.Fatalf("archive again: %d %s", r.status, r.raw)
	}
	r := e.call("POST", "/api/memory_stores/release-policy/memories", map[string]string{"path": "/b.md", "summary": "B.", "content": "Beta."})
	r.fails(t, 400, "invalid_request")
	if !strings.Contains(r.err.Message, "memory_store_id") || !strings.Contains(r.err.Message, "archived") {
		t.Fatalf("archived write message: %s", r.err.Message)
	}
	e.call("GET", "/api/memory_stores/release-policy/memory?path=/a.md", nil).ok(t, 200, nil)
	e.call("GET", "/api/memory_stores?origin=curated", nil).ok(t, 200, &page)
	if len(page.Stores) != 1 {
		t.Fatalf("archived store listed: %d", len(page.Stores))
	}
	e.call("GET", "/api/memory_stores?origin=curated&include_archived=true", nil).ok(t, 200, &page)
	if len(page.Stores) != 2 {
		t.Fatalf("include_archived: %d", len(page.Stores))
	}
	e.call("GET", "/api/memory_stores?status=archived", nil).ok(t, 200, &page)
	if len(page.Stores) != 1 || page.Stores[0].Status != "archived" || page.Stores[0].ArchivedAt == nil {
		t.Fatalf("status=archived: %+v", page.Stores)
	}

	// Learned memory cannot be renamed, archived, deleted or hand-edited.
	lid := learned.ID.String()
	e.call("POST", "/api/memory_stores/"+lid, map[string]any{"name": "Mine"}).fails(t, 400, "invalid_request")
	e.call("POST", "/api/memory_stores/"+lid+"/archive", nil).fails(t, 400, "invalid_request")
	e.call("DELETE", "/api/memory_stores/"+lid, nil).fails(t, 400, "invalid_request")
	r = e.call("POST", "/api/memory_stores/"+lid+"/memories", map[string]string{"path": "/x.md", "summary": "X.", "content": "X."})
	r.fails(t, 400, "invalid_request")
	if !strings.Contains(r.err.Message, "learned memory") {
		t.Fatalf("learned write message: %s", r.err.Message)
	}

	// Delete: the store and its memories leave every read path.
	if r := e.call("DELETE", "/api/memory_stores/release-policy", nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	e.call("GET", "/api/memory_stores/"+st.ID.String(), nil).fails(t, 404, "not_found")
	e.call("GET", "/api/memory_stores/"+st.ID.String()+"/memories", nil).fails(t, 404, "not_found")
	e.call("DELETE", "/api/memory_stores/"+st.ID.String(), nil).fails(t, 404, "not_found")
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.memories WHERE store_id = $1`, st.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("memories left after delete: %d %v", n, err)
	}
}

func TestAuthAndScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createStore("Notes", nil)
	e.callKey(readKey, "GET", "/api/memory_stores/notes/memories", nil).ok(t, 200, nil)
	e.callKey(readKey, "POST", "/api/memory_stores/notes/memories", map[string]string{"path": "/a.md", "summary": "A.", "content": "A."}).fails(t, 403, "forbidden")
	e.callKey(readKey, "PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": nil}).fails(t, 403, "forbidden")
	e.callKey("wrong", "GET", "/api/memory_stores", nil).fails(t, 401, "unauthorized")
}

func TestMemoryCreateReadUpdateDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createStore("Release policy", nil)
	const content = "Bump the minor version for features and the patch version for fixes."
	m := e.createMemory("release-policy", "/releases/versioning.md", "How release versions are chosen.", content)
	if m.Path != "/releases/versioning.md" || m.Content != content || m.ContentSHA256 != stores.SHA256(content) ||
		m.ByteSize != len(content) || m.Status != "active" || m.HeadVersionID.String() == "" {
		t.Fatalf("created: %+v", m)
	}
	var st stores.Store
	e.call("GET", "/api/memory_stores/release-policy", nil).ok(t, 200, &st)
	if st.MemoryCount != 1 || st.TotalBytes != int64(len(content)) || st.Revision != 1 {
		t.Fatalf("store after create: %+v", st)
	}

	// Create never overwrites.
	r := e.call("POST", "/api/memory_stores/release-policy/memories", map[string]string{"path": "/releases/versioning.md", "summary": "Other.", "content": "Other."})
	r.fails(t, 409, "memory_path_exists")
	var again stores.Memory
	e.call("GET", "/api/memory_stores/release-policy/memory?path=/releases/versioning.md", nil).ok(t, 200, &again)
	if again.Content != content {
		t.Fatalf("create overwrote: %q", again.Content)
	}

	// Fields, limits and path rules.
	bad := []map[string]any{
		{"summary": "S.", "content": "C."},
		{"path": "/x.md", "content": "C."},
		{"path": "/x.md", "summary": "S."},
		{"path": "/x.md", "summary": "S.", "content": ""},
		{"path": "/x.md", "summary": "S.", "content": "   "},
		{"path": "/x.md", "summary": "", "content": "C."},
		{"path": "/x.md", "summary": "S.", "content": strings.Repeat("x", 100<<10+1)},
		{"path": "/x.md", "summary": strings.Repeat("é", 513), "content": "C."},
		{"path": "x.md", "summary": "S.", "content": "C."},
		{"path": "/a/../x.md", "summary": "S.", "content": "C."},
		{"path": "/a//x.md", "summary": "S.", "content": "C."},
		{"path": "/a/./x.md", "summary": "S.", "content": "C."},
		{"path": "/~root/x.md", "summary": "S.", "content": "C."},
		{"path": `/a\x.md`, "summary": "S.", "content": "C."},
		{"path": "/folder/", "summary": "S.", "content": "C."},
		{"path": "/", "summary": "S.", "content": "C."},
		{"path": "/a\nb", "summary": "S.", "content": "C."},
		{"path": "/x.md", "summary": "S.", "content": "C.", "extra": true},
	}
	for i, b := range bad {
		r := e.call("POST", "/api/memory_stores/release-policy/memories", b)
		if r.status != 400 || r.err == nil || r.err.Code != "invalid_request" {
			t.Errorf("bad body %d: %d %s", i, r.status, r.raw)
		}
	}
	// The limits themselves are allowed.
	e.createMemory("release-policy", "/limits/max.md", strings.Repeat("é", 512), strings.Repeat("x", 100<<10))

	// Reads by path and by id.
	e.call("GET", "/api/memory_stores/release-policy/memory", nil).fails(t, 400, "invalid_request")
	e.call("GET", "/api/memory_stores/release-policy/memory?path=/nope.md", nil).fails(t, 404, "not_found")
	e.call("GET", "/api/memory_stores/release-policy/memories/"+m.StoreID.String(), nil).fails(t, 404, "not_found")
	e.call("GET", "/api/memory_stores/release-policy/memories/not-a-uuid", nil).fails(t, 404, "not_found")
	var byID stores.Memory
	e.call("GET", "/api/memory_stores/release-policy/memories/"+m.ID.String(), nil).ok(t, 200, &byID)
	if byID.Content != content || byID.ContentSHA256 != m.ContentSHA256 {
		t.Fatalf("by id: %+v", byID)
	}

	// Update with the hash read: new head, omitted fields stay.
	const v2 = "Bump the minor version for features, the patch version for fixes, and the major version for breaking changes."
	var up stores.Memory
	e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(),
		map[string]any{"content": v2, "content_sha256": m.ContentSHA256}).ok(t, 200, &up)
	if up.Content != v2 || up.Summary != m.Summary || up.Path != m.Path || up.HeadVersionID == m.HeadVersionID || up.ContentSHA256 != stores.SHA256(v2) {
		t.Fatalf("updated: %+v", up)
	}
	// A stale hash is refused and changes nothing.
	r = e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(), map[string]any{"content": "Stale.", "content_sha256": m.ContentSHA256})
	r.fails(t, 409, "content_sha256_mismatch")
	e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(), map[string]any{"content": "X", "content_sha256": "abc"}).fails(t, 400, "invalid_request")
	e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(), map[string]any{"summary": strings.Repeat("s", 513)}).fails(t, 400, "invalid_request")
	e.call("GET", "/api/memory_stores/release-policy/memories/"+m.ID.String(), nil).ok(t, 200, &again)
	if again.Content != v2 {
		t.Fatalf("stale update wrote: %q", again.Content)
	}
	// Renaming by a new path; onto a taken path is refused.
	e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(), map[string]any{"path": "/limits/max.md"}).fails(t, 409, "memory_path_exists")
	e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(), map[string]any{"path": "/policy/versions.md"}).ok(t, 200, &up)
	if up.Path != "/policy/versions.md" || up.Content != v2 {
		t.Fatalf("renamed: %+v", up)
	}
	e.call("GET", "/api/memory_stores/release-policy/memory?path=/releases/versioning.md", nil).fails(t, 404, "not_found")
	// An update that changes nothing writes no version.
	var same stores.Memory
	e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(), map[string]any{"content": v2}).ok(t, 200, &same)
	if same.HeadVersionID != up.HeadVersionID {
		t.Fatal("a no-op update wrote a version")
	}

	// Delete: 204, gone from every read path, path free again.
	if r := e.call("DELETE", "/api/memory_stores/release-policy/memories/"+m.ID.String(), nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	e.call("GET", "/api/memory_stores/release-policy/memories/"+m.ID.String(), nil).fails(t, 404, "not_found")
	e.call("GET", "/api/memory_stores/release-policy/memory?path=/policy/versions.md", nil).fails(t, 404, "not_found")
	e.call("DELETE", "/api/memory_stores/release-policy/memories/"+m.ID.String(), nil).fails(t, 404, "not_found")
	e.call("POST", "/api/memory_stores/release-policy/memories/"+m.ID.String(), map[string]any{"content": "X"}).fails(t, 404, "not_found")
	var entries stores.Listing
	e.call("GET", "/api/memory_stores/release-policy/memories?path_prefix=/policy/", nil).ok(t, 200, &entries)
	if len(entries.Entries) != 0 {
		t.Fatalf("deleted memory listed: %+v", entries.Entries)
	}
	fresh := e.createMemory("release-policy", "/policy/versions.md", "Reused path.", "New content.")
	if fresh.ID == m.ID {
		t.Fatal("the reused path kept the deleted memory's id")
	}
	e.call("GET", "/api/memory_stores/release-policy", nil).ok(t, 200, &st)
	if st.MemoryCount != 2 || st.TotalBytes != int64(100<<10+len("New content.")) {
		t.Fatalf("store counts: %+v", st)
	}
	checkFolders(t, e, st.ID)
}

func TestListingIsOneLevelAndMatchesWholeSegments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createStore("Release policy", nil)
	for _, p := range []string{"/releases/versioning.md", "/releases/checklists/a.md", "/releases/checklists/b.md",
		"/releases/checklists/c.md", "/releases/checklists/deep/x.md", "/releases-old/notes.md", "/readme.md"} {
		e.createMemory("release-policy", p, "Summary of "+p+".", "Content of "+p+". Bumping versions and tagging releases.")
	}
	list := func(q string) []string {
		t.Helper()
		var l stores.Listing
		e.call("GET", "/api/memory_stores/release-policy/memories?"+q, nil).ok(t, 200, &l)
		var out []string
		for _, en := range l.Entries {
			switch en.Type {
			case "memory":
				if en.Summary == nil || en.ByteSize == nil || en.MemoryID == nil || en.Count != nil {
					t.Fatalf("memory entry: %+v", en)
				}
				out = append(out, en.Path)
			case "memory_prefix":
				out = append(out, fmt.Sprintf("%s(%d)", en.Path, *en.Count))
			}
		}
		return out
	}
	if got := strings.Join(list(""), " "); got != "/readme.md /releases-old/(1) /releases/(5)" {
		t.Fatalf("root: %s", got)
	}
	if got := strings.Join(list("path_prefix=/releases/"), " "); got != "/releases/checklists/(4) /releases/versioning.md" {
		t.Fatalf("/releases/: %s", got)
	}
	if got := strings.Join(list("path_prefix=/releases"), " "); got != "/releases/checklists/(4) /releases/versioning.md" {
		t.Fatalf("/releases: %s", got)
	}
	if got := strings.Join(list("path_prefix=/releases/checklists/"), " "); got != "/releases/checklists/a.md /releases/checklists/b.md /releases/checklists/c.md /releases/checklists/deep/(1)" {
		t.Fatalf("checklists: %s", got)
	}
	if got := list("path_prefix=/nothing/"); len(got) != 0 {
		t.Fatalf("empty folder: %v", got)
	}
	// Paging one entry at a time visits each entry once.
	var walked []string
	cur := ""
	for i := 0; i < 20; i++ {
		var l stores.Listing
		e.call("GET", "/api/memory_stores/release-policy/memories?path_prefix=/releases/checklists/&limit=1&cursor="+url.QueryEscape(cur), nil).ok(t, 200, &l)
		for _, en := range l.Entries {
			walked = append(walked, en.Path)
		}
		if l.NextCursor == nil {
			break
		}
		cur = *l.NextCursor
	}
	if strings.Join(walked, " ") != "/releases/checklists/a.md /releases/checklists/b.md /releases/checklists/c.md /releases/checklists/deep/" {
		t.Fatalf("walked: %v", walked)
	}
	var l stores.Listing
	e.call("GET", "/api/memory_stores/release-policy/memories?limit=1", nil).ok(t, 200, &l)
	e.call("GET", "/api/memory_stores/release-policy/memories?path_prefix=/releases/&cursor="+url.QueryEscape(*l.NextCursor), nil).fails(t, 400, "invalid_request")
	for _, q := range []string{"path_prefix=releases/", "path_prefix=/a/../b/", "path_prefix=/a//", "limit=0", "limit=101", "cursor=garbage"} {
		e.call("GET", "/api/memory_stores/release-policy/memories?"+q, nil).fails(t, 400, "invalid_request")
	}

	// Search by content (stemmed), by a path word, within a folder, and a
	// substring of the path when no word matches.
	search := func(q string) []string {
		t.Helper()
		var res stores.SearchResult
		e.call("GET", "/api/memory_stores/release-policy/memories/search?"+q, nil).ok(t, 200, &res)
		var out []string
		for _, h := range res.Memories {
			out = append(out, h.Path)
		}
		return out
	}
	if got := search("query=" + url.QueryEscape("bump tag")); len(got) != 7 {
		t.Fatalf("content search: %v", got)
	}
	// "versioning" stems to "version", also in every content ("versions"),
	// but the path weighs most.
	if got := search("query=versioning"); len(got) != 7 || got[0] != "/releases/versioning.md" {
		t.Fatalf("path word search: %v", got)
	}
	if got := search("query=checklists"); len(got) != 4 {
		t.Fatalf("folder word search: %v", got)
	}
	if got := search("query=tagging&path_prefix=/releases/checklists/"); len(got) != 4 {
		t.Fatalf("search in a folder: %v", got)
	}
	if got := search("query=readm"); len(got) != 1 || got[0] != "/readme.md" {
		t.Fatalf("substring fallback: %v", got)
	}
	var res stores.SearchResult
	e.call("GET", "/api/memory_stores/release-policy/memories/search?query=releases&limit=3", nil).ok(t, 200, &res)
	if len(res.Memories) != 3 || res.NextCursor == nil {
		t.Fatalf("search page: %d %v", len(res.Memories), res.NextCursor)
	}
	e.call("GET", "/api/memory_stores/release-policy/memories/search?query=releases&limit=3&cursor="+url.QueryEscape(*res.NextCursor), nil).ok(t, 200, &res)
	if len(res.Memories) != 3 {
		t.Fatalf("search page 2: %d", len(res.Memories))
	}
	e.call("GET", "/api/memory_stores/release-policy/memories/search", nil).fails(t, 400, "invalid_request")
	var st stores.Store
	e.call("GET", "/api/memory_stores/release-policy", nil).ok(t, 200, &st)
	checkFolders(t, e, st.ID)
	if strings.Contains(e.call("GET", "/api/memory_stores/release-policy/memories/search?query=bump", nil).raw, `"content"`) {
		t.Fatal("search results carry content")
	}
}

func TestConcurrentUpdatesWithStaleHashes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createStore("Team notes", nil)
	m := e.createMemory("team-notes", "/oncall.md", "Who is on call.", "Alice is on call.")
	const writers = 8
	var wg sync.WaitGroup
	results := make([]resp, writers)
	start := make(chan struct{})
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			results[i] = e.call("POST", "/api/memory_stores/team-notes/memories/"+m.ID.String(),
				map[string]any{"content": fmt.Sprintf("Writer %d is on call.", i), "content_sha256": m.ContentSHA256})
		}(i)
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, r := range results {
		switch {
		case r.status == 200:
			if winner >= 0 {
				t.Fatalf("two writers won with the same hash: %d and %d", winner, i)
			}
			winner = i
		case r.status == 409 && r.err.Code == "content_sha256_mismatch":
		default:
			t.Fatalf("writer %d: %d %s", i, r.status, r.raw)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	var got stores.Memory
	e.call("GET", "/api/memory_stores/team-notes/memories/"+m.ID.String(), nil).ok(t, 200, &got)
	if got.Content != fmt.Sprintf("Writer %d is on call.", winner) {
		t.Fatalf("final content %q, winner %d", got.Content, winner)
	}
	var page stores.VersionPage
	e.call("GET", "/api/memory_stores/team-notes/memory_versions?memory_id="+m.ID.String(), nil).ok(t, 200, &page)
	if len(page.Versions) != 2 {
		t.Fatalf("versions after the race: %d", len(page.Versions))
	}
	var st stores.Store
	e.call("GET", "/api/memory_stores/team-notes", nil).ok(t, 200, &st)
	if st.Revision != 2 || st.TotalBytes != int64(len(got.Content)) || st.MemoryCount != 1 {
		t.Fatalf("store after the race: %+v", st)
	}
	// A loser rereads and retries with the new hash.
	e.call("POST", "/api/memory_stores/team-notes/memories/"+m.ID.String(),
		map[string]any{"content": "Bob is on call.", "content_sha256": got.ContentSHA256}).ok(t, 200, &got)
	if got.Content != "Bob is on call." {
		t.Fatalf("retry: %q", got.Content)
	}
}

func TestStoreHoldsAtMostTenThousandMemories(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.createStore("Big", nil)
	seed(t, e, st.ID, stores.MaxMemories, 40)
	var got stores.Store
	e.call("GET", "/api/memory_stores/big", nil).ok(t, 200, &got)
	if got.MemoryCount != stores.MaxMemories {
		t.Fatalf("seeded count %d", got.MemoryCount)
	}
	e.call("POST", "/api/memory_stores/big/memories", map[string]string{"path": "/one-more.md", "summary": "S.", "content": "C."}).fails(t, 409, "memory_limit_reached")
	var l stores.Listing
	e.call("GET", "/api/memory_stores/big/memories?path_prefix=/topic-00/sub-0/&limit=1", nil).ok(t, 200, &l)
	if len(l.Entries) != 1 || l.Entries[0].Type != "memory" {
		t.Fatalf("listing: %+v", l.Entries)
	}
	if r := e.call("DELETE", "/api/memory_stores/big/memories/"+l.Entries[0].MemoryID.String(), nil); r.status != 204 {
		t.Fatalf("delete: %s", r.raw)
	}
	e.createMemory("big", "/one-more.md", "S.", "C.")
	// The deleted memory cannot come back while the store is full.
	var page stores.VersionPage
	e.call("GET", "/api/memory_stores/big/memory_versions?memory_id="+l.Entries[0].MemoryID.String(), nil).ok(t, 200, &page)
	e.call("POST", "/api/memory_stores/big/memory_versions/"+page.Versions[len(page.Versions)-1].ID.String()+"/restore", nil).fails(t, 409, "memory_limit_reached")
	checkFolders(t, e, st.ID)
}

// versionJSON decodes a version as a map, to see which keys it carries.
func versionJSON(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
