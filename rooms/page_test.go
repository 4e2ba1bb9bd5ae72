package rooms

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Outside dev the call page pre-fills no key; every answer carries a
// content policy, refuses framing and sends no Referer.
func TestCallPageHeadersAndKeyField(t *testing.T) {
	t.Parallel()
	get := func(h http.Handler, path string) (*http.Response, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Result(), string(body)
	}
	served := pageHandler("", "wss://lk.example.com")
	for _, path := range []string{"/call", "/call/call.js"} {
		resp, body := get(served, path)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'self' wss://lk.example.com https://lk.example.com", "style-src 'self' 'sha256-"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
		if strings.Contains(body, "local-dev") || strings.Contains(body, "{{devKey}}") {
			t.Errorf("%s pre-fills a key outside dev", path)
		}
	}
	if _, body := get(pageHandler("local-dev", ""), "/call"); !strings.Contains(body, `id="key" value="local-dev"`) {
		t.Error("dev does not pre-fill its key")
	}
}
