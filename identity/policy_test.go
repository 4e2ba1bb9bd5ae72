package identity

import (
	"errors"
	"testing"
)

func TestPolicyAdmit(t *testing.T) {
	t.Parallel()
	fixed := Policy{Allowed: map[string]string{CustomerID: "cust_42"}}
	tenant := Policy{Allowed: map[string]string{CustomerID: "tenant-a:*"}}
	for _, tc := range []struct {
		name string
		p    Policy
		in   Set
		want Set
		err  bool
	}{
		{"trusted names anyone", Policy{}, Set{CustomerID: "x"}, Set{CustomerID: "x"}, false},
		{"fixed fills in", fixed, nil, Set{CustomerID: "cust_42"}, false},
		{"fixed itself", fixed, Set{CustomerID: "cust_42"}, Set{CustomerID: "cust_42"}, false},
		{"fixed, another", fixed, Set{CustomerID: "cust_43"}, nil, true},
		{"fixed, another field", fixed, Set{PhoneNumber: "+1555"}, nil, true},
		{"pattern match", tenant, Set{CustomerID: "tenant-a:7"}, Set{CustomerID: "tenant-a:7"}, false},
		{"pattern miss", tenant, Set{CustomerID: "tenant-b:7"}, nil, true},
		{"pattern names nobody", tenant, nil, nil, true},
		{"no identities allowed", Policy{Allowed: map[string]string{}}, nil, nil, true},
	} {
		got, err := tc.p.Admit(tc.in)
		if tc.err {
			if !errors.Is(err, ErrForbidden) {
				t.Errorf("%s: %v, want ErrForbidden", tc.name, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) || got[CustomerID] != tc.want[CustomerID] {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	for pat, vals := range map[string]map[string]bool{
		"a*":    {"a": true, "abc": true, "b": false},
		"*z":    {"z": true, "xyz": true, "za": false},
		"a*b*c": {"abc": true, "aXbYc": true, "acb": false, "ab": false},
		"exact": {"exact": true, "exact1": false},
	} {
		for v, want := range vals {
			if Match(pat, v) != want {
				t.Errorf("Match(%q, %q) != %v", pat, v, want)
			}
		}
	}
}
