package rag_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/objectstore"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
)

// env is one box on a fresh database: the rag service with its job client
// running, the /api routes on a test server, and the scripted provider.
type env struct {
	t      testing.TB
	ctx    context.Context
	pool   *pgxpool.Pool
	prov   *providertest.Server
	store  *objectstore.FS
	svc    *rag.Service
	client *jobs.Client
	srv    *httptest.Server
	key    string
	logs   *capture
	models *provider.Registry
}

type option func(*envOptions)

type envOptions struct {
	cfg       rag.Config
	noWorkers bool
	pool      *pgxpool.Pool
	prov      *providertest.Server
	store     *objectstore.FS
	scopes    []string
}

// withScopes gives the test key these scopes only.
func withScopes(scopes ...string) option { return func(o *envOptions) { o.scopes = scopes } }

// withConfig changes the service's config.
func withConfig(fn func(*rag.Config)) option { return func(o *envOptions) { fn(&o.cfg) } }

// noWorkers does not start the job client: uploads stay queued.
func noWorkers() option { return func(o *envOptions) { o.noWorkers = true } }

// sharing makes a second box on another box's database, provider and store.
func sharing(other *env) option {
	return func(o *envOptions) { o.pool, o.prov, o.store = other.pool, other.prov, other.store }
}

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	o := envOptions{cfg: rag.Config{IngestMaxAttempts: 3, RetryBackoff: func(int) time.Duration { return 20 * time.Millisecond }}}
	for _, fn := range opts {
		fn(&o)
	}
	e := &env{t: t, ctx: context.Background(), pool: o.pool, prov: o.prov, store: o.store}
	if e.pool == nil {
		e.pool = pgtest.Pool(t)
	}
	if e.prov == nil {
		e.prov = providertest.New(t)
	}
	if e.store == nil {
		st, err := objectstore.NewFS(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		e.store = st
	}
	e.logs = &capture{}
	log := slog.New(tee{pgtest.Logger(t).Handler(), e.logs})
	e.models = provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: e.prov.URL()}}, nil)
	cfg := o.cfg
	cfg.Pool, cfg.Models, cfg.Store, cfg.Logger = e.pool, e.models, e.store, log
	svc, err := rag.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	reg := jobs.NewRegistry()
	svc.AddWorkers(reg)
	e.client, err = jobs.NewClient(e.pool, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := svc.Start(ctx, e.client); err != nil {
		t.Fatal(err)
	}
	if !o.noWorkers {
		if err := e.client.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		stop, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		if !o.noWorkers {
			_ = e.client.StopAndCancel(stop)
		}
		cancel()
	})
	keys := auth.NewStore(e.pool)
	scopes := o.scopes
	if scopes == nil {
		scopes = []string{auth.ScopeRAGRead, auth.ScopeRAGWrite}
	}
	secret, _, err := keys.Create(e.ctx, fmt.Sprintf("rag-test-%p", e), scopes)
	if err != nil {
		t.Fatal(err)
	}
	e.key = secret
	apiSrv := api.New(api.Config{Pool: e.pool, Keys: keys, Logger: log})
	svc.Register(apiSrv)
	e.srv = httptest.NewServer(apiSrv)
	t.Cleanup(e.srv.Close)
	return e
}

// envelope is the API's answer shape.
type envelope struct {
	Data  json.RawMessage `json:"data"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	status int
}

func (v envelope) code() string {
	if v.Error == nil {
		return ""
	}
	return v.Error.Code
}

// call sends a JSON request (body nil for none) and decodes the envelope.
func (e *env) call(method, path string, body any) envelope {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+e.key)
	return e.send(req)
}

func (e *env) send(req *http.Request) envelope {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v envelope
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		e.t.Fatalf("%s %s: %d, not an envelope: %.200s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	v.status = resp.StatusCode
	return v
}

// must checks the status and decodes data into out.
func (e *env) must(v envelope, status int, out any) {
	e.t.Helper()
	if v.status != status {
		e.t.Fatalf("status %d (error %+v), want %d", v.status, v.Error, status)
	}
	if out != nil {
		if err := json.Unmarshal(v.Data, out); err != nil {
			e.t.Fatal(err)
		}
	}
}

// upload posts a multipart form: fields in order, the file as "file".
func (e *env) upload(collection, filename string, content []byte, metadata string) envelope {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if metadata != "" {
		mw.WriteField("metadata", metadata)
	}
	fw, _ := mw.CreateFormFile("file", filename)
	fw.Write(content)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/rag/collections/"+collection+"/documents", &buf)
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return e.send(req)
}

func (e *env) createCollection(name string) {
	e.t.Helper()
	e.must(e.call("POST", "/api/rag/collections", map[string]any{"name": name}), http.StatusCreated, nil)
}

func (e *env) ingest(collection, id string, chunks ...rag.Chunk) rag.Document {
	e.t.Helper()
	var d rag.Document
	e.must(e.call("POST", "/api/rag/ingest", rag.IngestRequest{ID: id, Collection: collection, Chunks: chunks}), http.StatusOK, &d)
	return d
}

func (e *env) retrieve(req rag.RetrieveRequest) []rag.Hit {
	e.t.Helper()
	var hits []rag.Hit
	e.must(e.call("POST", "/api/rag/retrieve", req), http.StatusOK, &hits)
	return hits
}

func (e *env) document(id string) rag.Document {
	e.t.Helper()
	var d rag.Document
	e.must(e.call("GET", "/api/rag/documents/"+id, nil), http.StatusOK, &d)
	return d
}

// waitDocument polls until the document's status is one of want.
func (e *env) waitDocument(id string, want ...string) rag.Document {
	e.t.Helper()
	var d rag.Document
	waitFor(e.t, 20*time.Second, func() bool {
		d = e.document(id)
		for _, w := range want {
			if d.Status == w {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("document %s is %s (error %+v), want %v", id, d.Status, d.Error, want)
	})
	return d
}

func (e *env) job(id int64) rag.Job {
	e.t.Helper()
	var j rag.Job
	e.must(e.call("GET", fmt.Sprintf("/api/rag/jobs/%d", id), nil), http.StatusOK, &j)
	return j
}

func (e *env) waitJob(id int64, state string) rag.Job {
	e.t.Helper()
	var j rag.Job
	waitFor(e.t, 20*time.Second, func() bool { j = e.job(id); return j.State == state },
		func() string { return fmt.Sprintf("job %d is %s, want %s", id, j.State, state) })
	return j
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, cond func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, why())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func chunks(texts ...string) []rag.Chunk {
	out := make([]rag.Chunk, len(texts))
	for i, s := range texts {
		out[i] = rag.Chunk{Content: s}
	}
	return out
}

func contents(hits []rag.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Content
	}
	return out
}

// capture keeps every log line, to check that no content is logged.
type capture struct {
	mu    sync.Mutex
	lines []string
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	c.mu.Lock()
	c.lines = append(c.lines, b.String())
	c.mu.Unlock()
	return nil
}
func (c *capture) WithAttrs(as []slog.Attr) slog.Handler { return &attrCapture{c, as} }
func (c *capture) WithGroup(string) slog.Handler         { return c }

func (c *capture) contains(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

type attrCapture struct {
	c  *capture
	as []slog.Attr
}

func (a *attrCapture) Enabled(context.Context, slog.Level) bool { return true }
func (a *attrCapture) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(a.as...)
	return a.c.Handle(ctx, r)
}
func (a *attrCapture) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrCapture{a.c, append(append([]slog.Attr(nil), a.as...), as...)}
}
func (a *attrCapture) WithGroup(string) slog.Handler { return a }

// tee sends records to two handlers.
type tee struct{ a, b slog.Handler }

func (t tee) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (t tee) Handle(ctx context.Context, r slog.Record) error {
	_ = t.a.Handle(ctx, r.Clone())
	return t.b.Handle(ctx, r)
}
func (t tee) WithAttrs(as []slog.Attr) slog.Handler { return tee{t.a.WithAttrs(as), t.b.WithAttrs(as)} }
func (t tee) WithGroup(g string) slog.Handler       { return tee{t.a.WithGroup(g), t.b.WithGroup(g)} }

func itoa(n int64) string { return fmt.Sprint(n) }

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
