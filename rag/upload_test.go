package rag_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/objectstore"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/runs"
)

const policyMD = `# Returns

You can return any item within 30 days of delivery for a full refund.

## Refunds

Refunds reach your card within 5 business days after we receive the parcel.
`

func TestUploadIsIngestedInTheBackground(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createCollection("help-center")
	var res rag.UploadResult
	e.must(e.upload("help-center", "returns.md", []byte(policyMD), `{"team":"support"}`), http.StatusAccepted, &res)
	d := res.Document
	if d.Status != "queued" || d.JobID == nil || res.Job == nil || res.Job.ID != *d.JobID || d.Source != "upload" ||
		d.Filename != "returns.md" || d.ContentType != "text/markdown" || *d.SizeBytes != int64(len(policyMD)) || len(d.SHA256) != 64 {
		t.Fatalf("upload answer = %+v job %+v", d, res.Job)
	}
	d = e.waitDocument(d.ID, "succeeded")
	if d.Chunks < 1 || d.RunID == nil || d.Attempts != 1 || d.Error != nil {
		t.Fatalf("ingested document = %+v", d)
	}
	// The document links to its run.
	run, err := runs.NewStore(e.pool).Get(e.ctx, mustUUID(t, *d.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if run.Kind != rag.KindIngest || run.Status != "succeeded" || run.Model != "openai/text-embedding-3-small" || run.InputTokens == 0 ||
		run.Metadata["documentId"] != d.ID || run.Metadata["collection"] != "help-center" {
		t.Fatalf("run = %+v", run)
	}
	if j := e.waitJob(*d.JobID, "completed"); j.DocumentStatus != "succeeded" || j.Collection != "help-center" {
		t.Fatalf("job = %+v", j)
	}
	hits := e.retrieve(rag.RetrieveRequest{Text: "how many days do I have to return an item", Namespace: "help-center", TopK: 1})
	if len(hits) != 1 || !strings.Contains(hits[0].Content, "30 days") || hits[0].Metadata["team"] != "support" || hits[0].Metadata["source"] != "returns.md" {
		t.Fatalf("hits = %+v", hits)
	}
	// The original is kept and downloadable.
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/rag/originals/"+d.ID, nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != policyMD || !strings.Contains(resp.Header.Get("Content-Disposition"), "returns.md") {
		t.Fatalf("download: %d %q", resp.StatusCode, body)
	}
	var docs []rag.Document
	e.must(e.call("GET", "/api/rag/collections/help-center/documents", nil), http.StatusOK, &docs)
	if len(docs) != 1 || docs[0].ID != d.ID || docs[0].Status != "succeeded" {
		t.Fatalf("documents = %+v", docs)
	}
	if e.logs.contains("30 days") || e.logs.contains("business days") {
		t.Fatal("the logs hold document text")
	}
}

func TestPDFUploadIsParsedToText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pdf, err := os.ReadFile("testdata/returns.pdf")
	if err != nil {
		t.Fatal(err)
	}
	var res rag.UploadResult
	e.must(e.upload("default", "Returns Policy.pdf", pdf, ""), http.StatusAccepted, &res)
	d := e.waitDocument(res.Document.ID, "succeeded")
	if d.ContentType != "application/pdf" || d.Filename != "Returns_Policy.pdf" || d.Chunks != 2 {
		t.Fatalf("document = %+v", d)
	}
	rows, err := e.pool.Query(e.ctx, `SELECT content, metadata->>'page' FROM stackbone_platform.rag_chunks WHERE document_id = $1 ORDER BY chunk_index`, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var c, p string
		rows.Scan(&c, &p)
		got = append(got, p+": "+c)
	}
	want := []string{
		"1: Acme Returns Policy\nYou can return any item within 30 days of delivery for a full refund.\nRefunds reach your card within 5 business days after we receive the parcel.",
		"2: Shipping\nStandard shipping to Germany takes 2 to 4 working days.",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("chunks = %q\nwant %q", got, want)
	}
}

func TestUploadLimitsAndTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name, file string
		body       []byte
		status     int
		code       string
	}{
		{"too large", "big.txt", bytes.Repeat([]byte("a"), rag.MaxUploadBytes+1), 413, "rag_file_too_large"},
		{"word file", "policy.docx", []byte("PK..."), 415, "rag_unsupported_type"},
		{"no extension", "README", []byte("text"), 415, "rag_unsupported_type"},
		{"text named pdf", "fake.pdf", []byte("hello"), 415, "rag_unsupported_type"},
		{"binary named txt", "bin.txt", []byte{0xff, 0xfe, 0, 1, 2}, 415, "rag_unsupported_type"},
		{"empty", "empty.txt", nil, 400, "rag_invalid_request"},
	} {
		v := e.upload("default", tc.file, tc.body, "")
		if v.status != tc.status || v.code() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, v.status, v.code(), tc.status, tc.code)
		}
	}
	if v := e.upload("default", "a.txt", []byte("x"), `["not an object"]`); v.code() != "rag_invalid_request" {
		t.Errorf("metadata array: %s", v.code())
	}
	if v := e.upload("nope", "a.txt", []byte("x"), ""); v.code() != "rag_collection_not_found" {
		t.Errorf("unknown collection: %s", v.code())
	}
	if v := e.call("POST", "/api/rag/collections/default/documents", map[string]any{"file": "x"}); v.code() != "rag_invalid_request" {
		t.Errorf("JSON instead of multipart: %s", v.code())
	}
	// Nothing was kept of any refused upload.
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_documents`); n != 0 {
		t.Fatalf("%d documents stored", n)
	}
	if entries, _ := os.ReadDir(strings.TrimPrefix(e.store.Describe(), "fs:")); len(entries) != 0 {
		t.Fatalf("object store holds %d entries", len(entries))
	}
}

func TestJobFailureThenRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.prov.FailEmbeddings(http.StatusServiceUnavailable, "overloaded")
	var res rag.UploadResult
	e.must(e.upload("default", "returns.md", []byte(policyMD), ""), http.StatusAccepted, &res)
	id := res.Document.ID
	d := e.waitDocument(id, "failed")
	if d.Error == nil || d.Error.Code != "rag_embedding_failed" || !strings.Contains(d.Error.Message, "503") || d.Attempts != 3 {
		t.Fatalf("failed document = %+v (error %+v)", d, d.Error)
	}
	j := e.waitJob(*d.JobID, "discarded")
	if j.Attempt != 3 || len(j.Errors) != 3 {
		t.Fatalf("job = %+v", j)
	}
	failed, err := runs.NewStore(e.pool).List(e.ctx, runs.Filter{Kind: rag.KindIngest, Status: "failed"})
	if err != nil || len(failed) != 3 || failed[0].ErrorCode != "rag_embedding_failed" {
		t.Fatalf("failed runs = %+v, %v", failed, err)
	}
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_chunks WHERE document_id = $1`, id); n != 0 {
		t.Fatalf("%d chunks stored by a failed job", n)
	}
	// The provider recovers; an operator retries.
	e.prov.FailEmbeddings(0, "")
	var rj rag.Job
	e.must(e.call("POST", "/api/rag/jobs/"+itoa(*d.JobID)+"/retry", nil), http.StatusOK, &rj)
	// As the retry left it: a worker taking it up at once must not make it
	// read as a job that was still running (which a retry leaves alone).
	if rj.State != "available" {
		t.Fatalf("retried job = %+v", rj)
	}
	d = e.waitDocument(id, "succeeded")
	if d.Error != nil || d.Chunks == 0 {
		t.Fatalf("after retry: %+v", d)
	}
	ok, _ := runs.NewStore(e.pool).List(e.ctx, runs.Filter{Kind: rag.KindIngest, Status: "succeeded"})
	if len(ok) != 1 || d.RunID == nil || ok[0].ID.String() != *d.RunID {
		t.Fatalf("succeeded runs = %+v, document run %v", ok, d.RunID)
	}
	e.waitJob(*d.JobID, "completed")
	var list []rag.Job
	e.must(e.call("GET", "/api/rag/jobs?state=completed", nil), http.StatusOK, &list)
	if len(list) != 1 || list[0].ID != *d.JobID {
		t.Fatalf("jobs = %+v", list)
	}
	if v := e.call("POST", "/api/rag/jobs/999999/retry", nil); v.code() != "rag_job_not_found" {
		t.Fatalf("unknown job: %s", v.code())
	}
}

func TestUnparseableFileFailsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var res rag.UploadResult
	e.must(e.upload("default", "broken.pdf", []byte("%PDF-1.4\nthis is not a real pdf\n%%EOF"), ""), http.StatusAccepted, &res)
	d := e.waitDocument(res.Document.ID, "failed")
	if d.Error == nil || d.Error.Code != "rag_parse_failed" || d.Attempts != 1 {
		t.Fatalf("document = %+v (error %+v)", d, d.Error)
	}
	if j := e.waitJob(*d.JobID, "cancelled"); j.Attempt != 1 {
		t.Fatalf("a permanent failure was retried: %+v", j)
	}
	if n := len(e.prov.EmbeddingsRequests()); n != 0 {
		t.Fatalf("%d embeddings requests for an unparseable file", n)
	}
}

func TestCancelARunningJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.prov.ScriptEmbeddings(providertest.EmbedReply{Gate: gate})
	var res rag.UploadResult
	e.must(e.upload("default", "returns.md", []byte(policyMD), ""), http.StatusAccepted, &res)
	id, jobID := res.Document.ID, *res.Document.JobID
	e.waitDocument(id, "running")
	waitFor(t, 10*time.Second, func() bool { return len(e.prov.EmbeddingsRequests()) == 1 }, func() string { return "no embeddings request" })
	var j rag.Job
	e.must(e.call("POST", "/api/rag/jobs/"+itoa(jobID)+"/cancel", nil), http.StatusOK, &j)
	d := e.waitDocument(id, "cancelled")
	if d.Error == nil || d.Error.Code != "rag_cancelled" {
		t.Fatalf("document = %+v", d)
	}
	e.waitJob(jobID, "cancelled")
	close(gate)
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_chunks WHERE document_id = $1`, id); n != 0 {
		t.Fatalf("%d chunks stored by a cancelled job", n)
	}
	cancelled, _ := runs.NewStore(e.pool).List(e.ctx, runs.Filter{Kind: rag.KindIngest, Status: "cancelled"})
	if len(cancelled) != 1 {
		t.Fatalf("cancelled runs = %+v", cancelled)
	}
	// A cancelled job can be retried.
	e.must(e.call("POST", "/api/rag/jobs/"+itoa(jobID)+"/retry", nil), http.StatusOK, nil)
	e.waitDocument(id, "succeeded")
}

func TestCancelAWaitingJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	var res rag.UploadResult
	e.must(e.upload("default", "returns.md", []byte(policyMD), ""), http.StatusAccepted, &res)
	var j rag.Job
	e.must(e.call("POST", "/api/rag/jobs/"+itoa(*res.Document.JobID)+"/cancel", nil), http.StatusOK, &j)
	if j.State != "cancelled" || j.DocumentStatus != "cancelled" {
		t.Fatalf("job = %+v", j)
	}
	if d := e.document(res.Document.ID); d.Status != "cancelled" {
		t.Fatalf("document = %+v", d)
	}
}

// TestInterruptedIngestConverges stops a box in the middle of an ingest (its
// job's context is cancelled, as on shutdown) and lets another box finish
// it: River retries the job, and the document ends with exactly its chunks.
func TestInterruptedIngestConverges(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	gate := make(chan struct{})
	defer close(gate)
	a.prov.ScriptEmbeddings(providertest.EmbedReply{Gate: gate})
	var res rag.UploadResult
	a.must(a.upload("default", "returns.md", []byte(policyMD), ""), http.StatusAccepted, &res)
	a.waitDocument(res.Document.ID, "running")
	// Stop only once the held embedding request took the gated reply: a
	// stop before it reaches the provider would leave the gate to the
	// next attempt, which would then hang on it.
	waitFor(t, 20*time.Second, func() bool { return len(a.prov.EmbeddingsRequests()) >= 1 },
		func() string { return "the ingest's embedding request never reached the provider" })
	stop, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	if err := a.client.StopAndCancel(stop); err != nil {
		t.Fatal(err)
	}
	b := newEnv(t, sharing(a))
	d := b.waitDocument(res.Document.ID, "succeeded")
	interrupted, _ := runs.NewStore(b.pool).List(b.ctx, runs.Filter{Kind: rag.KindIngest, Status: "failed"})
	if len(interrupted) != 1 || interrupted[0].ErrorCode != "rag_interrupted" {
		t.Fatalf("the interrupted attempt's run = %+v", interrupted)
	}
	if n := b.count(`SELECT count(*) FROM stackbone_platform.rag_chunks WHERE document_id = $1`, d.ID); n != d.Chunks || n == 0 {
		t.Fatalf("%d chunks stored, document says %d", n, d.Chunks)
	}
	if n := b.count(`SELECT count(DISTINCT chunk_index) FROM stackbone_platform.rag_chunks WHERE document_id = $1`, d.ID); n != d.Chunks {
		t.Fatalf("duplicate chunks: %d distinct of %d", n, d.Chunks)
	}
}

func TestDeleteRemovesChunksAndOriginal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var res rag.UploadResult
	e.must(e.upload("default", "returns.md", []byte(policyMD), ""), http.StatusAccepted, &res)
	d := e.waitDocument(res.Document.ID, "succeeded")
	if len(e.retrieve(rag.RetrieveRequest{Text: "return an item within 30 days"})) == 0 {
		t.Fatal("no hit before delete")
	}
	var key string
	e.pool.QueryRow(e.ctx, `SELECT object_key FROM stackbone_platform.rag_documents WHERE id = $1`, d.ID).Scan(&key)
	e.must(e.call("DELETE", "/api/rag/documents/"+d.ID, nil), http.StatusOK, nil)
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_chunks WHERE document_id = $1`, d.ID); n != 0 {
		t.Fatalf("%d chunks left", n)
	}
	if _, _, err := e.store.Get(e.ctx, key); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("original left: %v", err)
	}
	if hits := e.retrieve(rag.RetrieveRequest{Text: "return an item within 30 days"}); len(hits) != 0 {
		t.Fatalf("hits after delete: %v", contents(hits))
	}
	if v := e.call("GET", "/api/rag/documents/"+d.ID, nil); v.code() != "rag_document_not_found" {
		t.Fatalf("get after delete: %s", v.code())
	}
	if v := e.call("DELETE", "/api/rag/documents/"+d.ID, nil); v.code() != "rag_document_not_found" {
		t.Fatalf("delete twice: %s", v.code())
	}
	// Code-ingested documents delete the same way.
	e.ingest("default", "help.acme.test:returns", chunks("crawled page")...)
	e.must(e.call("DELETE", "/api/rag/documents/help.acme.test:returns", nil), http.StatusOK, nil)
	if n := e.count(`SELECT count(*) FROM stackbone_platform.rag_chunks`); n != 0 {
		t.Fatalf("%d chunks left", n)
	}
}

// A PDF bomb fails its document for its content, with the reason, and is
// never tried again (it was a poison job: each rescue took the box down).
func TestPDFBombFailsOnceWithItsReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var res rag.UploadResult
	e.must(e.upload("default", "bomb.pdf", rag.BombPDF(t, 8<<20), ""), http.StatusAccepted, &res)
	d := e.waitDocument(res.Document.ID, "failed")
	if d.Error == nil || d.Error.Code != "rag_parse_failed" || !strings.Contains(d.Error.Message, "inflates to over") || d.Attempts != 1 {
		t.Fatalf("document = %+v (error %+v)", d, d.Error)
	}
	if j := e.waitJob(*d.JobID, "cancelled"); j.Attempt != 1 {
		t.Fatalf("a content failure was retried: %+v", j)
	}
}

// Upload errors carry neither the server's paths nor the OS's text, and a
// box that cannot spool answers 5xx.
func TestUploadStorageFailureIsTheBoxs(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "gone", "spool")
	e := newEnv(t, withConfig(func(c *rag.Config) { c.SpoolDir = missing }))
	v := e.upload("default", "notes.txt", []byte("hello"), "")
	if v.status != http.StatusServiceUnavailable || v.code() != "rag_unavailable" || strings.Contains(v.Error.Message, missing) ||
		strings.Contains(v.Error.Message, "no such file") {
		t.Fatalf("upload with no spool dir: %d %+v", v.status, v.Error)
	}
	if !e.logs.contains("no such file") {
		t.Fatal("the cause was not logged for the operator")
	}
}

// A client killed in the middle of its upload leaves no spool file.
func TestKilledUploadLeavesNoSpoolFile(t *testing.T) {
	t.Parallel()
	spoolDir := t.TempDir()
	e := newEnv(t, withConfig(func(c *rag.Config) { c.SpoolDir = spoolDir }))
	u, _ := url.Parse(e.srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	body := "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n" + strings.Repeat("x", 64<<10)
	fmt.Fprintf(conn, "POST /api/rag/collections/default/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n%s", e.key, 10<<20, body)
	waitFor(t, 10*time.Second, func() bool { m, _ := filepath.Glob(filepath.Join(spoolDir, "*")); return len(m) == 1 },
		func() string { return "the upload never reached its spool file" })
	conn.Close()
	waitFor(t, 10*time.Second, func() bool { m, _ := filepath.Glob(filepath.Join(spoolDir, "*")); return len(m) == 0 },
		func() string { return "the killed upload's spool file stayed" })
}

// A spool file a killed box left is swept while the box runs, not only at
// the next start: an untouched one goes at the next sweep, a live one stays.
func TestSpoolIsSweptWhileTheBoxRuns(t *testing.T) {
	t.Parallel()
	spoolDir := t.TempDir()
	newEnv(t, withConfig(func(c *rag.Config) { c.SpoolDir, c.SpoolSweepEvery = spoolDir, 20*time.Millisecond }))
	old, fresh := filepath.Join(spoolDir, "stackbone-upload-killed"), filepath.Join(spoolDir, "stackbone-upload-live")
	for _, name := range []string{old, fresh} {
		if err := os.WriteFile(name, []byte("part of an upload"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the killed upload's spool file to be swept", 10*time.Second, func() bool {
		_, err := os.Stat(old)
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a live upload's spool file was swept: %v", err)
	}
}
