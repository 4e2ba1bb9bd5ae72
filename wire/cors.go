package wire

import (
	"net/http"
	"slices"
	"strings"
)

// CORS lets browser clients of the text wires (paths under /openai/,
// /anthropic/ and /agui/) call the box from the allowed origins; other
// paths, and requests from other origins, pass through untouched, so the
// browser refuses them. An empty list turns CORS off; "*" allows every
// origin. A preflight (OPTIONS with Access-Control-Request-Method) from an
// allowed origin is answered here with 204, before authentication, as
// browsers send no credentials on it; one from another origin gets 403.
// Credentials are keys in headers, never cookies, so
// Access-Control-Allow-Credentials is not sent.
func CORS(allowed []string, next http.Handler) http.Handler {
	if len(allowed) == 0 {
		return next
	}
	any := slices.Contains(allowed, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !wirePath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		ok := any || slices.Contains(allowed, origin)
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if preflight {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			if !ok {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if ok {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", HeaderRunID)
		}
		next.ServeHTTP(w, r)
	})
}

func wirePath(p string) bool {
	for _, prefix := range []string{"/openai/", "/anthropic/", "/agui/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
