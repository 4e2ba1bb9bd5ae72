package siptest

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/lockedbuf"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/voice"
)

// NeedBaresip skips the test when the real softphone or the tools that
// make its voice are missing; scripts/test installs them (Debian packages
// baresip-core, espeak-ng, sox).
func NeedBaresip(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"baresip", "espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian packages baresip-core, espeak-ng, sox; scripts/test installs them)", tool)
		}
	}
}

// SpeechFile speaks text with espeak-ng and makes it 8 kHz mono with lead
// seconds of silence first (so the greeting plays before it) and tail
// seconds after (so the phone listens to the answer before its file ends
// and it hangs up). An empty text is silence only.
func SpeechFile(t testing.TB, dir, text string, lead, tail float64) string {
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

// Spoken is one part of a SpeechScript: Pause seconds of silence, then Text.
type Spoken struct {
	Pause float64
	Text  string
}

// SpeechScript is SpeechFile for a caller who says several things: each
// part's text after its pause, then tail seconds of silence.
func SpeechScript(t testing.TB, dir string, tail float64, parts ...Spoken) string {
	t.Helper()
	var files []string
	for i, p := range parts {
		raw := filepath.Join(dir, fmt.Sprintf("part-%d-raw.wav", i))
		out := filepath.Join(dir, fmt.Sprintf("part-%d.wav", i))
		run(t, "espeak-ng", "-w", raw, p.Text)
		run(t, "sox", raw, "-r", "8000", "-c", "1", "-b", "16", out, "pad", fmt.Sprint(p.Pause), "0")
		files = append(files, out)
	}
	out := filepath.Join(dir, "script.wav")
	run(t, "sox", append(files, out, "pad", "0", fmt.Sprint(tail))...)
	return out
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// Baresip is one baresip process with its own configuration directory: it
// plays a file as its microphone, answers calls by itself and records what
// it hears.
type Baresip struct {
	// Port is its SIP port on 127.0.0.1 (UDP).
	Port int
	dir  string
	snd  string
	cmd  *exec.Cmd
	out  *lockedbuf.Buffer
	done chan struct{}
}

// StartBaresip runs baresip as user (its From number) with mic (a WAV
// file) as the audio source; dial, when set (a SIP URI), is called at
// start. It lives at most 60 s and ends with the test.
func StartBaresip(t testing.TB, user, mic, dial string) *Baresip {
	t.Helper()
	dir := t.TempDir()
	snd := filepath.Join(dir, "snd")
	if err := os.MkdirAll(snd, 0o755); err != nil {
		t.Fatal(err)
	}
	port := freeport.Get(t, freeport.UDP, freeport.TCP, freeport.NextTCP)
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
	p := &Baresip{Port: port, dir: dir, snd: snd, out: &lockedbuf.Buffer{}, done: make(chan struct{})}
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

// CallEnded waits for baresip to report the call's end.
func (p *Baresip) CallEnded(t testing.TB, limit time.Duration) {
	t.Helper()
	poll.Until(t, "baresip to end the call", limit, func() bool { return strings.Contains(p.out.String(), "terminated") })
}

// Heard is the energy of what the phone heard: the number of 20 ms windows
// of its recording louder than silence (RMS over 500), once the recording
// is written.
func (p *Baresip) Heard(t testing.TB) int {
	t.Helper()
	pcm := p.Recording(t)
	voiced := 0
	for i := 0; i+160 <= len(pcm); i += 160 {
		var sum float64
		for _, v := range pcm[i : i+160] {
			sum += float64(v) * float64(v)
		}
		if math.Sqrt(sum/160) > 500 {
			voiced++
		}
	}
	return voiced
}

// Recording is what the phone recorded of the call (sndfile's decoded
// side), once it is written.
func (p *Baresip) Recording(t testing.TB) []int16 {
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
		pcm, err = WAVSamples(b)
		return err == nil && len(pcm) > 0
	})
	return pcm
}

// WAVSamples reads the 16-bit samples of a mono WAV file's data chunk (to
// the end of the file when the header's size is not filled in).
func WAVSamples(b []byte) ([]int16, error) {
	pcm, _, err := voice.DecodeWAV(b)
	return pcm, err
}

// Keys are the keypad digits baresip decoded from the call's RFC 4733
// telephone-events, in order: each counted at its end, once baresip saw
// it start.
func (p *Baresip) Keys() string {
	var out []byte
	started := byte(0)
	for _, ev := range keyEventRe.FindAllStringSubmatch(p.out.String(), -1) {
		switch {
		case ev[2] == "0":
			started = ev[1][0]
		case started == ev[1][0]:
			out = append(out, started)
			started = 0
		}
	}
	return string(out)
}

var keyEventRe = regexp.MustCompile(`received event: '(.)' \(end=([01])\)`)

// GreetingFile is what answers an outbound call: lead seconds of silence,
// text spoken, then, with beep, a pause of 0.4 s and a 500 ms 1 kHz beep
// (a voicemail's), then tail seconds of silence. end is where the beep
// ends (or the speech, without one), in seconds from the file's start.
func GreetingFile(t testing.TB, dir, text string, lead float64, beep bool, tail float64) (path string, end float64) {
	t.Helper()
	raw := filepath.Join(dir, "greeting-raw.wav")
	speech := filepath.Join(dir, "greeting-speech.wav")
	run(t, "espeak-ng", "-w", raw, text)
	run(t, "sox", raw, "-r", "8000", "-c", "1", "-b", "16", speech, "pad", fmt.Sprint(lead), "0")
	parts := []string{speech}
	if beep {
		tone := filepath.Join(dir, "beep.wav")
		run(t, "sox", "-n", "-r", "8000", "-c", "1", "-b", "16", tone, "synth", "0.5", "sine", "1000", "vol", "0.5", "pad", "0.4", "0")
		parts = append(parts, tone)
	}
	path = filepath.Join(dir, "greeting.wav")
	run(t, "sox", append(parts, path, "pad", "0", fmt.Sprint(tail))...)
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pcm, err := WAVSamples(b)
		if err != nil {
			t.Fatal(err)
		}
		end += float64(len(pcm)) / 8000
	}
	return path, end
}
