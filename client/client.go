package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stackbone/box/fault"
)

// Client talks to one box. Its fields may be changed before first use.
type Client struct {
	// BaseURL is where the box listens, without a trailing slash.
	BaseURL string
	// APIKey is sent as a bearer token.
	APIKey string
	// HTTP sends the requests (default http.DefaultClient).
	HTTP *http.Client
	// MaxRetries of a 503 or 429 answer, or of a request with no answer
	// unless it is a POST without an Idempotency-Key (default 2; negative:
	// none).
	MaxRetries int
	// RetryDelay is the first backoff, doubled each retry unless the box
	// sends Retry-After (default 500ms); MaxRetryDelay caps any wait
	// (default 30s).
	RetryDelay, MaxRetryDelay time.Duration

	Memory   *MemoryService
	RAG      *RAGService
	Stores   *StoresService
	Voice    *VoiceService
	Sessions *SessionsService
	Runs     *RunsService
	Keys     *KeysService
}

// New returns a client of the box at baseURL with apiKey.
func New(baseURL, apiKey string) *Client {
	c := &Client{BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey, MaxRetries: 2,
		RetryDelay: 500 * time.Millisecond, MaxRetryDelay: 30 * time.Second}
	c.Memory = &MemoryService{c}
	c.RAG = &RAGService{c}
	c.Stores = &StoresService{c}
	c.Voice = &VoiceService{c}
	c.Sessions = &SessionsService{c}
	c.Runs = &RunsService{c}
	c.Keys = &KeysService{c}
	return c
}

// FromEnv returns a client of STACKBONE_URL (default
// http://127.0.0.1:4242) with STACKBONE_API_KEY.
func FromEnv() *Client {
	u := os.Getenv("STACKBONE_URL")
	if u == "" {
		u = "http://127.0.0.1:4242"
	}
	return New(u, os.Getenv("STACKBONE_API_KEY"))
}

// Error is a failed call: the box's code and message with the HTTP status.
// errors.Is matches it with another Error of the same code (the sentinels
// below) and with the box's own sentinel of that code (memory.ErrConflict).
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is what the box asked to wait before a retry, if anything.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return "stackbone: " + e.Code + ": " + e.Message
	}
	return fmt.Sprintf("stackbone: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is reports whether target names e's code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	if f := fault.Of(target); f != nil {
		return f.Code() == e.Code
	}
	return false
}

func code(c string) *Error { return &Error{Code: c} }

// Codes to match with errors.Is; every code of the API is in
// api/openapi.json.
var (
	ErrInvalidRequest = code("invalid_request")
	ErrUnauthorized   = code("unauthorized")
	ErrForbidden      = code("forbidden")
	ErrNotFound       = code("not_found")
	ErrUnavailable    = code("unavailable")
	ErrAgentNotFound  = code("agent_not_found")

	ErrMemoryInvalidRequest     = code("memory_invalid_request")
	ErrMemoryModelFailed        = code("memory_model_failed")
	ErrMemoryInvalidModelOutput = code("memory_invalid_model_output")
	ErrMemoryConflict           = code("memory_conflict")
	ErrMemorySchemaMissing      = code("memory_schema_missing")
	ErrMemoryUnavailable        = code("memory_unavailable")
	ErrCapabilityUnavailable    = code("capability_unavailable")

	ErrRAGInvalidRequest      = code("rag_invalid_request")
	ErrRAGCollectionNotFound  = code("rag_collection_not_found")
	ErrRAGCollectionExists    = code("rag_collection_exists")
	ErrRAGDocumentNotFound    = code("rag_document_not_found")
	ErrCallNotFound           = code("call_not_found")
	ErrCallEnded              = code("call_ended")
	ErrRoomNotFound           = code("room_not_found")
	ErrSessionNotFound        = code("session_not_found")
	ErrNoDecisionPending      = code("no_decision_pending")
	ErrKeyNotFound            = code("key_not_found")
	ErrKeyExists              = code("key_exists")
	ErrContentSHA256Mismatch  = code("content_sha256_mismatch")
	ErrVoiceNoTrunk           = code("voice_no_trunk")
	ErrVoiceInvalidRequest    = code("voice_invalid_request")
	ErrRoomsInvalidRequest    = code("rooms_invalid_request")
	ErrInvalidResponse        = code("invalid_response")
	ErrStoresMemoryPathExists = code("memory_path_exists")
)

type request struct {
	method, path string
	query        url.Values
	body         any
	header       http.Header
}

// do sends r and decodes the envelope's data into out (nil: discard).
// Errors: *Error for an answer of the box; ctx's error when it ended;
// otherwise the transport's error.
func (c *Client) do(ctx context.Context, r request, out any) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("stackbone: encode %s %s: %w", r.method, r.path, err)
		}
	}
	u := c.BaseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, r.method, u, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("stackbone: %w", err)
		}
		for k, v := range r.header {
			req.Header[k] = v
		}
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+c.APIKey)
		}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Without an answer the box may have done the work: only a
			// request that cannot apply twice is sent again.
			safe := r.method != http.MethodPost || r.header.Get("Idempotency-Key") != ""
			if safe && attempt < c.MaxRetries {
				if err := c.wait(ctx, attempt, 0); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("stackbone: %s %s: %w", r.method, r.path, err)
		}
		retryAfter := parseRetryAfter(resp.Header.Get("Retry-After"))
		if (resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests) && attempt < c.MaxRetries {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if err := c.wait(ctx, attempt, retryAfter); err != nil {
				return err
			}
			continue
		}
		return read(resp, r, retryAfter, out)
	}
}

func read(resp *http.Response, r request, retryAfter time.Duration, out any) error {
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("stackbone: %s %s: the answer was cut: %w", r.method, r.path, err)
	}
	if resp.StatusCode == http.StatusNoContent && resp.StatusCode < 300 {
		return nil
	}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return &Error{Status: resp.StatusCode, Code: "invalid_response", Message: fmt.Sprintf("%s %s: the answer is not the envelope", r.method, r.path), RetryAfter: retryAfter}
	}
	if env.Error != nil || resp.StatusCode >= 300 {
		e := &Error{Status: resp.StatusCode, Code: "invalid_response", Message: http.StatusText(resp.StatusCode), RetryAfter: retryAfter}
		if env.Error != nil {
			e.Code, e.Message = env.Error.Code, env.Error.Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return &Error{Status: resp.StatusCode, Code: "invalid_response", Message: fmt.Sprintf("%s %s: %v", r.method, r.path, err)}
	}
	return nil
}

// wait sleeps before retry attempt+1: the box's Retry-After, else the
// backoff with jitter; at most MaxRetryDelay.
func (c *Client) wait(ctx context.Context, attempt int, retryAfter time.Duration) error {
	d := retryAfter
	if d <= 0 {
		d = time.Duration(float64(c.RetryDelay<<attempt) * (0.75 + rand.Float64()/2))
	}
	if c.MaxRetryDelay > 0 {
		d = min(d, c.MaxRetryDelay)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func parseRetryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

func newKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func seg(s string) string { return url.PathEscape(s) }
