package stores

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzMemoryPath: a path ValidatePath takes is clean (no empty, "." or ".."
// segment, no backslash, control character or invalid UTF-8), and a prefix
// NormalizePrefix takes ends with one slash.
func FuzzMemoryPath(f *testing.F) {
	for _, s := range []string{"/releases/versioning.md", "/a/../b", "//x", "/a\\b", "/a/./b", "/\xff", "/x/", "/", "/é/ü.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidatePath("path", p) == nil {
			if !utf8.ValidString(p) || strings.ContainsAny(p, "\\\x00~") || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
				t.Fatalf("took %q", p)
			}
			for _, seg := range strings.Split(p[1:], "/") {
				if seg == "" || seg == "." || seg == ".." {
					t.Fatalf("took %q (segment %q)", p, seg)
				}
			}
		}
		if n, err := NormalizePrefix("path_prefix", p); err == nil && (!strings.HasSuffix(n, "/") || strings.HasSuffix(n, "//")) {
			t.Fatalf("prefix %q normalized to %q", p, n)
		}
	})
}

// FuzzLearningProtocol: any report or learning answer of the model is a
// valid answer or an error, never a panic.
func FuzzLearningProtocol(f *testing.F) {
	f.Add(`{"useful":true,"report":"Tagging needs the release branch."}`)
	f.Add(`{"useful":false,"report":""}`)
	f.Add(`{"changes":[{"op":"create","path":"/a.md","summary":"s","content":"c","rationale":"r","evidence_session_ids":["s1"]}]}`)
	f.Add("{\"useful\":true,\"report\":\"\xff\"}")
	f.Fuzz(func(t *testing.T, out string) {
		_, _ = parseReport(out)
		_, _ = parseLearning(out, map[string]bool{"/a.md": true}, map[string]bool{"s1": true}, 1, 10)
	})
}
