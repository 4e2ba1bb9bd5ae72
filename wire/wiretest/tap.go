// Package wiretest holds what the text wires' tests share besides the box
// itself (box/boxtest builds that): Tap, which keeps the raw bytes an
// official SDK read. Its own tests throw hostile input at all three wires.
package wiretest

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// Tap is an HTTP client for an official SDK that keeps the raw bytes of
// the responses as the SDK reads them, so a test sees what the SDK is
// meant to skip (keep-alives) beside what it parsed.
//
//	tap := &wiretest.Tap{}
//	c := openai.NewClient(option.WithHTTPClient(tap.Client()), ...)
//	... tap.String()
type Tap struct {
	mu  sync.Mutex
	raw bytes.Buffer
}

// Client is the HTTP client to hand the SDK.
func (t *Tap) Client() *http.Client {
	return &http.Client{Transport: tapTransport{t}}
}

// String is every response body read so far.
func (t *Tap) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.raw.String()
}

type tapTransport struct{ t *Tap }

func (tt tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = tapBody{ReadCloser: resp.Body, t: tt.t}
	return resp, nil
}

type tapBody struct {
	io.ReadCloser
	t *Tap
}

func (b tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.t.mu.Lock()
	b.t.raw.Write(p[:n])
	b.t.mu.Unlock()
	return n, err
}
