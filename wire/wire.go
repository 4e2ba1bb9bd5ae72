// Package wire holds what the text wires (OpenAI, Anthropic, AG-UI) share:
// the session headers, the identities header, and server-sent events.
// Each wire lives in its own package under wire/ and turns its protocol into
// an agent.TurnRequest and the turn's events back into its protocol.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// Config wires one text wire; every wire package registers with it.
type Config struct {
	// Runtime runs the turns. Required.
	Runtime *agent.Runtime
	// Guard authenticates a request and checks its scope; (*api.Server).Guard.
	// Required.
	Guard func(r *http.Request, scope string, xAPIKey bool) (*http.Request, *api.Refusal)
	// Logger receives ids, codes, sizes and timings, never message text.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// KeepAlive is how often a streamed answer carries a keep-alive while
	// the turn writes nothing (config http.streamKeepAlive; 0:
	// DefaultKeepAlive, negative: none).
	KeepAlive time.Duration
}

// Mux is where a wire mounts its routes (an *api.Server).
type Mux interface {
	// Handle registers a route that spans persons.
	Handle(pattern string, h http.Handler)
	// PersonHandle registers a route that acts for one person (a turn),
	// which a key restricted to a person may use: the turn admits its
	// identities against the key's policy.
	PersonHandle(pattern string, h http.Handler)
}

// Header names of the box's wire extensions.
const (
	HeaderSession      = "x-stackbone-session"
	HeaderConversation = "x-stackbone-conversation"
	HeaderIdentities   = "x-stackbone-identities"
)

// MaxKeyChars bounds a session or conversation key.
const MaxKeyChars = 500

// ErrBadHeaders: the box's headers break a rule (400 on every wire).
var ErrBadHeaders = fault.New(fault.Invalid, "invalid_headers", "wire: invalid x-stackbone headers")

// SessionKeys reads x-stackbone-session and x-stackbone-conversation.
// Sending both is an error: a session keeps state, a conversation only
// groups stateless turns.
func SessionKeys(r *http.Request) (session, conversation string, err error) {
	session, conversation = r.Header.Get(HeaderSession), r.Header.Get(HeaderConversation)
	if session != "" && conversation != "" {
		return "", "", fmt.Errorf("%w: send %s or %s, not both", ErrBadHeaders, HeaderSession, HeaderConversation)
	}
	for _, k := range []string{session, conversation} {
		if utf8.RuneCountInString(k) > MaxKeyChars || !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
			return "", "", fmt.Errorf("%w: a session or conversation key is valid text of at most %d characters", ErrBadHeaders, MaxKeyChars)
		}
	}
	return session, conversation, nil
}

// Identities reads x-stackbone-identities (a JSON object; non-ASCII as \u
// escapes) and merges the wire's scalar customer identity (nil when the
// request has none). Errors wrap identity.ErrInvalid or identity.ErrConflict.
func Identities(r *http.Request, scalar *string) (identity.Set, error) {
	return identity.Parse([]byte(r.Header.Get(HeaderIdentities)), scalar)
}

// WithHeaders completes a turn from the box's headers: the session or
// conversation key and the identities, with the wire's scalar customer
// identity (nil when the request has none).
func WithHeaders(r *http.Request, turn agent.TurnRequest, scalar *string) (agent.TurnRequest, error) {
	var err error
	if turn.SessionKey, turn.ConversationKey, err = SessionKeys(r); err != nil {
		return agent.TurnRequest{}, err
	}
	if turn.Identities, err = Identities(r, scalar); err != nil {
		return agent.TurnRequest{}, err
	}
	return turn, nil
}

// SSE writes server-sent events and flushes each one.
type SSE struct {
	w http.ResponseWriter
	f http.Flusher
}

// NewSSE sets the event-stream headers and returns a writer. It does not
// write the status; the first Event does (200).
func NewSSE(w http.ResponseWriter) *SSE {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	// A stream has no write deadline: the server's is for answers that are
	// not streams; the turn's timeout bounds a stream.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	f, _ := w.(http.Flusher)
	return &SSE{w: w, f: f}
}

// Event writes one event; name may be "" for a data-only event. data must
// not contain newlines (JSON from encoding/json never does).
func (s *SSE) Event(name string, data []byte) error {
	var b strings.Builder
	if name != "" {
		b.WriteString("event: ")
		b.WriteString(name)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write([]byte(b.String())); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

// Comment writes an SSE comment line, which every event-stream reader
// skips: the keep-alive of the OpenAI and AG-UI wires.
func (s *SSE) Comment(text string) error {
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

// DecodeError is a request body that is not one JSON object of the wire's
// shape. Each wire words it in its own error shape.
type DecodeError struct {
	Kind DecodeKind
	// Field is the offending field (DecodeType, DecodeUnknown), dotted.
	Field string
	// Value is the JSON type found (DecodeType).
	Value string
	// Offset is the byte of a syntax error.
	Offset int64
	// Limit is the body limit (DecodeTooLarge).
	Limit int64
}

// DecodeKind says what is wrong with a body.
type DecodeKind int

// Kinds of DecodeError.
const (
	DecodeEmpty     DecodeKind = iota + 1 // no body
	DecodeTooLarge                        // over the limit (ErrTooLarge)
	DecodeSyntax                          // not JSON
	DecodeNotObject                       // JSON, but not one object
	DecodeType                            // a field of the wrong type
	DecodeUnknown                         // a field the wire does not know
	DecodeText                            // a string with a NUL or invalid UTF-8 (api.CheckText)
	DecodeTruncated                       // the body ends inside its JSON, or could not be read whole
)

// Unwrap is the error's kind: ErrTooLarge for a body over the limit, else
// ErrInvalidRequest.
func (e *DecodeError) Unwrap() error {
	if e.Kind == DecodeTooLarge {
		return ErrTooLarge
	}
	return ErrInvalidRequest
}

func (e *DecodeError) Error() string {
	switch e.Kind {
	case DecodeEmpty:
		return "the body is empty; send a JSON object"
	case DecodeTooLarge:
		return fmt.Sprintf("the body is larger than %d bytes", e.Limit)
	case DecodeSyntax:
		return fmt.Sprintf("invalid JSON at byte %d", e.Offset)
	case DecodeType:
		return fmt.Sprintf("%s has the wrong type (%s)", e.Field, e.Value)
	case DecodeUnknown:
		return fmt.Sprintf("unknown field %q", e.Field)
	case DecodeText:
		return (&api.TextError{Field: e.Field}).Error()
	case DecodeTruncated:
		return "the body ends before its JSON does; send the whole object"
	}
	return "the body must be one JSON object"
}

// DecodeJSON reads one JSON object of at most limit bytes into v: unknown
// fields, trailing data and larger bodies are a *DecodeError. Errors of v's
// own UnmarshalJSON methods are returned as they are.
func DecodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	// The text is checked on the raw bytes, before decoding turns invalid
	// UTF-8 into U+FFFD, and before anything reaches a model or PostgreSQL.
	raw, err := api.ReadBody(w, r, limit)
	var te *api.TextError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &te):
		return &DecodeError{Kind: DecodeText, Field: te.Field}
	case errors.As(err, &tooBig):
		return &DecodeError{Kind: DecodeTooLarge, Limit: tooBig.Limit}
	case err != nil:
		// The client went away or stalled mid-upload: its request, not the
		// box, failed.
		return &DecodeError{Kind: DecodeTruncated}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return &DecodeError{Kind: DecodeTruncated}
		case errors.Is(err, io.EOF):
			return &DecodeError{Kind: DecodeEmpty}
		case errors.As(err, &tooBig):
			return &DecodeError{Kind: DecodeTooLarge, Limit: tooBig.Limit}
		case errors.As(err, &syn):
			return &DecodeError{Kind: DecodeSyntax, Offset: syn.Offset}
		case errors.As(err, &typ):
			if typ.Field == "" {
				return &DecodeError{Kind: DecodeNotObject}
			}
			return &DecodeError{Kind: DecodeType, Field: typ.Field, Value: typ.Value}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return &DecodeError{Kind: DecodeUnknown, Field: strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)}
		case strings.HasPrefix(err.Error(), "json: "):
			return &DecodeError{Kind: DecodeNotObject}
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &DecodeError{Kind: DecodeNotObject}
	}
	return nil
}

// Present reports whether a raw field was sent with a value other than null.
func Present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
