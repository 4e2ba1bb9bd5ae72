package rag

import (
	"errors"
	"os"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParse: any upload's bytes, named .pdf, .txt or .md, give pages of
// valid UTF-8 or ErrUnsupportedType / ErrParseFailed, within the limits,
// never a panic or a crash.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("testdata/returns.pdf"); err == nil {
		f.Add("returns.pdf", b)
	}
	f.Add("bomb.pdf", bombPDF(f, 4<<10))
	f.Add("notes.txt", []byte("Returns within 30 days.\n"))
	f.Add("guide.md", []byte("# Guide\n\n## Part\n\ntext"))
	f.Add("bad.txt", []byte("a\xffb"))
	f.Add("fake.pdf", []byte("%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF"))
	lim := ParseLimits{MaxPageBytes: 256 << 10, MaxDocumentBytes: 1 << 20, MaxTextBytes: 1 << 20, Timeout: 5 * time.Second}
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		head := b
		if len(head) > 1024 {
			head = head[:1024]
		}
		kind, err := fileKind(name, head)
		if err != nil {
			if !errors.Is(err, ErrUnsupportedType) {
				t.Fatalf("fileKind: %v", err)
			}
			return
		}
		pages, err := parse(kind, b, lim)
		if err != nil {
			if !errors.Is(err, ErrParseFailed) {
				t.Fatalf("parse: %v", err)
			}
			return
		}
		for _, p := range pages {
			if !utf8.ValidString(p.text) {
				t.Fatalf("page %d is not UTF-8", p.number)
			}
			_ = splitText(p.text, 1200, 200, kind == kindMarkdown)
		}
	})
}
