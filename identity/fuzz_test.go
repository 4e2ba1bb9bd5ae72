package identity

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzIdentitiesHeader: any x-stackbone-identities header and scalar give
// an error or a set of valid, NUL-free text within the limits.
func FuzzIdentitiesHeader(f *testing.F) {
	f.Add(`{"customerId":"c1","phoneNumber":"+34600111222"}`, "c1", true)
	f.Add(`{"email":"a@b"}`, "", false)
	f.Add("{\"a\":\"\xff\"}", "", false)
	f.Add(`{"a":"\u0000"}`, "x", true)
	f.Fuzz(func(t *testing.T, header, scalar string, hasScalar bool) {
		var sp *string
		if hasScalar {
			sp = &scalar
		}
		set, err := Parse([]byte(header), sp)
		if err != nil {
			return
		}
		for k, v := range set {
			for _, s := range []string{k, v} {
				if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
					t.Fatalf("admitted %q=%q", k, v)
				}
			}
		}
		_ = Select(set, CustomerID).Address()
		_, _ = Policy{Allowed: map[string]string{CustomerID: "c*"}}.Admit(set)
	})
}
