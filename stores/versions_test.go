package stores_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/stackbone/box/stores"
)

func TestHistoryRestoreAndRedact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createStore("Release policy", nil)
	base := "/api/memory_stores/release-policy"
	const secret = "The deploy token is sk-live-0123456789."
	m := e.createMemory("release-policy", "/deploy.md", "How to deploy.", "Run make deploy.")
	var v2, v3 stores.Memory
	e.call("POST", base+"/memories/"+m.ID.String(), map[string]any{"content": "Run make deploy. " + secret, "content_sha256": m.ContentSHA256}).ok(t, 200, &v2)
	e.call("POST", base+"/memories/"+m.ID.String(), map[string]any{"path": "/ops/deploy.md"}).ok(t, 200, &v3)

	// Newest first, without content, with who wrote each.
	var page stores.VersionPage
	r := e.call("GET", base+"/memory_versions?memory_id="+m.ID.String(), nil)
	r.ok(t, 200, &page)
	if len(page.Versions) != 3 || page.NextCursor != nil {
		t.Fatalf("history: %+v", page)
	}
	ops := []string{page.Versions[0].Operation, page.Versions[1].Operation, page.Versions[2].Operation}
	if strings.Join(ops, ",") != "renamed,updated,created" {
		t.Fatalf("operations %v", ops)
	}
	for _, v := range page.Versions {
		if v.AuthorKind != "api" || v.AuthorID != "key:all" || v.MemoryID != m.ID || v.Redacted || v.Rationale != nil {
			t.Fatalf("version: %+v", v)
		}
	}
	if page.Versions[0].ID != v3.HeadVersionID || page.Versions[2].ID != m.HeadVersionID {
		t.Fatal("version ids do not match the memory's heads")
	}
	if strings.Contains(r.raw, `"content"`) || strings.Contains(r.raw, "sk-live") {
		t.Fatalf("history carries content: %s", r.raw)
	}
	// Cursors.
	e.call("GET", base+"/memory_versions?limit=2", nil).ok(t, 200, &page)
	if len(page.Versions) != 2 || page.NextCursor == nil {
		t.Fatalf("page 1: %+v", page)
	}
	e.call("GET", base+"/memory_versions?limit=2&cursor="+*page.NextCursor, nil).ok(t, 200, &page)
	if len(page.Versions) != 1 || page.NextCursor != nil || page.Versions[0].Operation != "created" {
		t.Fatalf("page 2: %+v", page)
	}
	e.call("GET", base+"/memory_versions?limit=101", nil).fails(t, 400, "invalid_request")
	e.call("GET", base+"/memory_versions?memory_id="+uuid.NewString(), nil).fails(t, 404, "not_found")
	e.call("GET", base+"/memory_versions?memory_id=nope", nil).fails(t, 404, "not_found")

	// One version with its content.
	var d stores.VersionDetail
	e.call("GET", base+"/memory_versions/"+m.HeadVersionID.String(), nil).ok(t, 200, &d)
	if d.Content == nil || *d.Content != "Run make deploy." || d.Path != "/deploy.md" {
		t.Fatalf("version detail: %+v", d)
	}
	e.call("GET", base+"/memory_versions/"+uuid.NewString(), nil).fails(t, 404, "not_found")

	// The current version cannot be redacted; write a clean one first.
	e.call("POST", base+"/memory_versions/"+v3.HeadVersionID.String()+"/redact", nil).fails(t, 409, "memory_version_current")
	var restored stores.Memory
	e.call("POST", base+"/memory_versions/"+m.HeadVersionID.String()+"/restore", nil).ok(t, 200, &restored)
	if restored.ID != m.ID || restored.Content != "Run make deploy." || restored.Path != "/deploy.md" || restored.HeadVersionID == v3.HeadVersionID {
		t.Fatalf("restored: %+v", restored)
	}
	var head stores.VersionDetail
	e.call("GET", base+"/memory_versions/"+restored.HeadVersionID.String(), nil).ok(t, 200, &head)
	if head.Operation != "restored" || head.RestoredFrom == nil || *head.RestoredFrom != m.HeadVersionID {
		t.Fatalf("restore version: %+v", head)
	}
	// Now both versions holding the secret can go.
	for _, id := range []uuid.UUID{v2.HeadVersionID, v3.HeadVersionID} {
		if r := e.call("POST", base+"/memory_versions/"+id.String()+"/redact", nil); r.status != 204 {
			t.Fatalf("redact: %d %s", r.status, r.raw)
		}
	}
	if r := e.call("POST", base+"/memory_versions/"+v2.HeadVersionID.String()+"/redact", nil); r.status != 204 {
		t.Fatalf("redact twice: %d %s", r.status, r.raw)
	}
	e.call("GET", base+"/memory_versions/"+v2.HeadVersionID.String(), nil).ok(t, 200, &d)
	if d.Content != nil || !d.Redacted || d.RedactedAt == nil || d.RedactedBy == nil || *d.RedactedBy != "key:all" ||
		d.AuthorKind != "api" || d.AuthorID != "key:all" || d.ContentSHA256 != nil || d.CreatedAt.IsZero() {
		t.Fatalf("redacted version: %+v", d)
	}
	r = e.call("POST", base+"/memory_versions/"+v2.HeadVersionID.String()+"/restore", nil)
	r.fails(t, 400, "invalid_request")
	if !strings.Contains(r.err.Message, "memory_version_id") {
		t.Fatalf("restore redacted message: %s", r.err.Message)
	}
	// The secret is nowhere in the database's rows of this store.
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT
		(SELECT count(*) FROM stackbone_platform.memory_versions v WHERE v.content LIKE '%sk-live%' OR v.summary LIKE '%sk-live%') +
		(SELECT count(*) FROM stackbone_platform.memories m WHERE m.content LIKE '%sk-live%' OR m.search @@ to_tsquery('simple', 'sk')) `).Scan(&n); err != nil || n != 0 {
		t.Fatalf("secret left in %d rows (%v)", n, err)
	}
}

func TestRestoreRecreatesADeletedMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createStore("Team notes", nil)
	base := "/api/memory_stores/team-notes"
	m := e.createMemory("team-notes", "/oncall.md", "Who is on call.", "Alice is on call this week.")
	if r := e.call("DELETE", base+"/memories/"+m.ID.String(), nil); r.status != 204 {
		t.Fatalf("delete: %s", r.raw)
	}
	var page stores.VersionPage
	e.call("GET", base+"/memory_versions?memory_id="+m.ID.String(), nil).ok(t, 200, &page)
	if len(page.Versions) != 2 || page.Versions[0].Operation != "deleted" || page.Versions[0].ContentSHA256 != nil {
		t.Fatalf("history after delete: %+v", page.Versions)
	}
	// The deletion itself has nothing to restore.
	e.call("POST", base+"/memory_versions/"+page.Versions[0].ID.String()+"/restore", nil).fails(t, 400, "invalid_request")
	// A deleted memory's versions can all be redacted: none is current.
	var st stores.Store
	e.call("GET", base, nil).ok(t, 200, &st)
	if st.MemoryCount != 0 || st.TotalBytes != 0 {
		t.Fatalf("store after delete: %+v", st)
	}

	var back stores.Memory
	e.call("POST", base+"/memory_versions/"+m.HeadVersionID.String()+"/restore", nil).ok(t, 200, &back)
	if back.ID != m.ID || back.Status != "active" || back.Path != "/oncall.md" || back.Content != m.Content || back.ContentSHA256 != m.ContentSHA256 {
		t.Fatalf("recreated: %+v", back)
	}
	e.call("GET", base+"/memory?path=/oncall.md", nil).ok(t, 200, nil)
	e.call("GET", base, nil).ok(t, 200, &st)
	if st.MemoryCount != 1 || st.TotalBytes != int64(len(m.Content)) {
		t.Fatalf("store after restore: %+v", st)
	}
	e.call("GET", base+"/memory_versions?memory_id="+m.ID.String(), nil).ok(t, 200, &page)
	if len(page.Versions) != 3 || page.Versions[0].Operation != "restored" {
		t.Fatalf("history after restore: %+v", page.Versions)
	}

	// When another memory took the path meanwhile, restore refuses.
	if r := e.call("DELETE", base+"/memories/"+m.ID.String(), nil); r.status != 204 {
		t.Fatalf("delete: %s", r.raw)
	}
	e.createMemory("team-notes", "/oncall.md", "New on-call note.", "Bob is on call.")
	e.call("POST", base+"/memory_versions/"+m.HeadVersionID.String()+"/restore", nil).fails(t, 409, "memory_path_exists")
	checkFolders(t, e, st.ID)

	// An archived store is read-only: no restore; redaction still works.
	if r := e.call("POST", base+"/archive", nil); r.status != 204 {
		t.Fatalf("archive: %s", r.raw)
	}
	e.call("POST", base+"/memory_versions/"+m.HeadVersionID.String()+"/restore", nil).fails(t, 400, "invalid_request")
	if r := e.call("POST", base+"/memory_versions/"+m.HeadVersionID.String()+"/redact", nil); r.status != 204 {
		t.Fatalf("redact in an archived store: %d %s", r.status, r.raw)
	}
	// Versions belong to their store.
	other := e.createStore("Other", nil)
	e.call("GET", "/api/memory_stores/"+other.ID.String()+"/memory_versions/"+m.HeadVersionID.String(), nil).fails(t, 404, "not_found")
	e.call("POST", "/api/memory_stores/"+other.ID.String()+"/memory_versions/"+m.HeadVersionID.String()+"/redact", nil).fails(t, 404, "not_found")
}

func TestRetentionKeepsRecentVersionsOfLiveMemories(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.createStore("Notes", nil)
	base := "/api/memory_stores/notes"
	busy := e.createMemory("notes", "/busy.md", "Edited often.", "v0")
	for i := 1; i <= 12; i++ {
		var m stores.Memory
		e.call("POST", base+"/memories/"+busy.ID.String(), map[string]any{"content": "v" + string(rune('a'+i))}).ok(t, 200, &m)
	}
	quiet := e.createMemory("notes", "/quiet.md", "Edited twice.", "q0")
	e.call("POST", base+"/memories/"+quiet.ID.String(), map[string]any{"content": "q1"}).ok(t, 200, nil)
	gone := e.createMemory("notes", "/gone.md", "Deleted long ago.", "g0")
	e.call("DELETE", base+"/memories/"+gone.ID.String(), nil)
	recent := e.createMemory("notes", "/recent.md", "Deleted lately.", "r0")
	e.call("DELETE", base+"/memories/"+recent.ID.String(), nil)
	// Everything but the recent deletion is 40 days old.
	if _, err := e.pool.Exec(e.ctx, `UPDATE stackbone_platform.memory_versions SET created_at = now() - interval '40 days'
		WHERE store_id = $1 AND memory_id <> $2`, st.ID, recent.ID); err != nil {
		t.Fatal(err)
	}
	n, err := e.svc.Prune(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3+2 { // busy: 13 versions, 10 kept; gone: both versions
		t.Fatalf("pruned %d versions", n)
	}
	count := func(id uuid.UUID) int {
		var c int
		if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.memory_versions WHERE memory_id = $1`, id).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := count(busy.ID); c != 10 {
		t.Fatalf("busy memory keeps %d versions", c)
	}
	if c := count(quiet.ID); c != 2 {
		t.Fatalf("quiet memory keeps %d versions", c)
	}
	if c := count(recent.ID); c != 2 {
		t.Fatalf("recent deletion keeps %d versions", c)
	}
	var rows int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.memories WHERE id = $1`, gone.ID).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the old deleted memory is still there: %d %v", rows, err)
	}
	var m stores.Memory
	e.call("GET", base+"/memories/"+busy.ID.String(), nil).ok(t, 200, &m)
	var d stores.VersionDetail
	e.call("GET", base+"/memory_versions/"+m.HeadVersionID.String(), nil).ok(t, 200, &d)
	if n2, _ := e.svc.Prune(e.ctx); n2 != 0 {
		t.Fatalf("a second prune deleted %d", n2)
	}
}
