// Package wire holds what the text wires (OpenAI, Anthropic, AG-UI) share:
// the session headers, the identities header, and server-sent events.
// Each wire lives in its own package under wire/ and turns its protocol into
// an agent.TurnRequest and the turn's events back into its protocol.
package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
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
}

// Mux is where a wire mounts its routes (an *api.Server or an *http.ServeMux).
type Mux interface {
	Handle(pattern string, h http.Handler)
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
var ErrBadHeaders = errors.New("wire: invalid x-stackbone headers")

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
