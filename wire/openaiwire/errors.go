package openaiwire

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/wire"
)

// apiError is OpenAI's error object; Param and Code are null when empty.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`

	kind   fault.Kind
	status int // the kind's (api.Status)
	// final: retrying cannot help (x-should-retry: false), though the
	// status alone would make the official clients retry.
	final bool
}

// Status is the HTTP status of the error.
func (e *apiError) Status() int { return e.status }

type errorBody struct {
	Error *apiError `json:"error"`
}

func newError(kind fault.Kind, typ, code, param, msg string) *apiError {
	e := &apiError{Message: msg, Type: typ, kind: kind, status: api.Status(kind)}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	return e
}

// codes are OpenAI's words for the box's codes where they differ: an agent
// is a model here, and OpenAI's clients know provider_error.
var codes = map[string]string{"agent_not_found": "model_not_found", "provider_failed": "provider_error"}

// classify maps err to the wire's error. ok is false for an internal error.
func classify(err error) (e *apiError, ok bool) {
	var fe *fieldError
	if errors.As(err, &fe) {
		return newError(fault.Invalid, "invalid_request_error", "", fe.param, fe.msg), true
	}
	var de *wire.DecodeError
	if errors.As(err, &de) {
		switch de.Kind {
		case wire.DecodeTooLarge:
			return newError(fault.KindOf(de), "invalid_request_error", "request_too_large", "", de.Error()), true
		case wire.DecodeType, wire.DecodeUnknown, wire.DecodeText:
			return newError(fault.KindOf(de), "invalid_request_error", "", de.Field, de.Error()), true
		}
		return newError(fault.KindOf(de), "invalid_request_error", "", "", de.Error()), true
	}
	te, ok := wire.Classify(err)
	if c, renamed := codes[te.Code]; renamed {
		te.Code = c
	}
	typ := "invalid_request_error"
	if te.Status >= 500 {
		typ = "server_error"
	}
	e = newError(te.Kind, typ, te.Code, "", te.Message)
	e.final = te.Final
	if errors.Is(err, agent.ErrUnknownAgent) {
		e.Param = ptr("model")
	}
	return e, ok
}

// refusal turns the API's authentication refusal into this wire's error.
func refusal(rf *api.Refusal) *apiError {
	switch rf.Kind {
	case fault.Unauthenticated:
		return newError(rf.Kind, "authentication_error", "invalid_api_key", "", rf.Message)
	case fault.Forbidden:
		return newError(rf.Kind, "permission_error", "insufficient_scope", "", rf.Message)
	}
	return newError(rf.Kind, "server_error", rf.Code, "", rf.Message)
}

func writeError(w http.ResponseWriter, e *apiError) { e.Write(w) }

// Write answers the error.
func (e *apiError) Write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.kind == fault.Unauthenticated {
		h.Set("WWW-Authenticate", `Bearer realm="stackbone"`)
	}
	if e.final {
		h.Set("x-should-retry", "false")
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: e})
}

func ptr[T any](v T) *T { return &v }
