package provider

import (
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/stackbone/box/config"
)

// Defaults of config.Provider's timeouts.
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultFirstByteTimeout = 60 * time.Second
	DefaultChunkTimeout     = 60 * time.Second
)

// ErrTimeout: the provider did not connect, answer or go on answering in
// time (each wire answers 504).
var ErrTimeout = errors.New("provider: timed out")

// timeoutError is ErrTimeout for one phase, and a net.Error whose Timeout
// is true, so HTTP code treats it as the timeout it is.
type timeoutError struct{ phase string }

func (e *timeoutError) Error() string   { return "provider: no answer in time (" + e.phase + ")" }
func (e *timeoutError) Unwrap() error   { return ErrTimeout }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

// newHTTPClient is the client of one provider: separate timeouts for
// connecting, the first byte of the answer and the silence between chunks
// of its body, instead of one timeout that cannot fit a long stream. Calls
// are otherwise bounded by their context.
func newHTTPClient(p config.Provider, wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	connect, first, chunk := p.ConnectTimeout, p.FirstByteTimeout, p.ChunkTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	if first <= 0 {
		first = DefaultFirstByteTimeout
	}
	if chunk <= 0 {
		chunk = DefaultChunkTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = connect
	tr.ResponseHeaderTimeout = first
	// Keep a connection for every concurrent request: the default keeps
	// two per host, so with more turns in flight to one provider most
	// requests closed their connection after the answer and the next
	// dialed (and, over TLS without HTTP/2, shook hands) again.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	var rt http.RoundTripper = tr
	if wrap != nil {
		rt = wrap(rt)
	}
	return &http.Client{Transport: &watchdog{next: rt, chunk: chunk}}
}

// watchdog names the timeouts of the transport and bounds the silence
// between reads of a response body.
type watchdog struct {
	next  http.RoundTripper
	chunk time.Duration
}

func (w *watchdog) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && req.Context().Err() == nil {
			phase := "first byte"
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				phase = "connect"
			}
			return nil, &timeoutError{phase: phase}
		}
		return nil, err
	}
	resp.Body = newIdleBody(resp.Body, w.chunk)
	return resp, nil
}

// idleBody closes its body when no read returns within d of the last one,
// and reports the timeout to the reader.
type idleBody struct {
	body  io.ReadCloser
	timer *time.Timer
	d     time.Duration

	mu      sync.Mutex
	expired bool
}

func newIdleBody(body io.ReadCloser, d time.Duration) *idleBody {
	b := &idleBody{body: body, d: d}
	b.timer = time.AfterFunc(d, func() {
		b.mu.Lock()
		b.expired = true
		b.mu.Unlock()
		body.Close()
	})
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.mu.Lock()
	expired := b.expired
	b.mu.Unlock()
	if expired {
		return n, &timeoutError{phase: "between chunks"}
	}
	b.timer.Reset(b.d)
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.body.Close()
}

// secrets are shapes of credentials a provider's error text may quote.
var secrets = regexp.MustCompile(`(?i)(sk-[a-z0-9_\-]{6,}|bearer\s+\S+|(api[_-]?key|key|token|secret|password)(["'\s:=]+)\S+|[a-z0-9_\-]{32,})`)

// Redact masks what looks like a credential in s: provider keys, bearer
// tokens, key=value secrets and long opaque tokens.
func Redact(s string) string {
	return secrets.ReplaceAllString(s, "[redacted]")
}
