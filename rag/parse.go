package rag

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// File kinds an upload takes.
const (
	kindText     = "text/plain"
	kindMarkdown = "text/markdown"
	kindPDF      = "application/pdf"
)

// fileKind names the kind of an upload from its file name and first bytes.
// Errors: ErrUnsupportedType.
func fileKind(name string, head []byte) (string, error) {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".pdf":
		if !bytes.HasPrefix(bytes.TrimLeft(head, "\x00\t\r\n "), []byte("%PDF-")) {
			return "", fmt.Errorf("%w: %s does not start like a PDF file", ErrUnsupportedType, clip(name, 100))
		}
		return kindPDF, nil
	case ".txt", ".md", ".markdown":
		if bytes.HasPrefix(head, []byte("%PDF-")) || bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(trimPartialRune(head)) {
			return "", fmt.Errorf("%w: %s is not UTF-8 text", ErrUnsupportedType, clip(name, 100))
		}
		if ext == ".txt" {
			return kindText, nil
		}
		return kindMarkdown, nil
	}
	return "", fmt.Errorf("%w: %q; upload .txt, .md or .pdf", ErrUnsupportedType, clip(ext, 20))
}

// trimPartialRune drops an incomplete UTF-8 sequence cut at the end of a
// sniffed prefix.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// page is the text of one page (PDF) or of a whole text file (number 0).
type page struct {
	number int
	text   string
}

// parse extracts text. Errors: ErrParseFailed.
func parse(kind string, b []byte) ([]page, error) {
	switch kind {
	case kindText, kindMarkdown:
		if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			return nil, fmt.Errorf("%w: the file is not UTF-8 text", ErrParseFailed)
		}
		text := strings.TrimPrefix(string(b), "\ufeff")
		if strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("%w: the file holds no text", ErrParseFailed)
		}
		return []page{{text: text}}, nil
	case kindPDF:
		return parsePDF(b)
	}
	return nil, fmt.Errorf("%w: unknown kind %s", ErrParseFailed, kind)
}

// parsePDF extracts the text of each page. The PDF reader panics on some
// malformed files; that is a parse failure, not a crash.
func parsePDF(b []byte) (pages []page, err error) {
	defer func() {
		if r := recover(); r != nil {
			pages, err = nil, fmt.Errorf("%w: malformed PDF", ErrParseFailed)
		}
	}()
	// The reader's own error messages can quote bytes of the file, so
	// they are not passed on: errors reach logs and job history.
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a readable PDF (encrypted, damaged or not a PDF)", ErrParseFailed)
	}
	total := 0
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		text := pageText(p.Content().Text)
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		total += len(strings.TrimSpace(text))
		pages = append(pages, page{number: i, text: text})
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: the PDF holds no extractable text (a scan needs OCR first)", ErrParseFailed)
	}
	return pages, nil
}

// pageText lays a page's text runs out in reading order as the file draws
// them: a new line where the baseline moves, a space where a gap opens
// between runs on one line.
func pageText(runs []pdf.Text) string {
	var sb strings.Builder
	for i, t := range runs {
		if i > 0 {
			prev := runs[i-1]
			switch {
			case math.Abs(t.Y-prev.Y) > max(1, prev.FontSize/3):
				sb.WriteByte('\n')
			case t.X-(prev.X+prev.W) > max(0.5, prev.FontSize/5) && !strings.HasSuffix(prev.S, " ") && !strings.HasPrefix(t.S, " "):
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(t.S)
	}
	return sb.String()
}
