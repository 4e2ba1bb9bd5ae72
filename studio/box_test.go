package studio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/cdp"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/voice"
)

// The tests run a real box (Postgres, the agent runtime, the API with its
// auth, the wires, the calls routes) with Studio mounted, and drive Studio
// in headless Chromium as an operator would, then check the database or
// the API.

const agentsYAML = `
agents:
  support:
    model: openai/chat
    instructions: You are the support agent.
    memory: {identityKey: customerId, read: true, save: true}
  guarded:
    model: openai/chat
    instructions: You ask before saving.
    memory: {identityKey: customerId, read: false, save: true}
    interruptOn: [memory_save]
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
  release:
    model: openai/chat
    instructions: You ship releases.
    memoryStores:
      - {memoryStoreId: release-policy, access: read_only}
  frontdesk:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
sip:
  addr: 127.0.0.1:0
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes:
          - {number: "*", agent: frontdesk}
    outbound:
      - name: carrier
        proxy: 127.0.0.1:9
`

// adminKey holds every scope.
const adminKey = "studio-admin"

type box struct {
	t     *testing.T
	url   string
	model *providertest.Server
	pool  *pgxpool.Pool
	keys  *auth.Store
	rt    *agent.Runtime
	mem   *memory.Service
	calls *voice.Manager
	sip   *sip.Server
}

// newBox runs a box with agentsYAML; opts change how it is built.
func newBox(t *testing.T, opts ...boxtest.Option) *box {
	t.Helper()
	// The call page pre-fills the dev key, as under `stackbone dev`
	// (TestSaveOffBetweenTwoCalls signs its calls in with it).
	b := boxtest.New(t, agentsYAML, append([]boxtest.Option{boxtest.DevKey(auth.DevKey)}, opts...)...)
	if err := b.Keys.Ensure(t.Context(), "admin", adminKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	return &box{t: t, url: b.URL, model: b.Model, pool: b.Pool, keys: b.Keys, rt: b.Runtime, mem: b.Memory,
		calls: b.Calls, sip: b.Phones}
}

// do sends an API request with key and decodes the envelope's data into
// out; it returns the status and the error code.
func (b *box) do(key, method, path string, body any, out any) (int, string) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, b.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct{ Code string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	if env.Error != nil {
		return resp.StatusCode, env.Error.Code
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			b.t.Fatal(err)
		}
	}
	return resp.StatusCode, ""
}

// count runs a SELECT count(*)-like query.
func (b *box) count(sql string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}

// page is Studio open in a headless Chromium.
type page struct {
	t   *testing.T
	b   *box
	br  *cdp.Browser
	ctx context.Context
}

func (b *box) open(t *testing.T) *page {
	t.Helper()
	return b.openWithMic(t, "")
}

// openWithMic opens Studio in a Chromium whose fake microphone plays wav
// once ("" for none).
func (b *box) openWithMic(t *testing.T, wav string) *page {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed (scripts/test installs it): Studio's browser tests need it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	br, err := cdp.Start(ctx, cdp.Options{UserDataDir: t.TempDir(), FakeAudio: wav, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	p := &page{t: t, b: b, br: br, ctx: ctx}
	if err := br.Navigate(ctx, b.url+"/studio/"); err != nil {
		t.Fatal(err)
	}
	return p
}

// signIn types key into the sign-in form and waits for the console.
func (p *page) signIn(key string) {
	p.t.Helper()
	p.waitFor(`document.getElementById("root").dataset.state === "signin"`, "the sign-in form")
	p.set("#signin-key", key)
	p.js(`document.getElementById("signin").requestSubmit()`)
	p.waitFor(`document.getElementById("root").dataset.state === "ready"`, "the console after sign-in")
}

// go opens a screen by its address (#/sessions...) and waits until it
// rendered.
func (p *page) goTo(hash string) {
	p.t.Helper()
	p.js(`document.getElementById("root").dataset.state = "navigating"; location.hash = ` + strconv.Quote(hash))
	p.waitFor(`document.getElementById("root").dataset.state === "ready"`, "the screen "+hash)
}

// js evaluates expr and decodes its value into out (if any).
func (p *page) js(expr string, out ...any) {
	p.t.Helper()
	var o any
	if len(out) > 0 {
		o = out[0]
	}
	if err := p.br.Eval(p.ctx, expr, o); err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
}

func (p *page) text(selector string) string {
	p.t.Helper()
	var s string
	p.js(`(document.querySelector(`+strconv.Quote(selector)+`) || {}).textContent || ""`, &s)
	return s
}

func (p *page) click(selector string) {
	p.t.Helper()
	p.waitFor(`!!document.querySelector(`+strconv.Quote(selector)+`)`, selector)
	p.js(`document.querySelector(` + strconv.Quote(selector) + `).click()`)
}

// set types value into an input, textarea or select and fires input and
// change, as typing does.
func (p *page) set(selector, value string) {
	p.t.Helper()
	p.waitFor(`!!document.querySelector(`+strconv.Quote(selector)+`)`, selector)
	p.js(fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s;
		el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); })()`,
		strconv.Quote(selector), strconv.Quote(value)))
}

// waitFor polls a JavaScript condition until it holds (15 s at most).
func (p *page) waitFor(cond, what string) {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var ok bool
		err := p.br.Eval(p.ctx, `!!(`+cond+`)`, &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			_ = p.br.Eval(p.ctx, `document.body.innerText.slice(0, 2000)`, &body)
			p.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, cond, err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clickText clicks the first element matching selector whose text is text.
func (p *page) clickText(selector, text string) {
	p.t.Helper()
	cond := `[...document.querySelectorAll(` + strconv.Quote(selector) + `)].find(e => e.textContent.trim() === ` + strconv.Quote(text) + `)`
	p.waitFor(cond, selector+" "+text)
	p.js(cond + `.click()`)
}
