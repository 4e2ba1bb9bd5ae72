package sip_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/voice"
)

// needTools skips when the real phone or the audio tools are missing;
// scripts/test installs them (baresip-core, espeak-ng, sox).
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"baresip", "espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian packages baresip-core, espeak-ng, sox; scripts/test installs them)", tool)
		}
	}
}

const boxAgents = `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone for a training company.
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
`

func newBox(t *testing.T, sipCfg config.SIP) *box {
	t.Helper()
	return startBox(t, sipCfg, boxAgents, nil)
}

// speechFile speaks text with espeak-ng and makes it 8 kHz mono with lead
// silence (so the greeting plays first) and tail silence (so the phone
// listens to the answer before its file ends and it hangs up).
func speechFile(t *testing.T, dir, text string, lead, tail float64) string {
	t.Helper()
	raw := filepath.Join(dir, "speech-raw.wav")
	out := filepath.Join(dir, "speech.wav")
	if text == "" {
		run(t, "sox", "-n", "-r", "8000", "-c", "1", "-b", "16", out, "trim", "0", fmt.Sprint(lead+tail))
		return out
	}
	run(t, "espeak-ng", "-w", raw, text)
	run(t, "sox", raw, "-r", "8000", "-c", "1", "-b", "16", out, "pad", fmt.Sprint(lead), fmt.Sprint(tail))
	return out
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// phone is one baresip process with its own configuration directory: it
// plays a file as its microphone and records what it hears (sndfile).
type phone struct {
	dir  string
	snd  string
	port int
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPhone runs baresip as user (its From number) with mic as the audio
// source, answering calls itself; dial, when set, is called at start. Its
// lifetime is bounded by -t and the test's cleanup.
func startPhone(t *testing.T, user, mic, dial string) *phone {
	t.Helper()
	dir := t.TempDir()
	snd := filepath.Join(dir, "snd")
	if err := os.MkdirAll(snd, 0o755); err != nil {
		t.Fatal(err)
	}
	port := freePort(t, true)
	conf := strings.Join([]string{
		"poll_method epoll",
		"sip_listen 127.0.0.1:" + strconv.Itoa(port),
		"sip_trans_def udp",
		"net_interface 127.0.0.1",
		"audio_source aufile," + mic,
		"audio_player aubridge,nil",
		"audio_alert aubridge,nil",
		"audio_srate 8000",
		"audio_channels 1",
		"module_path /usr/lib/baresip/modules",
		"module g711.so",
		"module aufile.so",
		"module aubridge.so",
		"module sndfile.so",
		"module_app account.so",
		"module_app menu.so",
		"snd_path " + snd,
		"",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	account := fmt.Sprintf("<sip:%s@127.0.0.1:%d>;regint=0;answermode=auto\n", user, port)
	if err := os.WriteFile(filepath.Join(dir, "accounts"), []byte(account), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-f", dir, "-t", "60"}
	if dial != "" {
		args = append(args, "-e", "/dial "+dial)
	}
	p := &phone{dir: dir, snd: snd, port: port, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command("baresip", args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("baresip output:\n%s", p.out.String())
		}
	})
	poll.Until(t, "baresip to start", 10*time.Second, func() bool { return strings.Contains(p.out.String(), "baresip is ready") })
	return p
}

// callEnded waits for baresip to report the call's end.
func (p *phone) callEnded(t *testing.T, limit time.Duration) {
	t.Helper()
	poll.Until(t, "baresip to end the call", limit, func() bool { return strings.Contains(p.out.String(), "terminated") })
}

// heard is the energy of what the phone heard: the number of 20 ms windows
// of its recording louder than silence (RMS over 500), once the recording
// is written.
func (p *phone) heard(t *testing.T) int {
	t.Helper()
	pcm := p.recording(t)
	voiced := 0
	for i := 0; i+160 <= len(pcm); i += 160 {
		if rms(pcm[i:i+160]) > 500 {
			voiced++
		}
	}
	return voiced
}

// recording is what the phone recorded of the call (sndfile's decoded
// side), once it is there.
func (p *phone) recording(t *testing.T) []int16 {
	t.Helper()
	var pcm []int16
	poll.Until(t, "baresip's recording", 10*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(p.snd, "*-dec.wav"))
		if len(files) == 0 {
			return false
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			return false
		}
		pcm, err = wavSamples(b)
		return err == nil && len(pcm) > 0
	})
	return pcm
}

// wavSamples reads the 16-bit samples of a WAV file's data chunk (to the
// end of the file when the header's size is not filled in).
func wavSamples(b []byte) ([]int16, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, errors.New("not a WAV file")
	}
	for i := 12; i+8 <= len(b); {
		id, size := string(b[i:i+4]), int(binary.LittleEndian.Uint32(b[i+4:i+8]))
		i += 8
		if id == "data" {
			data := b[i:]
			if size > 0 && size <= len(data) {
				data = data[:size]
			}
			out := make([]int16, len(data)/2)
			for j := range out {
				out[j] = int16(binary.LittleEndian.Uint16(data[2*j:]))
			}
			return out, nil
		}
		i += size + size%2
	}
	return nil, errors.New("no data chunk")
}

// A real softphone calls the box and talks; the box answers from the
// scripted model and the phone hears it; after the phone hangs up, the
// person's memory holds the facts and a call record; a second call from
// the same number recalls them before the greeting.
func TestBaresipCallsTheBoxAndIsRemembered(t *testing.T) {
	t.Parallel()
	needTools(t)
	cfg := config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
		Name: "local", Sources: []string{"127.0.0.1"}, Routes: []config.Route{{Number: "*", Agent: "receptionist"}},
	}}}}
	b := newBox(t, cfg)
	ctx := context.Background()
	const number = "+34600111222"
	dir := t.TempDir()

	b.model.ScriptTranscripts("I am interested in the AI master. Call me after four.")
	b.model.Script(
		providertest.Reply{Content: "Great. I will arrange a call after four."},
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master."},{"op":"add","content":"Wants calls after 16:00."}],"summary":"Asked about the AI master."}`},
	)
	mic := speechFile(t, dir, "I am interested in the AI master. Call me after four.", 2.5, 7)
	ph := startPhone(t, number, mic, "sip:100@"+b.sip.Addr())
	ph.callEnded(t, 60*time.Second)
	if n := ph.heard(t); n < 25 {
		t.Fatalf("baresip heard %d voiced 20 ms windows, want the greeting and the answer", n)
	}
	var rec memory.RecallResult
	poll.Until(t, "the memory save", 30*time.Second, func() bool {
		var err error
		rec, err = b.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
		return err == nil && len(rec.Calls) == 1
	})

	if len(rec.Facts) != 2 || rec.Facts[0].Content != "Interested in the AI master." {
		t.Fatalf("facts: %+v", rec.Facts)
	}
	call := rec.Calls[0]
	if call.Outcome == nil || *call.Outcome != string(voice.OutcomeCallerHangup) || call.DurationSeconds == nil || *call.DurationSeconds < 5 {
		t.Fatalf("call record: outcome %v duration %v", call.Outcome, call.DurationSeconds)
	}
	chats := b.model.ChatRequests()
	if len(chats) < 2 {
		t.Fatalf("%d chat requests", len(chats))
	}
	extraction := chats[len(chats)-1].Messages
	if !strings.Contains(extraction[len(extraction)-1].Content, "Great. I will arrange a call after four.") {
		t.Fatal("the extraction did not get the heard answer")
	}

	// The second call from the same number: the recall is in what the model
	// is sent for its first answer, taken at open, before the greeting.
	before := len(b.model.ChatRequests())
	b.model.ScriptTranscripts("Hi again.")
	b.model.Script(providertest.Reply{Content: "Welcome back."},
		providertest.Reply{Content: `{"operations":[],"summary":"Called again."}`})
	mic2 := speechFile(t, t.TempDir(), "Hi again.", 2.5, 4)
	ph2 := startPhone(t, number, mic2, "sip:100@"+b.sip.Addr())
	poll.Until(t, "the second call's first answer", 40*time.Second, func() bool { return len(b.model.ChatRequests()) > before })
	first := b.model.ChatRequests()[before]
	var system strings.Builder
	for _, m := range first.Messages {
		if m.Role == "system" {
			system.WriteString(m.Content)
		}
	}
	if !strings.Contains(system.String(), "Interested in the AI master.") || !strings.Contains(system.String(), "Asked about the AI master.") {
		t.Fatalf("the recall was not sent to the model: %+v", first.Messages)
	}
	ph2.callEnded(t, 60*time.Second)
	poll.Until(t, "the second call record", 30*time.Second, func() bool {
		rec, err := b.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
		return err == nil && len(rec.Calls) == 2
	})

}

// The box dials out through its trunk and a real softphone answers: it
// hears the greeting, and the call is recorded as outbound to its number.
func TestDialRingsBaresip(t *testing.T) {
	t.Parallel()
	needTools(t)
	mic := speechFile(t, t.TempDir(), "", 0, 6)
	// baresip takes calls for its account's user: the dialled number.
	ph := startPhone(t, "+34600999888", mic, "")
	cfg := config.SIP{Trunks: config.Trunks{Outbound: []config.OutboundTrunk{{
		Name: "local", Proxy: "127.0.0.1:" + strconv.Itoa(ph.port), CallerNumber: "+15550100",
	}}}}
	b := newBox(t, cfg)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: `{"operations":[],"summary":"Outbound call, the callee listened."}`}
	})
	ctx := context.Background()
	id, err := b.sip.Dial(ctx, sip.DialRequest{Agent: "receptionist", To: "+34 600 999 888"})
	if err != nil {
		t.Fatal(err)
	}
	ph.callEnded(t, 40*time.Second)
	if n := ph.heard(t); n < 10 {
		t.Fatalf("baresip heard %d voiced windows, want the greeting", n)
	}
	var r voice.CallRecord
	poll.Until(t, "the call record", 30*time.Second, func() bool {
		r, err = b.mgr.Get(ctx, id)
		return err == nil && r.Status == "ended"
	})

	if r.Direction != voice.Outbound || r.PhoneNumber == nil || *r.PhoneNumber != "+34600999888" || r.Trunk == nil || *r.Trunk != "local" ||
		r.AnsweredAt == nil || r.Outcome == nil || *r.Outcome != voice.OutcomeCallerHangup {
		t.Fatalf("call record: %+v", r)
	}
	if r.Memory == nil || r.Memory.Identity != "+34600999888" {
		t.Fatalf("memory report: %+v", r.Memory)
	}
}
