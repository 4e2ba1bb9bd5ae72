package rag

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stackbone/box/fault"
)

// BombPDF is exported to the package's outside tests.
var BombPDF = bombPDF

// bombPDF builds a small PDF whose one page holds a compressed content
// stream that inflates to about textBytes of text runs: the shape of the
// upload that took a box down.
func bombPDF(t testing.TB, textBytes int) []byte {
	t.Helper()
	var content bytes.Buffer
	content.WriteString("BT /F1 12 Tf 72 720 Td\n")
	line := "(" + strings.Repeat("A", 200) + ") Tj\n"
	for content.Len() < textBytes {
		content.WriteString(line)
	}
	content.WriteString("ET\n")
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(content.Bytes())
	zw.Close()

	var b bytes.Buffer
	var offs []int
	obj := func(body string) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), body)
	}
	b.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>")
	obj(fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.Bytes()))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}

// A 8 MB content stream in a few KB of PDF fails the document with its
// reason, quickly and without the reader's gigabyte of runs.
func TestPDFBombIsBounded(t *testing.T) {
	t.Parallel()
	bomb := bombPDF(t, 8<<20)
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes, want a small file", len(bomb))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	began := time.Now()
	_, err := parse(kindPDF, bomb, ParseLimits{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrParseFailed) || !strings.Contains(err.Error(), "page 1 inflates to over") {
		t.Fatalf("err = %v, want a parse failure naming the inflated page", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("parsing the bomb allocated %d MB", alloc>>20)
	}
	t.Logf("refused in %s", time.Since(began))

	// The same shape under the limit still parses, and each limit names itself.
	small := bombPDF(t, 4<<10)
	if pages, err := parse(kindPDF, small, ParseLimits{}); err != nil || !strings.HasPrefix(pages[0].text, "AAAA") {
		t.Fatalf("a small page: %v", err)
	}
	for _, tc := range []struct {
		lim  ParseLimits
		want string
	}{
		{ParseLimits{MaxRunsPerPage: 100}, "text runs; the limit is 100"},
		{ParseLimits{MaxTextBytes: 1 << 10}, "of text; the limit is"},
		{ParseLimits{MaxDocumentBytes: 1 << 10}, "the PDF inflates to over"},
		{ParseLimits{Timeout: time.Nanosecond}, "parsing took longer than"},
	} {
		_, err := parse(kindPDF, small, tc.lim)
		if !errors.Is(err, ErrParseFailed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.lim, err, tc.want)
		}
	}
}

type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/var/tmp/stackbone-upload-1", Err: syscall.ENOSPC}
}

// A full disk is the box's failure (5xx), a cut upload the client's (4xx),
// and neither message carries a path or the OS's text.
func TestUploadCopyTellsBoxFailuresFromClientFailures(t *testing.T) {
	t.Parallel()
	_, err := copyUpload(fullDisk{}, strings.NewReader("hello"))
	if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "/var/tmp") || strings.Contains(err.Error(), "no space") {
		t.Fatalf("full disk: %v", err)
	}
	if k := fault.KindOf(err); k != fault.Unavailable {
		t.Fatalf("full disk is a %v error, not unavailable", k)
	}
	_, err = copyUpload(io.Discard, io.MultiReader(strings.NewReader("he"), iotest.ErrReader(errors.New("read tcp 10.0.0.1:4242: connection reset"))))
	if !errors.Is(err, ErrInvalidRequest) || strings.Contains(err.Error(), "10.0.0.1") {
		t.Fatalf("cut upload: %v", err)
	}
}

// Spool files a killed box left are swept; fresh ones (a live upload) stay.
func TestSweepSpool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, fresh := filepath.Join(dir, "stackbone-upload-old"), filepath.Join(dir, "stackbone-upload-new")
	os.WriteFile(old, []byte("x"), 0o600)
	os.WriteFile(fresh, []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "other"), []byte("x"), 0o600)
	past := time.Now().Add(-2 * time.Hour)
	os.Chtimes(old, past, past)
	os.Chtimes(filepath.Join(dir, "other"), past, past)
	if n, err := sweepSpool(dir, time.Hour); err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	for name, want := range map[string]bool{old: false, fresh: true, filepath.Join(dir, "other"): true} {
		if _, err := os.Stat(name); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", name, err == nil, want)
		}
	}
}
