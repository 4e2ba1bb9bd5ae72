package rooms

import (
	"embed"
	"io/fs"
	"net/http"
)

// static is the call page: plain HTML and JavaScript, plus the LiveKit
// browser SDK (livekit-client 2.23.0, Apache-2.0, its UMD build) for rooms
// on LiveKit.
//
//go:embed static
var static embed.FS

// pageHandler serves GET /call (the page) and GET /call/... (its assets).
// The page holds no secret: it asks for the API key and sends it as a
// bearer token on each /api request.
func pageHandler() http.Handler {
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.URL.Path == "/call" || r.URL.Path == "/call/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			http.ServeFileFS(w, r, sub, "call.html")
			return
		}
		http.StripPrefix("/call/", files).ServeHTTP(w, r)
	})
}
