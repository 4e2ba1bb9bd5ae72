package rooms

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
)

// static is the call page: plain HTML and JavaScript over the TypeScript
// SDK's browser call module (sdk/, a copy of its build, so the page and
// the SDK place calls with the same code), plus the LiveKit browser SDK
// (livekit-client 2.23.0, Apache-2.0, its UMD build) the module is given
// for rooms on LiveKit.
//
//go:embed static
var static embed.FS

// pageHandler serves GET /call (the page) and GET /call/... (its assets).
// The page holds no secret: it asks for the API key and sends it as a
// bearer token on each /api request. Only under `stackbone dev` (devKey
// set) is the key field filled, with the dev key whose secret is public.
// Every answer carries a Content-Security-Policy (scripts and styles only
// the page's own, connections only to the box and the LiveKit server),
// refuses framing, and sends no Referer.
func pageHandler(devKey, liveKitURL string) http.Handler {
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	raw, _ := fs.ReadFile(sub, "call.html")
	page := strings.ReplaceAll(string(raw), "{{devKey}}", html.EscapeString(devKey))
	csp := contentPolicy(page, liveKitURL)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if r.URL.Path == "/call" || r.URL.Path == "/call/" {
			h.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(page))
			return
		}
		http.StripPrefix("/call/", files).ServeHTTP(w, r)
	})
}

// contentPolicy allows the page's one inline style block by its hash,
// scripts from the box only, and connections to the box and, for rooms on
// LiveKit, to the server browsers join (its WebSocket and HTTP origins).
func contentPolicy(page, liveKitURL string) string {
	style := ""
	if i := strings.Index(page, "<style>"); i >= 0 {
		if j := strings.Index(page[i:], "</style>"); j >= 0 {
			sum := sha256.Sum256([]byte(page[i+len("<style>") : i+j]))
			style = " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		}
	}
	connect := "'self'"
	if u, err := url.Parse(liveKitURL); err == nil && u.Host != "" {
		ws, web := "ws", "http"
		if u.Scheme == "wss" || u.Scheme == "https" {
			ws, web = "wss", "https"
		}
		connect += " " + ws + "://" + u.Host + " " + web + "://" + u.Host
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'" + style + "; connect-src " + connect +
		"; img-src 'self' data:; media-src 'self' blob: mediastream:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}
