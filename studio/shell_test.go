package studio_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/studio"
)

// The console is served from the binary at /studio with a strict policy, /
// leads there, and the page carries no secret.
func TestServedWithStrictPolicy(t *testing.T) {
	b := newBox(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(b.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/studio/" {
		t.Fatalf("GET / answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, path := range []string{"/studio/", "/studio/app.js", "/studio/studio.css", "/studio/sessions/abc"} {
		resp, err := http.Get(b.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != studio.CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %s: %d, CSP %q", path, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	}
	if !strings.Contains(studio.CSP, "script-src 'self';") || strings.Contains(studio.CSP, "unsafe") {
		t.Fatalf("the policy allows inline script: %s", studio.CSP)
	}
	// The page names its icon, and the icon is served (a browser asks for
	// one on every page).
	page, err := http.Get(b.url + "/studio/")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	icon := regexp.MustCompile(`<link rel="icon"[^>]* href="([^"]+)"`).FindSubmatch(html)
	if icon == nil {
		t.Fatal("the page names no icon")
	}
	if resp, err := http.Get(b.url + string(icon[1])); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("the icon %s: %v %v", icon[1], err, resp)
	}
	if resp, _ := http.Get(b.url + "/studio/nothing.js"); resp.StatusCode != 404 {
		t.Fatalf("a missing asset answered %d", resp.StatusCode)
	}
	// A reload revalidates the assets instead of downloading them again.
	for _, path := range []string{"/studio/", "/studio/lib.js"} {
		resp, err := http.Get(b.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tag := resp.Header.Get("ETag")
		req, _ := http.NewRequest("GET", b.url+path, nil)
		req.Header.Set("If-None-Match", tag)
		again, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if tag == "" || again.StatusCode != http.StatusNotModified || again.Header.Get("Content-Security-Policy") != studio.CSP {
			t.Fatalf("GET %s with If-None-Match %q: %d", path, tag, again.StatusCode)
		}
	}
}

// An operator signs in; a wrong key is refused with a message; the key
// lives only in the tab's sessionStorage (not in the page, the address or a
// cookie); a key revoked mid-session sends the operator back to sign-in
// with a clear message, and changes nothing.
func TestSignInAndRevokedKey(t *testing.T) {
	b := newBox(t)
	secret, _, err := b.keys.Create(context.Background(), "ops", []string{auth.ScopeConfigRead, auth.ScopeConfigWrite, auth.ScopeSessionsRead})
	if err != nil {
		t.Fatal(err)
	}
	p := b.open(t)
	p.waitFor(`document.getElementById("root").dataset.state === "signin"`, "the sign-in form")
	p.set("#signin-key", "sbk_wrong")
	p.js(`document.getElementById("signin").requestSubmit()`)
	p.waitFor(`document.getElementById("signin-error").textContent.includes("invalid or revoked")`, "the refusal")

	p.signIn(secret)
	var where struct {
		HTML, URL, Cookie, Stored, Local string
	}
	p.js(`({HTML: document.documentElement.outerHTML, URL: location.href, Cookie: document.cookie,
		Stored: sessionStorage.getItem("stackbone.studio.key"), Local: JSON.stringify(localStorage)})`, &where)
	if where.Stored != secret || strings.Contains(where.HTML, secret) || strings.Contains(where.URL, secret) ||
		where.Cookie != "" || strings.Contains(where.Local, secret) {
		t.Fatalf("the key is somewhere else than sessionStorage: url %q cookie %q local %q in page %v",
			where.URL, where.Cookie, where.Local, strings.Contains(where.HTML, secret))
	}
	if got := p.text("#whoami"); got != "ops" {
		t.Fatalf("signed in as %q", got)
	}
	// Screens the key cannot open are marked, and say why.
	var disabled []string
	p.js(`[...document.querySelectorAll("nav.side a.disabled")].map(a => a.id)`, &disabled)
	if strings.Join(disabled, ",") != "nav-playground,nav-calls,nav-campaigns,nav-rag,nav-stores,nav-people,nav-runs,nav-costs,nav-keys" {
		t.Fatalf("disabled screens %v", disabled)
	}
	p.goTo("#/calls")
	if got := p.text("main .readonly"); !strings.Contains(got, "lacks the scope voice") {
		t.Fatalf("calls without the voice scope: %q", got)
	}

	// Revoked mid-session: the next action is refused and nothing changes.
	p.goTo("#/agents")
	p.waitFor(`!!document.querySelector('#agent-support input[name=read]')`, "the support agent's settings")
	if err := b.keys.Revoke(context.Background(), "ops"); err != nil {
		t.Fatal(err)
	}
	p.click("#agent-support input[name=read]")
	p.waitFor(`document.getElementById("root").dataset.state === "signin"`, "sign-in after the revoke")
	if got := p.text("#signin-error"); !strings.Contains(got, "revoked") {
		t.Fatalf("the message after a revoke: %q", got)
	}
	var stored *string
	p.js(`sessionStorage.getItem("stackbone.studio.key")`, &stored)
	if stored != nil {
		t.Fatal("the revoked key is still kept")
	}
	if n := b.count(`SELECT count(*) FROM stackbone_platform.agent_memory_settings`); n != 0 {
		t.Fatalf("the refused toggle changed %d settings rows", n)
	}
}

// A key revoked mid-session that acts (a toggle, a save, a Load more, a
// screen opened) brings the sign-in form back, and the page has no error
// nobody handled.
func TestRevokedKeyActsWithoutUnhandledErrors(t *testing.T) {
	b := newBox(t)
	for _, act := range []struct {
		name, hash, ready string
		do                func(p *page)
	}{
		{"a memory toggle", "#/agents", `!!document.querySelector('#agent-support input[name=read]')`,
			func(p *page) { p.click("#agent-support input[name=read]") }},
		{"Save models", "#/agents", `!!document.querySelector('#agent-support button.save-models')`, func(p *page) {
			p.set("#agent-support input[name=chain-model]", "openai/chat, openai/extractor")
			p.click("#agent-support button.save-models")
		}},
		{"a System save", "#/system", `!!document.getElementById("selection")`,
			func(p *page) { p.js(`document.getElementById("selection").requestSubmit()`) }},
		{"a Playground message", "#/playground", `!!document.getElementById("composer")`, func(p *page) {
			p.set("main select[name=agent]", "support")
			p.set("#composer textarea", "Hello")
			p.js(`document.getElementById("composer").requestSubmit()`)
		}},
		{"another screen", "#/sessions", `!!document.querySelector("table.sessions")`,
			func(p *page) { p.js(`location.hash = "#/runs"`) }},
	} {
		name := "ops-" + strings.ReplaceAll(act.name, " ", "-")
		secret, _, err := b.keys.Create(context.Background(), name, auth.AllScopes)
		if err != nil {
			t.Fatal(err)
		}
		p := b.open(t)
		p.watchFailures()
		p.signIn(secret)
		p.goTo(act.hash)
		p.waitFor(act.ready, act.hash+" drawn")
		if err := b.keys.Revoke(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		act.do(p)
		p.waitFor(`document.getElementById("root").dataset.state === "signin"`, "sign-in after "+act.name+" with the revoked key")
		// Whatever the refused requests still settle does so before a
		// round trip to the page and back.
		var settled bool
		p.js(`new Promise((r) => setTimeout(() => r(true), 0))`, &settled)
		p.waitFor(`document.getElementById("signin-error").textContent.includes("revoked")`, "the reason")
		if f := p.failures(); len(f) > 0 {
			t.Fatalf("%s with a revoked key left errors nobody handled: %q", act.name, f)
		}
	}
}
