// Package identity reads who a conversation is with: the structured
// identities a client supplies (x-stackbone-identities, forwardedProps.identities)
// and the scalar customer identity of each wire (OpenAI `user`, Anthropic
// `metadata.user_id`, AG-UI `forwardedProps.customerId`), and selects the one
// an agent's fixed identity key names.
//
//	set, err := identity.Parse(header, scalarCustomerID, hasScalar)
//	sel := identity.Select(set, fixedKey)   // sel.Value, or sel.Reason why not
//	addr := sel.Address()                    // part of the session id
package identity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stackbone/box/fault"
)

// Errors of Parse; every one is a 400 at the edge.
var (
	ErrInvalid  = fault.New(fault.Invalid, "invalid_identities", "identity: invalid identities")
	ErrConflict = fault.New(fault.Invalid, "invalid_identities", "identity: conflicting customerId")
)

// Limits of the identity map.
const (
	MaxFields     = 32
	MaxNameChars  = 100
	MaxValueChars = 500
)

// CustomerID is the field the scalar customer identity fills.
const CustomerID = "customerId"

// PhoneNumber is the field phone calls fill; a phone-shaped customerId never
// supplies it.
const PhoneNumber = "phoneNumber"

// Set is the identities of one request: literal field names (case
// sensitive, not object paths) to opaque values, preserved exactly.
type Set map[string]string

// Parse builds the set from a JSON object (the header or forwardedProps
// member; empty means none) and the wire's scalar customer identity. A
// scalar and a map customerId that differ are ErrConflict.
func Parse(raw []byte, scalar *string) (Set, error) {
	set := Set{}
	if len(bytes.TrimSpace(raw)) > 0 {
		var err error
		if set, err = parseMap(raw); err != nil {
			return nil, err
		}
	}
	if scalar != nil {
		if err := checkValue(CustomerID, *scalar); err != nil {
			return nil, err
		}
		if v, ok := set[CustomerID]; ok && v != *scalar {
			return nil, fmt.Errorf("%w: the scalar customer identity and identities.customerId differ", ErrConflict)
		}
		set[CustomerID] = *scalar
	}
	return set, nil
}

// ParseJSONValue is Parse for a decoded forwardedProps member: nil or a JSON
// object of strings.
func ParseJSONValue(v json.RawMessage, scalar *string) (Set, error) {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		v = nil
	}
	return Parse(v, scalar)
}

func parseMap(raw []byte) (Set, error) {
	// encoding/json turns invalid bytes into U+FFFD: two identities that
	// differ only in such bytes would name one person. Refuse them.
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: identities must be UTF-8 text", ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: identities must be a JSON object of strings", ErrInvalid)
	}
	set := Set{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: identities must be a JSON object of strings", ErrInvalid)
		}
		name := tok.(string)
		if strings.IndexByte(name, 0) >= 0 {
			return nil, fmt.Errorf("%w: a field name must not contain NUL", ErrInvalid)
		}
		if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameChars {
			return nil, fmt.Errorf("%w: a field name must be 1 to %d characters", ErrInvalid, MaxNameChars)
		}
		if _, dup := set[name]; dup {
			return nil, fmt.Errorf("%w: field %q appears twice", ErrInvalid, clip(name))
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: identities must be a JSON object of strings", ErrInvalid)
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: the value of %q must be a string", ErrInvalid, clip(name))
		}
		if err := checkValue(name, s); err != nil {
			return nil, err
		}
		set[name] = s
		if len(set) > MaxFields {
			return nil, fmt.Errorf("%w: at most %d fields", ErrInvalid, MaxFields)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: identities must be a JSON object of strings", ErrInvalid)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: identities must be one JSON object", ErrInvalid)
	}
	return set, nil
}

func checkValue(name, v string) error {
	if v == "" {
		return fmt.Errorf("%w: the value of %q must not be empty", ErrInvalid, clip(name))
	}
	if utf8.RuneCountInString(v) > MaxValueChars || !utf8.ValidString(v) {
		return fmt.Errorf("%w: the value of %q must be valid text of at most %d characters", ErrInvalid, clip(name), MaxValueChars)
	}
	if bytes.IndexByte([]byte(v), 0) >= 0 {
		return fmt.Errorf("%w: the value of %q must not contain NUL", ErrInvalid, clip(name))
	}
	return nil
}

// Selection is the identity one agent uses for memory in one conversation.
type Selection struct {
	// Key is the agent's fixed identity key, "" when it has none.
	Key string
	// Value is the selected identity; "" when there is none.
	Value string
	// Reason says why there is no value (for run history and logs).
	Reason string
	// legacy is the scalar customerId of an unbound agent.
	legacy string
}

// Reasons for running without memory.
const (
	ReasonNoKey   = "the agent has no fixed identity key"
	ReasonNoValue = "the identity field named by the agent's key was not supplied"
)

// Select picks the value of the agent's fixed key. Only that literal field
// supplies it: a customerId never stands in for phoneNumber.
func Select(set Set, key string) Selection {
	if key == "" {
		return Selection{Reason: ReasonNoKey, legacy: set[CustomerID]}
	}
	if v, ok := set[key]; ok {
		return Selection{Key: key, Value: v}
	}
	return Selection{Key: key, Reason: ReasonNoValue}
}

// Ok reports whether memory can be scoped to a person.
func (s Selection) Ok() bool { return s.Value != "" }

// Address is the identity part of a session id: the selected key and value;
// for a configured key with no value, an address of its own; for an unbound
// agent, the scalar customerId (legacy addresses), else "".
func (s Selection) Address() string {
	switch {
	case s.Value != "":
		return s.Key + "=" + s.Value
	case s.Key != "":
		return "missing:" + s.Key
	case s.legacy != "":
		return CustomerID + "=" + s.legacy
	}
	return ""
}

// SessionAddress is the identity part of a session id for a conversation
// held under policy p, where admitted is what p.Admit returned. It is
// sel.Address(), except that a restricted key's conversation without a
// selected person (the agent's key was not among the identities, or the
// agent has none) is addressed by every identity the key admitted: two
// people holding keys restricted to different persons never continue one
// conversation by sending the same session key.
func (p Policy) SessionAddress(sel Selection, admitted Set) string {
	addr := sel.Address()
	if !p.Restricted() || sel.Value != "" || sel.legacy != "" {
		return addr
	}
	fields := slices.Sorted(maps.Keys(admitted))
	var b strings.Builder
	b.WriteString(addr)
	b.WriteString("|admitted")
	for _, f := range fields {
		b.WriteString("&")
		b.WriteString(url.QueryEscape(f))
		b.WriteString("=")
		b.WriteString(url.QueryEscape(admitted[f]))
	}
	return b.String()
}

func clip(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return string([]rune(s)[:40]) + "…"
}
