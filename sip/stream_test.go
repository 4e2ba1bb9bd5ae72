package sip

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
)

// The TCP framing hands sipgo whole valid messages however the stream cuts
// them (pipelined in one write, one message across writes), keep-alives
// included, and answers a malformed request in the middle with 400 without
// losing the messages after it.
func TestStrictStreamFraming(t *testing.T) {
	options := func(callID string) string {
		return "OPTIONS sip:100@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5999;branch=z9hG4bK" + callID +
			"\r\nFrom: <sip:a@127.0.0.1>;tag=1\r\nTo: <sip:100@127.0.0.1>\r\nCall-ID: " + callID +
			"\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	}
	bad := strings.Replace(options("bad"), "CSeq: 1 OPTIONS", "CSeq: one OPTIONS", 1)
	first, second := options("one"), options("two")
	writes := []string{"\r\n\r\n" + first + bad + second[:40], second[40:]}

	box, peer := net.Pipe()
	defer peer.Close()
	s := &strictStream{Conn: box, log: slog.New(slog.DiscardHandler), parser: sip.NewParser()}
	answers := make(chan string, 1)
	go func() {
		for _, w := range writes {
			if _, err := peer.Write([]byte(w)); err != nil {
				return
			}
		}
	}()
	go func() {
		_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(peer).ReadString('\n')
		answers <- line
	}()
	want := "\r\n\r\n" + first + second
	got := make([]byte, 0, len(want))
	buf := make([]byte, 64)
	_ = box.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < len(want) {
		n, err := s.Read(buf)
		if err != nil && err != io.EOF {
			t.Fatalf("read after %q: %v", got, err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != want {
		t.Fatalf("sipgo would read %q, want %q", got, want)
	}
	if a := <-answers; !strings.HasPrefix(a, "SIP/2.0 400") {
		t.Fatalf("the malformed request was answered %q", a)
	}
}
