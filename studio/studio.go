package studio

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every Studio response. connect-src
// 'self' keeps the API key from being sent anywhere but this box;
// media-src blob: and mediastream are for the Playground's test call.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; media-src 'self' blob: mediastream:; font-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Mux is where Studio mounts its routes (the API server's mux).
type Mux interface {
	Handle(pattern string, h http.Handler)
}

// Register mounts GET /studio (the console and its assets) and sends GET /
// there.
func Register(mux Mux) {
	h := Handler()
	mux.Handle("GET /studio", h)
	mux.Handle("GET /studio/", h)
	mux.Handle("GET /{$}", http.RedirectHandler("/studio/", http.StatusFound))
}

// Handler serves the console: /studio/ is the page, /studio/NAME its
// assets. Every other path under /studio/ is the page too, so a reload on
// a screen's address works.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	// Embedded files have no modification time, so without a validator a
	// reload downloads every module again; their content hash lets the
	// browser revalidate (304) instead. Still no-cache: a new build is
	// picked up at once.
	etags := map[string]string{}
	_ = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		etags[name] = `"` + hex.EncodeToString(sum[:12]) + `"`
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", CSP)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
		hdr.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/studio" {
			http.Redirect(w, r, "/studio/", http.StatusMovedPermanently)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/studio/")
		if name != "" && path.Ext(name) != "" {
			if f, err := fs.Stat(sub, name); err == nil && !f.IsDir() {
				hdr.Set("ETag", etags[name])
				http.ServeFileFS(w, r, sub, name)
				return
			}
			http.NotFound(w, r)
			return
		}
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("ETag", etags["index.html"])
		http.ServeFileFS(w, r, sub, "index.html")
	})
}
