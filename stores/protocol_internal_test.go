package stores

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseLearningIsAllOrNothing(t *testing.T) {
	t.Parallel()
	existing := map[string]bool{"/a.md": true, "/b.md": true, "/c.md": true}
	sessions := map[string]bool{"ses_1": true, "ses_2": true}
	ok := `{"changes":[
		{"op":"add","path":"/n.md","summary":"N.","content":"New.","rationale":"r","evidence_session_ids":["ses_1"]},
		{"op":"refine","path":"/a.md","content":"A2.","rationale":"r","evidence_session_ids":["ses_2","ses_2"]},
		{"op":"merge","paths":["/b.md","/c.md"],"path":"/b.md","summary":"B.","content":"BC.","rationale":"r","evidence_session_ids":["ses_1"]}],
		"summary":"did things"}`
	ans, err := parseLearning(ok, existing, sessions, 3, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.changes) != 3 || ans.changes[1].Summary != "" || !slices.Equal(ans.changes[1].Evidence, []string{"ses_2"}) ||
		!slices.Equal(ans.changes[2].Sources, []string{"/b.md", "/c.md"}) {
		t.Fatalf("parsed: %+v", ans)
	}
	if _, err := parseLearning(`{"changes":[],"summary":"Nothing new."}`, existing, sessions, 3, 20); err != nil {
		t.Fatalf("an empty answer: %v", err)
	}
	chg := func(s string) string { return `{"changes":[` + s + `],"summary":"s"}` }
	bad := map[string]string{
		"prose":              `Sure! {"changes":[],"summary":"s"}`,
		"fence":              "```json\n{\"changes\":[],\"summary\":\"s\"}\n```",
		"trailing":           `{"changes":[],"summary":"s"} ok`,
		"unknown key":        `{"changes":[],"summary":"s","mood":"happy"}`,
		"no summary":         `{"changes":[]}`,
		"empty summary":      `{"changes":[],"summary":" "}`,
		"no changes":         `{"summary":"s"}`,
		"unknown op":         chg(`{"op":"rewrite","path":"/a.md","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"no rationale":       chg(`{"op":"retire","path":"/a.md","evidence_session_ids":["ses_1"]}`),
		"long rationale":     chg(`{"op":"retire","path":"/a.md","rationale":"` + strings.Repeat("r", 1001) + `","evidence_session_ids":["ses_1"]}`),
		"no evidence":        chg(`{"op":"retire","path":"/a.md","rationale":"r","evidence_session_ids":[]}`),
		"foreign evidence":   chg(`{"op":"retire","path":"/a.md","rationale":"r","evidence_session_ids":["ses_9"]}`),
		"add existing":       chg(`{"op":"add","path":"/a.md","summary":"S","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"add bad path":       chg(`{"op":"add","path":"/x/../y.md","summary":"S","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"add no summary":     chg(`{"op":"add","path":"/y.md","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"add big content":    chg(`{"op":"add","path":"/y.md","summary":"S","content":"` + strings.Repeat("x", MaxContentBytes+1) + `","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"add long summary":   chg(`{"op":"add","path":"/y.md","summary":"` + strings.Repeat("s", 513) + `","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"refine unshown":     chg(`{"op":"refine","path":"/z.md","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"retire with text":   chg(`{"op":"retire","path":"/a.md","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"merge one":          chg(`{"op":"merge","paths":["/a.md"],"path":"/a.md","summary":"S","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"merge twice":        chg(`{"op":"merge","paths":["/a.md","/a.md"],"path":"/a.md","summary":"S","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"merge into other":   chg(`{"op":"merge","paths":["/a.md","/b.md"],"path":"/c.md","summary":"S","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"path in two":        chg(`{"op":"retire","path":"/a.md","rationale":"r","evidence_session_ids":["ses_1"]},{"op":"refine","path":"/a.md","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`),
		"merge source twice": chg(`{"op":"merge","paths":["/a.md","/b.md"],"path":"/a.md","summary":"S","content":"C","rationale":"r","evidence_session_ids":["ses_1"]},{"op":"retire","path":"/b.md","rationale":"r","evidence_session_ids":["ses_1"]}`),
	}
	for name, out := range bad {
		if _, err := parseLearning(out, existing, sessions, 3, 20); !errors.Is(err, ErrInvalidModelOutput) {
			t.Errorf("%s: %v", name, err)
		} else if strings.Contains(err.Error(), "rrrr") || strings.Contains(err.Error(), "xxxx") {
			t.Errorf("%s: the error echoes content: %v", name, err)
		}
	}
	many := make([]string, 21)
	for i := range many {
		many[i] = `{"op":"add","path":"/n` + strings.Repeat("x", i+1) + `.md","summary":"S","content":"C","rationale":"r","evidence_session_ids":["ses_1"]}`
	}
	if _, err := parseLearning(chg(strings.Join(many, ",")), existing, sessions, 3, 20); !errors.Is(err, ErrInvalidModelOutput) {
		t.Errorf("21 changes: %v", err)
	}
	if _, err := parseLearning(chg(many[0]), existing, sessions, MaxMemories, 20); !errors.Is(err, ErrInvalidModelOutput) {
		t.Errorf("past the store limit: %v", err)
	}
}

func TestParseReport(t *testing.T) {
	t.Parallel()
	r, err := parseReport(`{"useful": false, "report": " Nothing new. "}`)
	if err != nil || r.useful || r.report != "Nothing new." {
		t.Fatalf("%+v %v", r, err)
	}
	for _, out := range []string{`{"useful": true}`, `{"report": "x"}`, `{"useful": true, "report": ""}`, `{"useful": true, "report": "x", "extra": 1}`,
		`{"useful": true, "report": "` + strings.Repeat("é", MaxReportChars+1) + `"}`, `no`} {
		if _, err := parseReport(out); !errors.Is(err, ErrInvalidModelOutput) {
			t.Errorf("%q: %v", out[:min(len(out), 40)], err)
		}
	}
}

func TestPathRules(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/a.md", "/releases/versioning.md", "/a/b/c/d.txt", "/ünïcode/ñ.md", "/with space/x y.md", "/a.b/c-d_e.md"} {
		if err := ValidatePath("path", p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", "a.md", "/", "/a/", "//a.md", "/a//b.md", "/./a.md", "/a/../b.md", "/..", "/~/a.md", "/a~b.md", `/a\b.md`,
		"/a\x00b", "/a\tb", "/" + strings.Repeat("x", 256), "/" + strings.Repeat("a/", 600) + "x", "/\xff.md"} {
		if err := ValidatePath("path", p); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%q accepted", p)
		}
	}
	for in, want := range map[string]string{"": "/", "/": "/", "/releases": "/releases/", "/releases/": "/releases/", "/a/b": "/a/b/"} {
		if got, err := NormalizePrefix("path_prefix", in); err != nil || got != want {
			t.Errorf("prefix %q: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"releases/", "/a//", "/../", "/a/~/"} {
		if _, err := NormalizePrefix("path_prefix", in); err == nil {
			t.Errorf("prefix %q accepted", in)
		}
	}
	if f, p := folders("/a/b/c.md"); !slices.Equal(f, []string{"/a/", "/a/b/"}) || !slices.Equal(p, []string{"/", "/a/"}) {
		t.Errorf("folders: %v %v", f, p)
	}
	if f, _ := folders("/c.md"); len(f) != 0 {
		t.Errorf("root memory folders: %v", f)
	}
	if prefixEnd("/releases/") != "/releases0" {
		t.Error("prefixEnd")
	}
}

func TestSlugify(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Release policy":           "release-policy",
		"  Política de versiones ": "politica-de-versiones",
		"Q3 / Q4 -- plans!":        "q3-q4-plans",
		"日本語":                      "store",
		"learned support":          "learned-support",
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Slugify(strings.Repeat("ab ", 50)); len(got) > 60 || strings.HasSuffix(got, "-") {
		t.Errorf("long slug %q", got)
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	want := []string{"1m0s", "2m0s", "4m0s", "8m0s", "16m0s", "32m0s", "1h0m0s", "1h0m0s"}
	for i, w := range want {
		if got := DefaultRetryDelay(i + 1).String(); got != w {
			t.Errorf("retry %d: %s, want %s", i+1, got, w)
		}
	}
}
