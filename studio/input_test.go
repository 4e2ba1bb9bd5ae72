package studio_test

import (
	"strconv"
	"testing"
)

// Studio driven as a person does it: keys pressed on the keyboard, a
// window of a given size, and the page's unhandled failures collected.

// press sends one key to the page as the keyboard does ("Tab", "Enter"):
// the browser moves the focus or activates what has it.
func (p *page) press(key string) {
	p.t.Helper()
	codes := map[string]int{"Tab": 9, "Enter": 13}
	code, ok := codes[key]
	if !ok {
		p.t.Fatalf("press: no key code for %q", key)
	}
	down := map[string]any{"type": "rawKeyDown", "key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code}
	if key == "Enter" {
		down = map[string]any{"type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code, "text": "\r"}
	}
	up := map[string]any{"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code}
	for _, ev := range []map[string]any{down, up} {
		if _, err := p.br.Call(p.ctx, "Input.dispatchKeyEvent", ev); err != nil {
			p.t.Fatal(err)
		}
	}
}

// tabTo presses Tab until the focus is on an element matching selector
// (at most limit presses) and fails if it never gets there.
func (p *page) tabTo(selector string, limit int) {
	p.t.Helper()
	for range limit {
		p.press("Tab")
		var on bool
		p.js(`!!(document.activeElement && document.activeElement.matches(`+strconv.Quote(selector)+`))`, &on)
		if on {
			return
		}
	}
	var at string
	p.js(`document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : ""`, &at)
	p.t.Fatalf("%d presses of Tab never reached %s (the focus is on %s)", limit, selector, at)
}

// window sizes the page's viewport to width x height CSS pixels, as a
// desktop browser window of that size.
func (p *page) window(width, height int) {
	p.t.Helper()
	if _, err := p.br.Call(p.ctx, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		p.t.Fatal(err)
	}
}

// watchFailures records the page's uncaught errors and unhandled promise
// rejections from now on (the page is one document: screens change by
// address, so the listeners stay); failures returns them.
func (p *page) watchFailures() {
	p.t.Helper()
	p.js(`(() => { window.failures = [];
		window.addEventListener("error", (e) => window.failures.push("error: " + e.message));
		window.addEventListener("unhandledrejection", (e) => window.failures.push("unhandled rejection: " + (e.reason && e.reason.message || String(e.reason))));
	})()`)
}

func (p *page) failures() []string {
	p.t.Helper()
	var out []string
	p.js(`window.failures || []`, &out)
	return out
}

// colour is an element's computed CSS property (color, background-color).
func (p *page) colour(selector, property string) string {
	p.t.Helper()
	p.waitFor(`!!document.querySelector(`+strconv.Quote(selector)+`)`, selector)
	var c string
	p.js(`getComputedStyle(document.querySelector(`+strconv.Quote(selector)+`)).getPropertyValue(`+strconv.Quote(property)+`)`, &c)
	return c
}

// openAt opens Studio signed in with the admin key on the screen hash.
func (b *box) openAt(t *testing.T, hash string) *page {
	t.Helper()
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo(hash)
	return p
}
