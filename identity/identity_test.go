package identity_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stackbone/box/identity"
)

func TestParseRules(t *testing.T) {
	ok := map[string]identity.Set{
		`{"customerId":"crm/42","email":"ana@example.com"}`: {"customerId": "crm/42", "email": "ana@example.com"},
		`{"contact.email":"a@b.c"}`:                         {"contact.email": "a@b.c"},      // a literal name, not a path
		`{"name":"Jos\u00e9 \u2713"}`:                       {"name": "José ✓"},              // \u escapes
		`{"phoneNumber":" +34 111 "}`:                       {"phoneNumber": " +34 111 "},    // preserved exactly
		`{"Email":"x","email":"y"}`:                         {"Email": "x", "email": "y"},    // case sensitive
		`{"v":"` + strings.Repeat("é", 500) + `"}`:          {"v": strings.Repeat("é", 500)}, // 500 characters
		`{"` + strings.Repeat("n", 100) + `":"x"}`:          {strings.Repeat("n", 100): "x"}, // 100-character name
		``: {},
	}
	for raw, want := range ok {
		got, err := identity.Parse([]byte(raw), nil)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: %v %v, want %v", raw, got, err, want)
		}
	}
	var fields []string
	for i := 0; i < 33; i++ {
		fields = append(fields, fmt.Sprintf(`"f%d":"v"`, i))
	}
	bad := []string{
		`[]`, `"x"`, `{"a":1}`, `{"a":null}`, `{"a":""}`, `{"":"x"}`, `{"a":"x","a":"y"}`, `{"a":{"b":"c"}}`,
		`{"` + strings.Repeat("n", 101) + `":"x"}`, `{"v":"` + strings.Repeat("x", 501) + `"}`, `{"a":"x"} {}`, `{"a":"\u0000"}`,
		"{" + strings.Join(fields, ",") + "}", `{bad json`,
	}
	for _, raw := range bad {
		if _, err := identity.Parse([]byte(raw), nil); !errors.Is(err, identity.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", raw, err)
		}
	}
	if _, err := identity.Parse([]byte("{"+strings.Join(fields[:32], ",")+"}"), nil); err != nil {
		t.Errorf("32 fields: %v", err)
	}
}

func TestScalarCustomerID(t *testing.T) {
	s := " crm/42 "
	set, err := identity.Parse(nil, &s)
	if err != nil || set["customerId"] != " crm/42 " {
		t.Fatalf("%v %v", set, err)
	}
	same := "crm/42"
	if _, err := identity.Parse([]byte(`{"customerId":"crm/42"}`), &same); err != nil {
		t.Fatalf("equal copies: %v", err)
	}
	other := "crm/43"
	if _, err := identity.Parse([]byte(`{"customerId":"crm/42"}`), &other); !errors.Is(err, identity.ErrConflict) {
		t.Fatalf("conflicting copies: %v", err)
	}
	for _, v := range []string{"", strings.Repeat("x", 501)} {
		v := v
		if _, err := identity.Parse(nil, &v); !errors.Is(err, identity.ErrInvalid) {
			t.Errorf("scalar %d chars: %v", len(v), err)
		}
	}
}

func TestSelect(t *testing.T) {
	set := identity.Set{"customerId": "+34111111111", "email": "a@b.c"}
	if s := identity.Select(set, "phoneNumber"); s.Ok() || s.Reason != identity.ReasonNoValue {
		t.Fatalf("a phone-shaped customerId supplied phoneNumber: %+v", s)
	}
	if s := identity.Select(set, "email"); !s.Ok() || s.Value != "a@b.c" || s.Address() != "email=a@b.c" {
		t.Fatalf("email: %+v", s)
	}
	if s := identity.Select(set, ""); s.Ok() || s.Reason != identity.ReasonNoKey || s.Address() != "customerId=+34111111111" {
		t.Fatalf("unbound: %+v %q", s, s.Address())
	}
	// A selected customerId has the same address as the legacy scalar one.
	if identity.Select(set, "customerId").Address() != identity.Select(set, "").Address() {
		t.Fatal("customerId addresses differ")
	}
	// A configured key with a missing value has an address of its own.
	if a := identity.Select(identity.Set{}, "email").Address(); a == "" || a == identity.Select(identity.Set{}, "").Address() {
		t.Fatalf("missing value address %q", a)
	}
}
