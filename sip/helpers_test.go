package sip_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	sipgosip "github.com/emiago/sipgo/sip"
	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"
	"github.com/zaf/g711"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/tools/toolstest"
	"github.com/stackbone/box/voice"
)

// TestMain sets sipgo's process-wide limits before any test starts a
// sipgo transport (the tests' own phones included), so none reads them
// while they change.
func TestMain(m *testing.M) {
	sip.PrepareLibrary()
	os.Exit(m.Run())
}

func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, v := range pcm {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// inboundConfig has one trunk on 127.0.0.1 sending every number to agent a.
func inboundConfig() config.SIP {
	return config.SIP{
		MediaTimeout: 5 * time.Second,
		Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
			Name: "local", Sources: []string{"127.0.0.1"},
			Routes: []config.Route{{Number: "*", Agent: "a"}},
		}}},
	}
}

// peer is a SIP phone made of sipgo and diago, the other side in the
// protocol tests.
type peer struct {
	t    testing.TB
	dg   *diago.Diago
	ua   *sipgo.UserAgent
	port int
}

// newPeer listens on a free UDP port; serve answers calls to it (nil: the
// peer only calls).
func newPeer(t testing.TB, serve func(d *diago.DialogServerSession)) *peer {
	t.Helper()
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("peer"))
	if err != nil {
		t.Fatal(err)
	}
	port := freeport.Get(t, freeport.UDP, freeport.TCP)
	log := pgtest.Logger(t).With("side", "peer")
	dg := diago.NewDiago(ua, diago.WithLogger(log),
		diago.WithTransport(diago.Transport{Transport: "udp", BindHost: "127.0.0.1", BindPort: port}),
		diago.WithTransport(diago.Transport{Transport: "tcp", BindHost: "127.0.0.1", BindPort: port}))
	ctx, cancel := context.WithCancel(context.Background())
	if serve == nil {
		serve = func(d *diago.DialogServerSession) {
			_ = d.Respond(sipgosip.StatusBusyHere, "Busy Here", nil)
		}
	}
	if err := dg.ServeBackground(ctx, serve); err != nil {
		t.Fatal(err)
	}
	// The client sends from the listener once sipgo registered it.
	addr := "127.0.0.1:" + strconv.Itoa(port)
	poll.Until(t, "the peer's listener", 5*time.Second, func() bool {
		c, err := ua.TransportLayer().GetConnection("udp", addr)
		return err == nil && c != nil
	})

	t.Cleanup(func() {
		cancel()
		ua.Close()
	})
	return &peer{t: t, dg: dg, ua: ua, port: port}
}

// uri is sip:user@addr.
func uri(t testing.TB, user, addr string) sipgosip.Uri {
	t.Helper()
	var u sipgosip.Uri
	if err := sipgosip.ParseUri("sip:"+user+"@"+addr, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// call invites user at the box and waits for the answer.
func (p *peer) call(ctx context.Context, user, addr string, opts diago.InviteOptions) (*diago.DialogClientSession, *diago.DialogMedia, error) {
	p.t.Helper()
	return p.dg.Invite(ctx, uri(p.t, user, addr), opts)
}

// statusOf is the SIP status of a refused INVITE.
func statusOf(err error) int {
	var re sipgo.ErrDialogResponse
	if errors.As(err, &re) {
		return re.Res.StatusCode
	}
	var rp *sipgo.ErrDialogResponse
	if errors.As(err, &rp) {
		return rp.Res.StatusCode
	}
	return 0
}

// listener decodes what a peer hears and measures it.
type listener struct {
	mu      sync.Mutex
	voiced  int
	frames  int
	lastPT  uint8
	payload map[uint8]int
	audio   []uint32    // each audio packet's RTP timestamp
	keys    []keyPacket // RFC 4733 telephone-event packets
}

// listen reads the peer's RTP in the background until the media closes.
func listen(med *diago.DialogMedia) *listener {
	l := &listener{payload: map[uint8]int{}}
	r, err := med.AudioReader()
	if err != nil {
		return l
	}
	go func() {
		buf := make([]byte, media.RTPBufSize)
		for {
			n, err := r.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				return
			}
			hd := med.RTPPacketReader.PacketHeader
			pt := hd.PayloadType
			l.mu.Lock()
			l.frames++
			l.lastPT = pt
			l.payload[pt]++
			var ev media.DTMFEvent
			switch {
			case pt == 0 || pt == 8:
				l.audio = append(l.audio, hd.Timestamp)
				if rms(decodeG711(pt, buf[:n])) > 1000 {
					l.voiced++
				}
			case media.DTMFDecode(buf[:n], &ev) == nil:
				l.keys = append(l.keys, keyPacket{seq: hd.SequenceNumber, ts: hd.Timestamp, marker: hd.Marker, ev: ev})
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *listener) Voiced() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.voiced
}

func (l *listener) Packets(pt uint8) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.payload[pt]
}

// talk sends audio from the peer, paced by diago's packet writer, until
// stop is closed: quiet line noise with bursts of speech-like tone (800 ms
// of 160 ms syllables every 2 s, the first after 400 ms), so the box's
// voice activity detection ends each burst as an utterance. bursts > 0
// stops the speech after that many (the noise goes on). The returned
// channel closes when it stopped.
func talk(med *diago.DialogMedia, stop <-chan struct{}, bursts int) <-chan struct{} {
	done := make(chan struct{})
	w, err := med.AudioWriter()
	if err != nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			payload := make([]byte, 160)
			pt := media.CodecAudioFromSession(med.MediaSession()).PayloadType
			for j := range payload {
				v := callerSample(i, j, bursts)
				if pt == 8 {
					payload[j] = g711.EncodeAlawFrame(v)
				} else {
					payload[j] = g711.EncodeUlawFrame(v)
				}
			}
			if _, err := w.Write(payload); err != nil {
				return
			}
		}
	}()
	return done
}

// decodeG711 decodes a PCMA (8) or else PCMU payload.
func decodeG711(pt uint8, payload []byte) []int16 {
	pcm := make([]int16, 0, len(payload))
	for _, b := range payload {
		if pt == 8 {
			pcm = append(pcm, g711.DecodeAlawFrame(b))
		} else {
			pcm = append(pcm, g711.DecodeUlawFrame(b))
		}
	}
	return pcm
}

// callerSample is sample j of the caller's 20 ms packet i as talk sends it.
func callerSample(i, j, bursts int) int16 {
	voiced := i%100 >= 20 && i%100 < 60 && i%10 < 8 && (bursts == 0 || i/100 < bursts)
	if voiced {
		return int16(10000 * math.Sin(2*math.Pi*300*float64(i*160+j)/8000))
	}
	return int16((j*7919)%61 - 30) // line noise
}

// box is the whole call path of the box: real PostgreSQL, memory, agent
// runtime, the call controller and the SIP server, with the scripted model
// provider as the only stand-in.
type box struct {
	model *providertest.Server
	pool  *pgxpool.Pool
	mem   *memory.Service
	mgr   *voice.Manager
	sip   *sip.Server
	// opened receives each call the real controller opened, as the SIP
	// server got it (see observer).
	opened chan *voice.Call
}

// startBox builds the box from agents (YAML) and the sip section; tune, when
// set, adjusts the call controller's configuration.
func startBox(t testing.TB, sipCfg config.SIP, agents string, tune func(*voice.Config)) *box {
	t.Helper()
	return startBoxLogged(t, sipCfg, agents, tune, pgtest.Logger(t))
}

// startBoxLogged is startBox with the box's logger.
func startBoxLogged(t testing.TB, sipCfg config.SIP, agents string, tune func(*voice.Config), log *slog.Logger) *box {
	t.Helper()
	opened := make(chan *voice.Call, 16)
	b := boxtest.New(t, agents, boxtest.Logger(log),
		boxtest.Env(toolstest.Env()), // the agents' http tools read their secret from toolstest's environment
		boxtest.Tune(func(cfg *config.Config) {
			cfg.SIP = sipCfg
			cfg.SIP.Addr = "127.0.0.1:0"
		}),
		boxtest.TuneCalls(func(vcfg *voice.Config) {
			vcfg.OnOpen = func(c *voice.Call) {
				select {
				case opened <- c:
				default:
				}
			}
			if tune != nil {
				tune(vcfg)
			}
		}))
	return &box{model: b.Model, pool: b.Pool, mem: b.Memory, mgr: b.Calls, sip: b.Phones, opened: opened}
}

// protocolAgents is the agent of the protocol tests; extra is appended to
// its definition (indented four spaces).
const protocolAgents = `
agents:
  a:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
`

// newProtocolBox is a box whose scripted model transcribes every utterance
// as "Hello there.", answers "Okay." and extracts nothing after a call;
// tests script replies ahead of these.
func newProtocolBox(t testing.TB, sipCfg config.SIP, extra string, tune func(*voice.Config)) *box {
	t.Helper()
	return newProtocolBoxLogged(t, sipCfg, extra, tune, pgtest.Logger(t))
}

// newProtocolBoxLogged is newProtocolBox with the box's logger.
func newProtocolBoxLogged(t testing.TB, sipCfg config.SIP, extra string, tune func(*voice.Config), log *slog.Logger) *box {
	t.Helper()
	b := startBoxLogged(t, sipCfg, protocolAgents+extra, tune, log)
	b.model.RespondTranscripts(func([]byte) string { return "Hello there." })
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[],"summary":"A test call."}`}
		}
		return providertest.Reply{Content: "Okay."}
	})
	return b
}

// next waits for the next call the controller opened.
func (b *box) next(t testing.TB) *voice.Call {
	t.Helper()
	select {
	case c := <-b.opened:
		return c
	case <-time.After(15 * time.Second):
		t.Fatal("no call opened")
		return nil
	}
}

// ended waits for the call's completion and returns its record.
func (b *box) ended(t testing.TB, c *voice.Call) voice.CallRecord {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not complete")
	}
	r, err := b.mgr.Get(context.Background(), c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "ended" {
		t.Fatalf("call record status %q after completion", r.Status)
	}
	return r
}

// outcome is the record's outcome, "" when none.
func outcome(r voice.CallRecord) voice.Outcome {
	if r.Outcome == nil {
		return ""
	}
	return *r.Outcome
}

// running reports whether the call is still in progress.
func running(c *voice.Call) bool {
	select {
	case <-c.Done():
		return false
	default:
		return true
	}
}

// idle waits until neither the SIP server nor the controller carries a call.
func (b *box) idle(t testing.TB) {
	t.Helper()
	poll.Until(t, "the calls to be released", 20*time.Second, func() bool { return b.sip.Active() == 0 && b.mgr.Active() == 0 })
}

// voicedUploads is how many of the audio files sent for transcription hold
// the caller's speech (a window louder than silence).
func (b *box) voicedUploads() int {
	n := 0
	for _, wav := range b.model.Uploads() {
		pcm, err := siptest.WAVSamples(wav)
		if err != nil {
			continue
		}
		for i := 0; i+160 <= len(pcm); i += 160 {
			if rms(pcm[i:i+160]) > 1000 {
				n++
				break
			}
		}
	}
	return n
}

// chatContains reports whether any chat request sent to the model holds text.
func (b *box) chatContains(text string) bool {
	for _, req := range b.model.ChatRequests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, text) {
				return true
			}
		}
	}
	return false
}

// hearGreeting waits until the peer hears the agent's greeting, so the call
// is carried before the peer hangs up.
func hearGreeting(t testing.TB, med *diago.DialogMedia) {
	t.Helper()
	heard := listen(med)
	poll.Until(t, "the greeting", 10*time.Second, func() bool { return heard.Voiced() > 5 })
}
