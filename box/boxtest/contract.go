package boxtest

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/openapi"
)

// maxChecked bounds the answer a contract check reads (larger JSON answers
// are not checked).
const maxChecked = 4 << 20

var (
	validatorOnce sync.Once
	validator     *openapi.Validator
	validatorErr  error
)

// contract wraps h so every /api answer the box gives during the test is
// checked against the OpenAPI document the box serves: a status the route
// does not document, a body that does not match its schema, or an error
// code the route does not list fails the test.
func contract(t testing.TB, h http.Handler) http.Handler {
	validatorOnce.Do(func() { validator, validatorErr = openapi.NewValidator(api.OpenAPI()) })
	if validatorErr != nil {
		t.Fatal(validatorErr)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api/openapi.json" {
			h.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		// A request whose client went away may end after the test did,
		// when failing it is no longer possible.
		if rec.hijacked || rec.body.Len() > maxChecked || r.Context().Err() != nil {
			return
		}
		if ct := rec.Header().Get("Content-Type"); rec.body.Len() > 0 && !strings.HasPrefix(ct, "application/json") {
			return // a file
		}
		if err := validator.Response(r.Method, r.URL.EscapedPath(), rec.status, rec.body.Bytes()); err != nil {
			t.Errorf("the answer breaks the API contract (api/openapi.json): %v", err)
		}
	})
}

// recorder keeps a copy of an answer while it is written.
type recorder struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.body.Len() <= maxChecked {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
