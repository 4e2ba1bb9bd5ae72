package api

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckText: whatever JSON CheckText passes decodes to text PostgreSQL
// stores (valid UTF-8, no NUL) in every string, keys included.
func FuzzCheckText(f *testing.F) {
	f.Add(`{"a":"b","c":[1,"d",{"e":null}]}`)
	f.Add(`{"a":"\u0000"}`)
	f.Add("{\"a\":\"\xff\"}")
	f.Add(`{"a":"\\u0000"}`)
	f.Fuzz(func(t *testing.T, body string) {
		err := CheckText([]byte(body))
		if !json.Valid([]byte(body)) {
			return
		}
		if !utf8.ValidString(body) {
			if err == nil {
				t.Fatalf("passed invalid UTF-8: %q", body)
			}
			return
		}
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(body), &v) != nil {
			return
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if strings.IndexByte(x, 0) >= 0 {
					t.Fatalf("passed a NUL in %q", body)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}
