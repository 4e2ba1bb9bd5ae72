package wire_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stackbone/box/wire"
)

func TestCORS(t *testing.T) {
	t.Parallel()
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	do := func(h http.Handler, method, path, origin string, hdr map[string]string) *http.Response {
		r := httptest.NewRequest(method, path, nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	pre := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, x-stackbone-session"}

	// Off by default: a preflight reaches the handler, which refuses it.
	if resp := do(wire.CORS(nil, next), http.MethodOptions, "/openai/v1/chat/completions", "https://app.example", pre); resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("off: %d %v", resp.StatusCode, resp.Header)
	}
	h := wire.CORS([]string{"https://app.example"}, next)
	resp := do(h, http.MethodOptions, "/openai/v1/chat/completions", "https://app.example", pre)
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		resp.Header.Get("Access-Control-Allow-Headers") != pre["Access-Control-Request-Headers"] || resp.Header.Get("Access-Control-Allow-Methods") == "" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := do(h, http.MethodOptions, "/anthropic/v1/messages", "https://evil.example", pre); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin's preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp = do(h, http.MethodPost, "/agui/support", "https://app.example", map[string]string{"Authorization": "Bearer k"})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || resp.Header.Get("Access-Control-Expose-Headers") != wire.HeaderRunID {
		t.Fatalf("request: %d %v", resp.StatusCode, resp.Header)
	}
	// Not a wire: untouched.
	if resp := do(h, http.MethodOptions, "/api/sessions", "https://app.example", pre); resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("api path: %d %v", resp.StatusCode, resp.Header)
	}
}
