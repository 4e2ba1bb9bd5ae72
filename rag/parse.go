package rag

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"
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

// ParseLimits bound what parsing one document may inflate. A PDF is a
// compressed format: a 20 KB file can hold a content stream that inflates to
// megabytes of text runs, and the PDF reader keeps about 150 bytes of memory
// per run, so without these a small upload takes a box down (and, as a job
// rescued after the crash, takes it down again). A document over a limit
// fails for its content (rag_parse_failed) and is not retried.
type ParseLimits struct {
	// MaxPages is the most pages a PDF may have. Default 2000.
	MaxPages int
	// MaxPageBytes bounds one page's inflated content and font maps: the
	// reader's memory for the page grows with it. Default 1 MiB (a dense
	// page of text is tens of KB).
	MaxPageBytes int64
	// MaxDocumentBytes bounds the inflated content of all pages. Default 64 MiB.
	MaxDocumentBytes int64
	// MaxRunsPerPage bounds the text runs of one page. Default 200,000.
	MaxRunsPerPage int
	// MaxTextBytes bounds the text extracted from a document. Default 16 MiB.
	MaxTextBytes int
	// Timeout bounds parsing one document, checked between pages.
	// Default 2 minutes.
	Timeout time.Duration
}

func (l ParseLimits) withDefaults() ParseLimits {
	setDefault(&l.MaxPages, 2000)
	setDefault(&l.MaxRunsPerPage, 200_000)
	setDefault(&l.MaxTextBytes, 16<<20)
	if l.MaxPageBytes <= 0 {
		l.MaxPageBytes = 1 << 20
	}
	if l.MaxDocumentBytes <= 0 {
		l.MaxDocumentBytes = 64 << 20
	}
	if l.Timeout <= 0 {
		l.Timeout = 2 * time.Minute
	}
	return l
}

// parse extracts text within lim. Errors: ErrParseFailed.
func parse(kind string, b []byte, lim ParseLimits) ([]page, error) {
	lim = lim.withDefaults()
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
		return parsePDF(b, lim)
	}
	return nil, fmt.Errorf("%w: unknown kind %s", ErrParseFailed, kind)
}

// parsePDF extracts the text of each page within lim. The PDF reader panics
// on some malformed files; that is a parse failure, not a crash.
func parsePDF(b []byte, lim ParseLimits) (pages []page, err error) {
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
	n := r.NumPage()
	if n > lim.MaxPages {
		return nil, fmt.Errorf("%w: the PDF has %d pages; the limit is %d", ErrParseFailed, n, lim.MaxPages)
	}
	deadline := time.Now().Add(lim.Timeout)
	total, inflated, textBytes := 0, int64(0), 0
	for i := 1; i <= n; i++ {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: parsing took longer than %s (at page %d of %d)", ErrParseFailed, lim.Timeout, i, n)
		}
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		// Measure what the page inflates to, streaming and discarding,
		// before the reader builds its runs from it.
		size, over := pageInflated(p, lim.MaxPageBytes)
		if over {
			return nil, fmt.Errorf("%w: page %d inflates to over %d KiB; the limit is %d KiB", ErrParseFailed, i, lim.MaxPageBytes>>10, lim.MaxPageBytes>>10)
		}
		if inflated += size; inflated > lim.MaxDocumentBytes {
			return nil, fmt.Errorf("%w: the PDF inflates to over %d KiB; the limit is %d KiB", ErrParseFailed, lim.MaxDocumentBytes>>10, lim.MaxDocumentBytes>>10)
		}
		runs := p.Content().Text
		if len(runs) > lim.MaxRunsPerPage {
			return nil, fmt.Errorf("%w: page %d has %d text runs; the limit is %d", ErrParseFailed, i, len(runs), lim.MaxRunsPerPage)
		}
		text := pageText(runs)
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		if textBytes += len(text); textBytes > lim.MaxTextBytes {
			return nil, fmt.Errorf("%w: the PDF holds over %d KiB of text; the limit is %d KiB", ErrParseFailed, lim.MaxTextBytes>>10, lim.MaxTextBytes>>10)
		}
		total += len(strings.TrimSpace(text))
		pages = append(pages, page{number: i, text: text})
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: the PDF holds no extractable text (a scan needs OCR first)", ErrParseFailed)
	}
	return pages, nil
}

// pageInflated counts the bytes a page's content streams and its fonts'
// character maps inflate to, reading at most max+1 of them. over reports a
// page past max.
func pageInflated(p pdf.Page, max int64) (size int64, over bool) {
	var streams []pdf.Value
	c := p.V.Key("Contents")
	if c.Kind() == pdf.Array {
		for i := 0; i < c.Len(); i++ {
			streams = append(streams, c.Index(i))
		}
	} else {
		streams = append(streams, c)
	}
	fonts := p.Resources().Key("Font")
	for _, name := range fonts.Keys() {
		streams = append(streams, fonts.Key(name).Key("ToUnicode"))
	}
	for _, v := range streams {
		if v.Kind() != pdf.Stream {
			continue
		}
		rc := v.Reader()
		n, _ := io.Copy(io.Discard, io.LimitReader(rc, max-size+1))
		rc.Close()
		if size += n; size > max {
			return size, true
		}
	}
	return size, false
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
