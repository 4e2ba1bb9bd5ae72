package sip_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zaf/g711"

	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/voice"
)

// The tests in this file drive the box with SIPp (Debian's sip-tester), an
// independent SIP implementation, with the scenarios in testdata/sipp: what
// carriers, PBXs and softphones send.

// sipp runs one SIPp scenario (one call) against addr over transport
// ("udp" or "tcp") with the scenario variables vars, and returns an error
// when SIPp counts the call failed (an unexpected or missing message, a
// failed check).
func sipp(t *testing.T, addr, scenario, transport string, vars map[string]string) error {
	t.Helper()
	bin, err := exec.LookPath("sipp")
	if err != nil {
		t.Skip("sipp is not installed (Debian package sip-tester; scripts/test installs it)")
	}
	sf, err := filepath.Abs(filepath.Join("testdata", "sipp", scenario))
	if err != nil {
		t.Fatal(err)
	}
	mode := "u1"
	if transport == "tcp" {
		mode = "t1"
	}
	dir := t.TempDir()
	// SIPp's media: audio RTP and RTCP on -mp and the next, video on the
	// two after.
	sippMedia := []freeport.Bind{freeport.UDP, {Network: "udp", Offset: 1}, {Network: "udp", Offset: 2}, {Network: "udp", Offset: 3}}
	args := []string{"-sf", sf, "-m", "1", "-l", "1", "-s", "100", "-t", mode,
		"-i", "127.0.0.1", "-p", strconv.Itoa(freeport.Get(t, freeport.UDP, freeport.TCP)), "-mp", strconv.Itoa(freeport.Get(t, sippMedia...)),
		"-timeout", "40s", "-timeout_error", "-recv_timeout", "15s", "-nostdin", "-trace_err"}
	for k, v := range vars {
		if k == "talk" { // the pause between ACK and BYE, ms
			args = append(args, "-d", v)
			continue
		}
		args = append(args, "-set", k, v)
	}
	args = append(args, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	var detail strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if b, rerr := os.ReadFile(filepath.Join(dir, e.Name())); rerr == nil {
			fmt.Fprintf(&detail, "\n--- %s:\n%s", e.Name(), b)
		}
	}
	tail := string(out)
	if len(tail) > 3000 {
		tail = tail[len(tail)-3000:]
	}
	return fmt.Errorf("sipp %s over %s: %v\n%s%s", scenario, transport, err, tail, detail.String())
}

// callRecord is a call's row as the database holds it.
type callRecord struct {
	ID, Status, Outcome, Phone string
	Answered, Ended            bool
	Started                    time.Time
}

// onlyCall waits until the box recorded exactly one call and it ended, and
// returns its row.
func (b *box) onlyCall(t *testing.T) callRecord {
	t.Helper()
	var r callRecord
	poll.Until(t, "the call's record to end", 20*time.Second, func() bool {
		rows, err := b.pool.Query(context.Background(), `SELECT id, status, coalesce(outcome, ''), coalesce(phone_number, ''),
			answered_at IS NOT NULL, ended_at IS NOT NULL, started_at FROM stackbone_platform.voice_calls`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
			if err := rows.Scan(&r.ID, &r.Status, &r.Outcome, &r.Phone, &r.Answered, &r.Ended, &r.Started); err != nil {
				t.Fatal(err)
			}
		}
		if n > 1 {
			t.Fatalf("%d call records, want 1", n)
		}
		return n == 1 && r.Status == "ended"
	})

	return r
}

// rtpPeer is the media side of a SIPp call: a UDP port the scenario's SDP
// names, which measures what the box sends and, once the box's first packet
// showed where it sends from, talks back (symmetric RTP) like talk does.
type rtpPeer struct {
	conn net.PacketConn

	mu      sync.Mutex
	voiced  int
	packets int
	box     net.Addr
}

func newRTPPeer(t *testing.T) *rtpPeer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &rtpPeer{conn: conn}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	t.Cleanup(func() {
		close(stop)
		conn.Close()
		wg.Wait()
	})
	go func() {
		defer wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if n <= 12 {
				continue
			}
			pcm := decodeG711(buf[1]&0x7f, buf[12:n])
			p.mu.Lock()
			p.packets++
			if rms(pcm) > 1000 {
				p.voiced++
			}
			if p.box == nil {
				p.box = from
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		pkt := make([]byte, 12+160)
		pkt[0] = 0x80 // RTP version 2, PCMU
		binary.BigEndian.PutUint32(pkt[8:], 0x5eed)
		for i := 0; ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			p.mu.Lock()
			to := p.box
			p.mu.Unlock()
			if to == nil {
				continue
			}
			binary.BigEndian.PutUint16(pkt[2:], uint16(i))
			binary.BigEndian.PutUint32(pkt[4:], uint32(i*160))
			for j := range 160 {
				pkt[12+j] = g711.EncodeUlawFrame(callerSample(i, j, 0))
			}
			if _, err := conn.WriteTo(pkt, to); err != nil {
				return
			}
			i++
		}
	}()
	return p
}

func (p *rtpPeer) port() string { return strconv.Itoa(p.conn.LocalAddr().(*net.UDPAddr).Port) }

func (p *rtpPeer) Voiced() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.voiced
}

// A call from behind a carrier's proxies over UDP (three Vias, four
// Record-Routes, P-Asserted-Identity, Diversion; an INVITE over 1,400 bytes
// and a larger 200) is answered, carries audio both ways, ends with the
// caller's BYE, and is recorded under the asserted number.
func TestSIPpCarrierInvite(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	rtp := newRTPPeer(t)
	if err := sipp(t, b.sip.Addr(), "carrier_invite.xml", "udp", map[string]string{"rtp": rtp.port(), "talk": "5000"}); err != nil {
		t.Fatal(err)
	}
	if n := rtp.Voiced(); n < 5 {
		t.Errorf("the caller heard %d voiced packets of the greeting", n)
	}
	r := b.onlyCall(t)
	if r.Outcome != string(voice.OutcomeCallerHangup) || !r.Answered || r.Phone != "+34911222333" {
		t.Fatalf("record %+v", r)
	}
	// The call shows in the server's figures: its setup and its packets'
	// pacing.
	st := b.sip.Stats()
	if st.SetupTime(100) == 0 || st.PacingJitter(100) == 0 {
		t.Fatalf("setup %v, pacing %v in the server's stats", st.SetupTime(100), st.PacingJitter(100))
	}
}

// An offer of audio and video is answered: the audio taken, the video
// refused with port 0 (the scenario checks the 200's SDP), the call carried.
func TestSIPpAudioVideoOffer(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	rtp := newRTPPeer(t)
	if err := sipp(t, b.sip.Addr(), "audio_video.xml", "udp", map[string]string{"rtp": rtp.port(), "video": "40002", "talk": "3000"}); err != nil {
		t.Fatal(err)
	}
	if n := rtp.Voiced(); n < 5 {
		t.Errorf("the caller heard %d voiced packets", n)
	}
	r := b.onlyCall(t)
	if r.Outcome != string(voice.OutcomeCallerHangup) || !r.Answered || r.Phone != "+34600111222" {
		t.Fatalf("record %+v", r)
	}
}

// A caller that hangs up while the box rings (CANCEL after 180, while the
// box is still opening the call) leaves a record: outcome cancelled, never
// answered, the caller's number and times.
func TestSIPpCancelWhileRinging(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	ctx := context.Background()
	// Hold the calls table so the box is still opening the call when the
	// CANCEL comes (else it may have answered already).
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE stackbone_platform.voice_calls IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := sipp(t, b.sip.Addr(), "cancel_ringing.xml", "udp", nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := b.onlyCall(t)
	if r.Outcome != string(voice.OutcomeCancelled) || r.Answered || !r.Ended || r.Phone != "+34600333444" ||
		r.Started.Before(before.Add(-time.Second)) || r.Started.After(time.Now()) {
		t.Fatalf("record %+v", r)
	}
	b.idle(t)
}

// Delayed offer: the INVITE has no SDP, the box offers in its 200 and takes
// the answer from the ACK; audio flows both ways (the caller hears the
// greeting, the box hears the caller's speech and sends it for
// transcription).
func TestSIPpLateOffer(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	rtp := newRTPPeer(t)
	if err := sipp(t, b.sip.Addr(), "late_offer.xml", "udp", map[string]string{"rtp": rtp.port(), "talk": "7000"}); err != nil {
		t.Fatal(err)
	}
	if n := rtp.Voiced(); n < 5 {
		t.Errorf("the caller heard %d voiced packets", n)
	}
	r := b.onlyCall(t)
	if r.Outcome != string(voice.OutcomeCallerHangup) || !r.Answered || r.Phone != "+34600555666" {
		t.Fatalf("record %+v", r)
	}
	if n := b.voicedUploads(); n == 0 {
		t.Fatal("the box heard none of the caller's speech")
	}
}

// Methods the box does not serve: 405 with Allow (REGISTER, SUBSCRIBE), 501
// with Allow for an unknown method, and OPTIONS with the same Allow, over
// UDP and TCP.
func TestSIPpMethods(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	for _, transport := range []string{"udp", "tcp"} {
		if err := sipp(t, b.sip.Addr(), "methods.xml", transport, nil); err != nil {
			t.Error(err)
		}
	}
}

// Malformed requests on one TCP connection each get 400, a malformed ACK no
// answer, and the connection goes on serving; none of the peer's text
// reaches the box's logs.
func TestSIPpMalformedOverTCP(t *testing.T) {
	t.Parallel()
	logs := &logWatch{marker: "STACKBONE-PEER-TEXT", inner: pgtest.Logger(t).Handler()}
	b := newProtocolBoxLogged(t, inboundConfig(), "", nil, slog.New(logs))
	if err := sipp(t, b.sip.Addr(), "tcp_malformed.xml", "tcp", nil); err != nil {
		t.Fatal(err)
	}
	if seen := logs.seen(); len(seen) > 0 {
		t.Fatalf("the peer's text reached the logs: %q", seen)
	}
}

// logWatch passes records on to inner and keeps those that hold marker.
type logWatch struct {
	marker string
	inner  slog.Handler
	shared *logHits
}

type logHits struct {
	mu   sync.Mutex
	hits []string
}

func (w *logWatch) hits() *logHits {
	if w.shared == nil {
		w.shared = &logHits{}
	}
	return w.shared
}

func (w *logWatch) Enabled(ctx context.Context, l slog.Level) bool { return w.inner.Enabled(ctx, l) }

func (w *logWatch) Handle(ctx context.Context, r slog.Record) error {
	text := r.Message
	r.Attrs(func(a slog.Attr) bool {
		text += " " + a.String()
		return true
	})
	if strings.Contains(text, w.marker) {
		h := w.hits()
		h.mu.Lock()
		h.hits = append(h.hits, r.Level.String()+" "+text)
		h.mu.Unlock()
	}
	return w.inner.Handle(ctx, r)
}

func (w *logWatch) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logWatch{marker: w.marker, inner: w.inner.WithAttrs(attrs), shared: w.hits()}
}

func (w *logWatch) WithGroup(name string) slog.Handler {
	return &logWatch{marker: w.marker, inner: w.inner.WithGroup(name), shared: w.hits()}
}

func (w *logWatch) seen() []string {
	h := w.hits()
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.hits...)
}
