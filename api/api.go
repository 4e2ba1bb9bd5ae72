// Package api is the box's HTTP toolkit, below every package that serves
// routes: authentication and scopes (Guard, Route), the {data, error}
// envelope, strict JSON decoding (Decode), and the one table from error
// kinds (package fault) to HTTP statuses (Status). Handlers return errors;
// Route's adapter writes them. Each package registers its own routes
// (memory.Register, agent.Register, runs.Register, stores, rag, rooms, sip);
// api serves only what belongs to the edge itself: health, capabilities and
// the keys routes.
//
//	srv := api.New(api.Config{Pool: pool, Keys: keys, Logger: log})
//	memory.Register(srv, svc, settings, pool)
//	http.ListenAndServe(addr, srv)
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/telemetry"
)

// Config wires the API.
type Config struct {
	// Pool is the database /healthz checks.
	Pool *pgxpool.Pool
	Keys *auth.Store
	// Logger receives one line per request: method, route, status, duration
	// and key name. Never bodies.
	Logger *slog.Logger
	// Metrics records each request by route and status, and is served at
	// /metrics (nil: neither).
	Metrics *telemetry.Metrics
}

// Server serves the API.
type Server struct {
	cfg      Config
	log      *slog.Logger
	mux      *http.ServeMux
	draining atomic.Bool

	// table is every pattern registered, in order; persons holds those
	// that act for one person (see PersonRoute). Written while the box is
	// built, read-only once it serves.
	table   []RouteInfo
	persons map[string]bool
}

// RouteInfo is one registered route, for the operator's and the tests'
// view of the trust model.
type RouteInfo struct {
	Pattern string
	// Scope is the scope the route requires ("" for any valid key or, for
	// routes registered with Handle, the handler's own check).
	Scope string
	// Person: the route acts for one person, whose identities the handler
	// admits against the key's policy, so a key restricted to a person may
	// use it. Every other route spans persons and needs a trusted key.
	Person bool
}

// New returns the API handler.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "api"), mux: http.NewServeMux(), persons: map[string]bool{}}
	s.routes()
	return s
}

// Handle registers a route that authenticates in its own way (a text
// wire's Guard in its own error shape, a public page). A restricted key is
// refused on it by Guard: it spans persons. Routes under /api/ must wrap
// their handler with Authed.
func (s *Server) Handle(pattern string, h http.Handler) { s.handle(pattern, "", false, h) }

// PersonHandle is Handle for a route that acts for one person: its handler
// admits the identities it acts for against the key's policy
// (identity.PolicyFrom), so a key restricted to a person may use it.
func (s *Server) PersonHandle(pattern string, h http.Handler) { s.handle(pattern, "", true, h) }

// Routes lists every registered route.
func (s *Server) Routes() []RouteInfo { return slices.Clone(s.table) }

func (s *Server) handle(pattern, scope string, person bool, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.table = append(s.table, RouteInfo{Pattern: pattern, Scope: scope, Person: person})
	if person {
		s.persons[pattern] = true
	}
}

func (s *Server) routes() {
	s.Handle("GET /healthz", http.HandlerFunc(s.healthz))
	s.Handle("GET /readyz", http.HandlerFunc(s.readyz))
	if s.cfg.Metrics != nil {
		// For a scraper with a key that may read runs (operational data,
		// never personal data).
		s.handle("GET /metrics", auth.ScopeRunsRead, false, s.Authed(auth.ScopeRunsRead, s.cfg.Metrics.Handler().ServeHTTP))
	}
	s.Handle("GET /api/openapi.json", http.HandlerFunc(s.openAPIDoc))
	s.PersonRoute("GET /api/capabilities", "", s.capabilities)
	s.Route("GET /api/keys/self", "", s.keysSelf)
	s.Route("GET /api/keys", auth.ScopeKeysAdmin, s.keysList)
	s.Route("POST /api/keys", auth.ScopeKeysAdmin, s.keysCreate)
	s.Route("DELETE /api/keys/{name}", auth.ScopeKeysAdmin, s.keysRevoke)

	// Anything else under /api is an unknown route, still behind auth so the
	// route table is not probeable without a key.
	s.Route("/api/", "", func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("%w: no route %s %s", ErrNotFound, r.Method, r.URL.Path)
	})
}

// ServeHTTP logs and serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	if err := checkURL(r.URL); err != nil {
		// Before routing: a path value or query parameter with a NUL or
		// invalid UTF-8 never reaches a handler or the database.
		s.Fail(sw, r, err)
	} else {
		s.mux.ServeHTTP(sw, r)
	}
	s.cfg.Metrics.HTTP(r.Pattern, sw.status, time.Since(start))
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "request", slog.String("method", r.Method),
		slog.String("route", r.Pattern), slog.Int("status", sw.status), slog.Duration("duration", time.Since(start)))
}

type keyCtx struct{}

// KeyFrom returns the authenticated key of a request served through Authed.
func KeyFrom(ctx context.Context) (auth.Key, bool) {
	k, ok := ctx.Value(keyCtx{}).(auth.Key)
	return k, ok
}

// Refusal is why a request was not let in, for the caller to write in its
// own error shape.
type Refusal struct {
	// Kind is Unauthenticated, Forbidden or Unavailable.
	Kind fault.Kind
	// Status is the kind's (Status).
	Status  int
	Code    string
	Message string
}

func refusal(kind fault.Kind, code, msg string) *Refusal {
	return &Refusal{Kind: kind, Status: Status(kind), Code: code, Message: msg}
}

// Guard authenticates r: a valid key from `Authorization: Bearer KEY` (or,
// when xAPIKey, the `x-api-key` header of the Anthropic wire) holding scope
// (unless scope is ""). It returns the request with the key in its context,
// or the refusal (401, 403, or 503 when the key store is down). Wires use it
// to answer auth errors in their own shape.
func (s *Server) Guard(r *http.Request, scope string, xAPIKey bool) (*http.Request, *Refusal) {
	secret, ok := bearer(r)
	if !ok && xAPIKey {
		secret = strings.TrimSpace(r.Header.Get("x-api-key"))
		ok = secret != ""
	}
	if !ok {
		return nil, refusal(fault.Unauthenticated, "unauthorized", "send Authorization: Bearer <API key>")
	}
	key, err := s.cfg.Keys.Authenticate(r.Context(), secret)
	if errors.Is(err, auth.ErrUnauthenticated) {
		return nil, refusal(fault.Unauthenticated, "unauthorized", "the API key is invalid or revoked")
	}
	if err != nil {
		s.log.Error("auth lookup failed", "error", err)
		return nil, refusal(fault.Unavailable, "unavailable", "the key store is unavailable")
	}
	if scope != "" && !key.Has(scope) {
		return nil, refusal(fault.Forbidden, "forbidden", "the API key lacks the scope "+scope)
	}
	if key.Restricted() && !s.persons[r.Pattern] {
		return nil, refusal(fault.Forbidden, "forbidden",
			"the API key is restricted to its own identities; this route spans persons and needs a key trusted to name any identity")
	}
	ctx := context.WithValue(r.Context(), keyCtx{}, key)
	return r.WithContext(identity.WithPolicy(ctx, key.Policy())), nil
}

// Authed wraps h: a valid bearer key is required (401 otherwise), holding
// scope when scope is not "" (403 otherwise); refusals use the envelope.
func (s *Server) Authed(scope string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2, refused := s.Guard(r, scope, false)
		if refused != nil {
			if refused.Kind == fault.Unauthenticated {
				w.Header().Set("WWW-Authenticate", `Bearer realm="stackbone"`)
			}
			writeError(w, refused.Status, refused.Code, refused.Message)
			return
		}
		h(w, r2)
	})
}

// HandlerFunc is an /api handler: it answers with WriteData, or returns an
// error that Route's adapter writes in the envelope (Fail).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Route registers an /api route behind auth and scope (scope "" admits any
// valid key). The route spans persons (runs, lists, settings, stores): a key
// restricted to a person is refused on it.
func (s *Server) Route(pattern, scope string, h HandlerFunc) { s.route(pattern, scope, false, h) }

// PersonRoute is Route for a route that acts for one person (a person's
// memory, a call with them): its handler admits the identities it acts for
// against the key's policy, so a key restricted to a person may use it.
func (s *Server) PersonRoute(pattern, scope string, h HandlerFunc) { s.route(pattern, scope, true, h) }

func (s *Server) route(pattern, scope string, person bool, h HandlerFunc) {
	s.handle(pattern, scope, person, s.Authed(scope, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.Fail(w, r, err)
		}
	}))
}

// WriteData answers {"data": data, "error": null}.
func WriteData(w http.ResponseWriter, status int, data any) { writeData(w, status, data) }

// Decode reads one strict JSON object (unknown fields, trailing data and
// bodies over limit bytes are errors) for routes of other packages.
func Decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decode(w, r, limit, v)
}

// Actor names the authenticated key of r for activity logs ("key:NAME").
func Actor(r *http.Request) string { return actor(r) }

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

func actor(r *http.Request) string {
	if k, ok := KeyFrom(r.Context()); ok {
		return "key:" + k.Name
	}
	return "unknown"
}

// Capabilities are what this box offers, for SDKs to negotiate (an SDK
// refuses person-memory calls with capability_unavailable when memory.basic
// is missing).
var Capabilities = []string{
	"memory.basic", "memory.settings", "memory.stores", "sessions", "runs",
	"wire.openai", "wire.anthropic", "wire.agui", "rag", "voice.sip", "voice.rooms",
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) error {
	writeData(w, http.StatusOK, map[string]any{"capabilities": Capabilities})
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.Pool.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": "unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz tells a load balancer whether to send this box new work: not once
// the box began to drain (Drain), nor while the database is unreachable.
// /healthz stays a liveness check.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	s.healthz(w, r)
}

// Drain turns /readyz unready: the box is stopping.
func (s *Server) Drain() { s.draining.Store(true) }

// envelope is the shape of every /api response.
type envelope struct {
	Data  any       `json:"data"`
	Error *apiError `json:"error"`
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeData(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, envelope{Data: data})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, envelope{Error: &apiError{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Errors of the toolkit's own routes and of decoding.
var (
	// ErrInvalidRequest: a malformed body or query (invalid_request, 400).
	ErrInvalidRequest = fault.New(fault.Invalid, "invalid_request", "invalid request")
	// ErrNotFound: no such route or object (not_found, 404).
	ErrNotFound = fault.New(fault.NotFound, "not_found", "not found")
)

// statuses is the one table from error kinds to HTTP statuses, for the
// envelope and for the text wires (Status).
var statuses = [...]int{
	fault.Internal:        http.StatusInternalServerError,
	fault.Invalid:         http.StatusBadRequest,
	fault.NotFound:        http.StatusNotFound,
	fault.Conflict:        http.StatusConflict,
	fault.Unauthenticated: http.StatusUnauthorized,
	fault.Forbidden:       http.StatusForbidden,
	fault.TooLarge:        http.StatusRequestEntityTooLarge,
	fault.Unsupported:     http.StatusUnsupportedMediaType,
	fault.Unprocessable:   http.StatusUnprocessableEntity,
	fault.Unavailable:     http.StatusServiceUnavailable,
	fault.Upstream:        http.StatusBadGateway,
	fault.Timeout:         http.StatusGatewayTimeout,
}

// Status is the HTTP status of an error of kind k.
func Status(k fault.Kind) int {
	if int(k) < len(statuses) {
		return statuses[k]
	}
	return http.StatusInternalServerError
}

// Fail writes err in the envelope: the status of its kind, its code, and
// its message without the package prefix of its sentinel. An error with no
// fault is logged and answered "internal" without detail, one of a
// sentinel of kind Internal with the sentinel's code and words only; a
// failure of the box (5xx) is logged with its hidden cause (fault.Hide).
func (s *Server) Fail(w http.ResponseWriter, r *http.Request, err error) {
	e := fault.Of(err)
	if e == nil {
		s.log.Error("internal error", "route", r.Pattern, "error", err)
		writeError(w, Status(fault.Internal), "internal", "internal error")
		return
	}
	if e.Kind() == fault.Internal {
		// A failure the box names (memory_persist_failed) keeps its code
		// and its sentinel's own words, never the cause's.
		s.log.Error("internal error", "route", r.Pattern, "code", e.Code(), "error", err)
		writeError(w, Status(fault.Internal), e.Code(), Message(e))
		return
	}
	status := Status(e.Kind())
	if status >= 500 {
		s.log.Warn("request failed", "route", r.Pattern, "code", e.Code(), "cause", fault.Cause(err))
	}
	writeError(w, status, e.Code(), Message(err))
}

// Message is err's text for a client: without its sentinel's package
// prefix ("stores: not found: memory x" reads "not found: memory x").
func Message(err error) string {
	msg := err.Error()
	if e := fault.Of(err); e != nil {
		if pkg, _, ok := strings.Cut(e.Error(), ": "); ok && !strings.Contains(pkg, " ") {
			msg = strings.TrimPrefix(msg, pkg+": ")
		}
	}
	return msg
}

// decodeError is a malformed body, reported with the route's invalid-request
// code.
type decodeError struct{ msg string }

func (e *decodeError) Error() string { return e.msg }

// Unwrap makes a decode error an ErrInvalidRequest.
func (e *decodeError) Unwrap() error { return ErrInvalidRequest }

// decode reads one JSON object into v: unknown fields, trailing data and
// bodies over limit bytes are errors. The Content-Type is not checked, so a
// plain `curl -d` works; every route needs a bearer key, so a browser form
// cannot forge a request.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	raw, err := ReadBody(w, r, limit)
	if err != nil {
		if isTextError(err) {
			return &decodeError{err.Error()}
		}
		return &decodeError{describeDecode(err, limit)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &decodeError{describeDecode(err, limit)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &decodeError{"the body must be one JSON object"}
	}
	return nil
}

func describeDecode(err error, limit int64) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty; send a JSON object"
	case errors.As(err, &tooBig):
		return fmt.Sprintf("the body is larger than %d bytes", limit)
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "the body must be a JSON object"
		}
		return fmt.Sprintf("%s must be a %s", typ.Field, jsonKind(typ.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "invalid JSON body"
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "float64":
		return "number"
	case "slice":
		return "array"
	}
	return "object"
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
