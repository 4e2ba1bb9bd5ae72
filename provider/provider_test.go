package provider

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stackbone/box/config"
)

// The provider's text never reaches a client; its debug detail masks
// credentials.
func TestDescribeAndDetailKeepSecretsOut(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-AbCdEf0123456789xyzXYZ"
	err := &openai.APIError{HTTPStatusCode: http.StatusUnauthorized, Message: "Incorrect API key provided: " + key + ". Bearer abc.def"}
	if d := Describe(err); d != "provider answered 401 (authentication failed)" {
		t.Fatalf("Describe = %q", d)
	}
	for _, e := range []error{err, errors.New(`upstream said api_key="hunter2hunter2" token: tok_1234`)} {
		d := Detail(e)
		for _, secret := range []string{key, "abc.def", "hunter2hunter2", "tok_1234"} {
			if strings.Contains(d, secret) {
				t.Errorf("Detail(%v) = %q keeps %q", e, d, secret)
			}
		}
	}
	if got := Describe(&timeoutError{phase: "between chunks"}); !strings.Contains(got, "between chunks") || !errors.Is(&timeoutError{}, ErrTimeout) {
		t.Fatalf("timeout: %q", got)
	}
}

// Concurrent requests to one provider reuse their connections: rounds of
// 32 requests at once open about 32 connections, not one per request
// (the transport's default keeps two idle per host and closed the rest).
func TestConcurrentRequestsReuseConnections(t *testing.T) {
	t.Parallel()
	const rounds, width = 5, 32
	var opened atomic.Int64
	var round atomic.Pointer[sync.WaitGroup]
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each round answers once all its requests arrived, so it really
		// has 32 in flight.
		wg := round.Load()
		wg.Done()
		wg.Wait()
		io.WriteString(w, "{}")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	hc := newHTTPClient(config.Provider{}, nil)
	for range rounds {
		arrived := &sync.WaitGroup{}
		arrived.Add(width)
		round.Store(arrived)
		var done sync.WaitGroup
		for range width {
			done.Go(func() {
				resp, err := hc.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		done.Wait()
	}
	if n := opened.Load(); n > width+width/4 {
		t.Fatalf("%d connections opened for %d rounds of %d concurrent requests", n, rounds, width)
	}
}
