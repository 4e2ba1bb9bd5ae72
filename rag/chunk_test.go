package rag

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitTextKeepsBoundariesAndOverlap(t *testing.T) {
	t.Parallel()
	para := func(n int, word string) string { return strings.TrimSpace(strings.Repeat(word+" ", n)) + "." }
	text := "# Returns\n\n" + para(30, "alpha") + "\n\n" + para(30, "beta") + "\n\n## Refunds\n\n" + para(30, "gamma")
	chunks := splitText(text, 200, 40, true)
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > 200 || n == 0 {
			t.Fatalf("chunk %d has %d characters", i, n)
		}
	}
	if !strings.HasPrefix(chunks[0], "# Returns") {
		t.Fatalf("first chunk %q", chunks[0])
	}
	joined := strings.Join(chunks, " ")
	for _, w := range []string{"alpha", "beta", "gamma", "## Refunds"} {
		if !strings.Contains(joined, w) {
			t.Fatalf("%q lost: %q", w, chunks)
		}
	}
	// A heading starts a chunk with what follows it, not the end of the one before.
	found := false
	for _, c := range chunks {
		if strings.HasPrefix(c, "## Refunds") {
			found = true
		}
		if strings.HasSuffix(c, "##") {
			t.Fatalf("a heading was cut from its text: %q", c)
		}
	}
	if !found {
		t.Fatalf("no chunk starts at the heading: %q", chunks)
	}
	// Words are never cut, and consecutive chunks overlap.
	long := strings.Repeat("word ", 500)
	chunks = splitText(long, 100, 30, false)
	for i, c := range chunks {
		for _, w := range strings.Fields(c) {
			if w != "word" {
				t.Fatalf("chunk %d cut a word: %q", i, w)
			}
		}
	}
	if len(chunks) < 6 || utf8.RuneCountInString(chunks[1]) < 60 {
		t.Fatalf("%d chunks: %q", len(chunks), chunks[:2])
	}
	// A text without any separator is cut at the size, losing nothing.
	blob := strings.Repeat("é", 250)
	chunks = splitText(blob, 100, 0, false)
	if strings.Join(chunks, "") != blob || len(chunks) != 3 {
		t.Fatalf("blob chunks: %d", len(chunks))
	}
	if got := splitText("short", 100, 10, false); len(got) != 1 || got[0] != "short" {
		t.Fatalf("short: %q", got)
	}
	if got := splitText(" \n\n ", 100, 10, false); len(got) != 0 {
		t.Fatalf("blank: %q", got)
	}
}

func TestFileKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, head, kind string
	}{
		{"a.txt", "hello", kindText},
		{"a.MD", "# hi", kindMarkdown},
		{"a.markdown", "# hi", kindMarkdown},
		{"a.pdf", "%PDF-1.7\n", kindPDF},
		{"a.pdf", "hello", ""},
		{"a.txt", "%PDF-1.7", ""},
		{"a.txt", "\xff\xfe\x00h", ""},
		{"a.docx", "PK", ""},
		{"a", "x", ""},
	} {
		kind, err := fileKind(tc.name, []byte(tc.head))
		if kind != tc.kind || (tc.kind == "" && !errors.Is(err, ErrUnsupportedType)) {
			t.Errorf("%s %q: %q %v, want %q", tc.name, tc.head, kind, err, tc.kind)
		}
	}
	// A sniffed prefix may end inside a multi-byte character.
	if _, err := fileKind("a.txt", []byte("café")[:4]); err != nil {
		t.Errorf("cut rune: %v", err)
	}
}

func TestParseRejectsTextlessFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind string
		b    string
	}{
		{kindText, "   \n\t"},
		{kindText, "bad \xff utf8"},
		{kindPDF, "%PDF-1.4 garbage"},
	} {
		if _, err := parse(tc.kind, []byte(tc.b), ParseLimits{}); !errors.Is(err, ErrParseFailed) {
			t.Errorf("%s %q: %v", tc.kind, tc.b, err)
		}
	}
	pages, err := parse(kindText, []byte("\ufeffhello"), ParseLimits{})
	if err != nil || pages[0].text != "hello" {
		t.Fatalf("BOM: %+v %v", pages, err)
	}
}

func TestDecodeFloat4Array(t *testing.T) {
	t.Parallel()
	// '{1.5,-2}'::real[] in binary: ndim 1, no nulls, oid 700, len 2, lbound 1, then (len, value) pairs.
	b := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 188, 0, 0, 0, 2, 0, 0, 0, 1,
		0, 0, 0, 4, 0x3f, 0xc0, 0, 0, 0, 0, 0, 4, 0xc0, 0, 0, 0}
	dst := make([]float32, 2)
	if err := decodeFloat4Array(b, dst); err != nil || dst[0] != 1.5 || dst[1] != -2 {
		t.Fatalf("%v %v", dst, err)
	}
	if err := decodeFloat4Array(b, make([]float32, 3)); err == nil {
		t.Fatal("length mismatch accepted")
	}
	if err := decodeFloat4Array(b[:10], dst); err == nil {
		t.Fatal("short array accepted")
	}
}
