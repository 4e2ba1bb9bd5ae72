package identity

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/stackbone/box/fault"
)

// ErrForbidden: the caller's key may not act for that identity (403 at
// every edge).
var ErrForbidden = fault.New(fault.Forbidden, "identity_forbidden", "identity: this key may not act for that identity")

// Policy is which persons a caller may act for: the trust model of API
// keys. A backend's key is trusted to name any identity (the zero Policy).
// A key handed to a browser or a customer-facing app is restricted: it
// carries, per identity field, the one value it is ("cust_42") or a pattern
// of values it may name ("tenant-a:*", where * matches any run of
// characters), so whoever holds it can reach no other person's memory.
type Policy struct {
	// Allowed maps an identity field to its fixed value or pattern. Nil:
	// the key is trusted to name any identity.
	Allowed map[string]string
}

// Restricted reports a key that may act only for the identities it allows.
func (p Policy) Restricted() bool { return p.Allowed != nil }

// Admit checks the identities a request names against the policy and
// completes them: a field the request names must be one the policy allows,
// with a matching value; a field the policy fixes (no *) is filled in when
// the request leaves it out. A restricted request must end up naming an
// identity, so it never shares the anonymous conversations of others.
// Errors: ErrForbidden.
func (p Policy) Admit(set Set) (Set, error) {
	if !p.Restricted() {
		return set, nil
	}
	out := Set{}
	for field, v := range set {
		if err := p.AdmitValue(field, v); err != nil {
			return nil, err
		}
		out[field] = v
	}
	for field, pat := range p.Allowed {
		if _, named := out[field]; !named && !strings.Contains(pat, "*") {
			out[field] = pat
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the key is restricted to %s; name one", ErrForbidden, p.describe())
	}
	return out, nil
}

// AdmitValue checks one identity: field must be allowed and value match it.
// Errors: ErrForbidden.
func (p Policy) AdmitValue(field, value string) error {
	if !p.Restricted() {
		return nil
	}
	pat, ok := p.Allowed[field]
	if !ok {
		return fmt.Errorf("%w: the key may not name %s (it is restricted to %s)", ErrForbidden, clip(field), p.describe())
	}
	if !Match(pat, value) {
		return fmt.Errorf("%w: the key may not act for that %s", ErrForbidden, clip(field))
	}
	return nil
}

// describe names the fields a restricted key allows, never their values.
func (p Policy) describe() string {
	if len(p.Allowed) == 0 {
		return "no identity"
	}
	fields := make([]string, 0, len(p.Allowed))
	for f := range p.Allowed {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	return "its own " + strings.Join(fields, ", ")
}

// Match reports whether value matches pattern, where * matches any run of
// characters (also none) and everything else matches itself.
func Match(pattern, value string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == value
	}
	if !strings.HasPrefix(value, parts[0]) {
		return false
	}
	value = value[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(value, mid)
		if i < 0 {
			return false
		}
		value = value[i+len(mid):]
	}
	return strings.HasSuffix(value, last)
}

type policyCtx struct{}

// WithPolicy returns ctx carrying the caller's policy; the HTTP edge sets
// it from the authenticated key.
func WithPolicy(ctx context.Context, p Policy) context.Context {
	return context.WithValue(ctx, policyCtx{}, p)
}

// PolicyFrom returns the caller's policy. Work the box starts itself (an
// inbound phone call, a job) carries none and is trusted: its identities
// come from the network (the caller's number), not from a key holder.
func PolicyFrom(ctx context.Context) Policy {
	p, _ := ctx.Value(policyCtx{}).(Policy)
	return p
}
