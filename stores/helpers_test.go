package stores_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/bench/storesbench"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/stores"
)

const testYAML = `
agents:
  support:
    model: openai/agent-model
    instructions: You are the support agent.
  release:
    model: openai/release-model
    instructions: You ship releases.
    memoryStores:
      - {memoryStoreId: release-policy, access: read_only, instructions: "Check release policy before you change a release workflow."}
      - {memoryStoreId: team-notes, access: read_write}
      - {memoryStoreId: other-agents-store}
      - {memoryStoreId: frozen}
`

const (
	allKey  = "all-scopes-key"
	readKey = "read-only-key"
)

// env is one box: a fresh database, the scripted model, the service and
// the API on a test server.
type env struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	model *providertest.Server
	cfg   *config.Config
	reg   *provider.Registry
	svc   *stores.Service
	url   string
}

func newEnv(t *testing.T, tweak ...func(*stores.Config)) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), pool: pgtest.Pool(t), model: providertest.New(t)}
	cfg, err := config.Parse([]byte(testYAML))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Providers = map[string]config.Provider{"openai": {BaseURL: e.model.URL()}}
	e.cfg = cfg
	e.reg = provider.NewRegistry(cfg.Providers, nil)
	log := pgtest.Logger(t)
	sc := stores.Config{Pool: e.pool, Agents: cfg.Agents, Models: e.reg, Logger: log}
	for _, f := range tweak {
		f(&sc)
	}
	e.svc = stores.New(sc)
	if err := e.svc.Sync(e.ctx); err != nil {
		t.Fatal(err)
	}
	keys := auth.NewStore(e.pool)
	if err := keys.Ensure(e.ctx, "all", allKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	if err := keys.Ensure(e.ctx, "reader", readKey, []string{auth.ScopeStoresRead}); err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{Pool: e.pool, Keys: keys, Logger: log})
	e.svc.Register(srv)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type resp struct {
	status int
	data   json.RawMessage
	err    *apiError
	raw    string
}

// call sends a request with the all-scopes key.
func (e *env) call(method, path string, body any) resp {
	e.t.Helper()
	return e.callKey(allKey, method, path, body)
}

func (e *env) callKey(key, method, path string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{status: res.StatusCode, raw: string(raw)}
	if res.StatusCode == http.StatusNoContent {
		return out
	}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *apiError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		e.t.Fatalf("%s %s: not the envelope: %s", method, path, raw)
	}
	out.data, out.err = env.Data, env.Error
	return out
}

// ok asserts the status and decodes data into v (when not nil).
func (r resp) ok(t *testing.T, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if v != nil {
		if err := json.Unmarshal(r.data, v); err != nil {
			t.Fatalf("decode %s: %v", r.data, err)
		}
	}
}

// fails asserts an error status and code.
func (r resp) fails(t *testing.T, status int, code string) {
	t.Helper()
	if r.status != status || r.err == nil || r.err.Code != code {
		t.Fatalf("got %d %s, want %d %s", r.status, r.raw, status, code)
	}
}

func (e *env) createStore(name string, agentID *string) stores.Store {
	e.t.Helper()
	body := map[string]any{"name": name, "description": "About " + name + "."}
	if agentID != nil {
		body["agent_id"] = *agentID
	}
	var st stores.Store
	e.call("POST", "/api/memory_stores", body).ok(e.t, 201, &st)
	return st
}

func (e *env) createMemory(store, path, summary, content string) stores.Memory {
	e.t.Helper()
	var m stores.Memory
	e.call("POST", "/api/memory_stores/"+store+"/memories", map[string]string{"path": path, "summary": summary, "content": content}).ok(e.t, 201, &m)
	return m
}

func ptr[T any](v T) *T { return &v }

// seed writes n memories into the store (see storesbench.Seed).
func seed(t *testing.T, e *env, storeID uuid.UUID, n, size int) {
	t.Helper()
	if err := storesbench.Seed(e.ctx, e.pool, storeID, n, size); err != nil {
		t.Fatal(err)
	}
}

func contextTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// checkFolders recomputes the folder counts of a store from its live
// memories and compares them with the ones the writes kept.
func checkFolders(t *testing.T, e *env, storeID uuid.UUID) {
	t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT path FROM stackbone_platform.memories WHERE store_id = $1 AND status = 'active'`, storeID)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, p := range paths {
		for i := 1; i < len(p); i++ {
			if p[i] == '/' {
				want[p[:i+1]]++
			}
		}
	}
	rows, err = e.pool.Query(e.ctx, `SELECT path, count FROM stackbone_platform.memory_folders WHERE store_id = $1`, storeID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var p string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&p, &n}, func() error { got[p] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("folder counts %v, want %v", got, want)
	}
	var st stores.Store
	var bytes int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(byte_size), 0) FROM stackbone_platform.memories WHERE store_id = $1 AND status = 'active'`, storeID).Scan(&bytes); err != nil {
		t.Fatal(err)
	}
	e.call("GET", "/api/memory_stores/"+storeID.String(), nil).ok(t, 200, &st)
	if st.MemoryCount != len(paths) || st.TotalBytes != bytes {
		t.Fatalf("store counts %d memories %d bytes, want %d and %d", st.MemoryCount, st.TotalBytes, len(paths), bytes)
	}
}

// logTap records what the service logs, to check that no content leaks.
type logTap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logTap) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// tapLogs routes the service's logs to the tap.
func tapLogs(tap *logTap) func(*stores.Config) {
	return func(c *stores.Config) {
		c.Logger = slog.New(slog.NewTextHandler(tap, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// refuteLogged fails when the logs hold any of the texts.
func (l *logTap) refuteLogged(t *testing.T, texts ...string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() == 0 {
		t.Fatal("nothing was logged")
	}
	for _, s := range texts {
		if strings.Contains(l.buf.String(), s) {
			t.Fatalf("the logs hold %q", s)
		}
	}
}
