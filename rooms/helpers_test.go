package rooms_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/netns"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/voice"
)

const devKey = auth.DevKey

// The agents of the tests: frontdesk remembers people by phone number.
const agentsYAML = `
agents:
  frontdesk:
    model: openai/chat
    instructions: You answer browser test calls.
    memory: {identityKey: phoneNumber, read: true, save: true}
  mailer:
    model: openai/chat
    memory: {identityKey: email, read: true, save: true}
  mute:
    model: openai/chat
    voice: {tts: espeak}
`

// What the caller says in the recorded speech, what the scripted model
// answers, and the facts its extraction returns.
const (
	callerSays = "I am interested in the AI master. Call me after four."
	agentSays  = "Great. I will arrange a call after four."
	extraction = `{"operations":[{"op":"add","content":"Interested in the AI master."},{"op":"add","content":"Wants calls after 16:00."}],"summary":"Asked about the AI master."}`
)

// box is the whole HTTP box of a test on loopback: the API with the dev
// key, the calls routes and the rooms service, over real PostgreSQL and
// the scripted model.
type box struct {
	t       *testing.T
	url     string
	handler http.Handler
	// ns and pageURL put the browser of browserCall on another machine:
	// inside a network namespace, opening the call page at pageURL.
	ns      *netns.NS
	pageURL string
	model   *providertest.Server
	mem     *memory.Service
	calls   *voice.Manager
	rooms   *rooms.Service
}

func newBox(t *testing.T, rc config.Rooms, tune ...func(*config.Config)) *box {
	t.Helper()
	// The call page pre-fills the dev key, as `stackbone dev` serves it.
	// Its speech is the providers' only: no offline engine
	// (TestFailedCallSaysWhy calls an agent that asks for one).
	b := boxtest.New(t, agentsYAML, boxtest.DevKey(devKey), boxtest.Tune(func(cfg *config.Config) {
		cfg.Rooms = rc
		for _, f := range tune {
			f(cfg)
		}
	}),
		boxtest.Speech(func(m voice.Models) voice.SpeechFactory { return voice.ProviderSpeech(m, nil) }))
	if err := b.Keys.Ensure(t.Context(), auth.DevKey, devKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	model := b.Model
	// The model answers the call's turn, and the extraction after it.
	model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: extraction}
		}
		return providertest.Reply{Content: agentSays}
	})
	return &box{t: t, url: b.URL, handler: b.Handler(), model: model, mem: b.Memory, calls: b.Calls, rooms: b.Rooms}
}

// do sends an API request with the dev key and decodes the envelope's
// data into out; it returns the status and the error code.
func (b *box) do(method, path string, body any, out any) (int, string) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		if s, ok := body.(string); ok {
			raw = []byte(s)
		}
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, b.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+devKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &env); err != nil {
		b.t.Fatalf("%s %s: not an envelope: %s", method, path, raw)
	}
	if env.Error != nil {
		return resp.StatusCode, env.Error.Code
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			b.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode, ""
}

// need skips a test whose tool is missing, except in CI (CI=true), where
// the test command installs it and its absence is a failure.
func need(t *testing.T, tool, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: install Debian's %s (scripts/test does)", tool, pkg)
		}
		t.Skipf("%s is missing: install Debian's %s (scripts/test does)", tool, pkg)
	}
	return p
}

// speechWAV records text with espeak-ng and lays it out as the fake
// microphone plays it: 48 kHz mono, lead seconds of silence first and a
// long quiet tail, so the speech is said once.
func speechWAV(t *testing.T, text string, lead float64) string {
	t.Helper()
	need(t, "espeak-ng", "espeak-ng")
	need(t, "sox", "sox")
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "speech.wav")
	if b, err := exec.Command("espeak-ng", "-v", "en-us", "-s", "150", "-w", raw, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, b)
	}
	if b, err := exec.Command("sox", raw, "-r", "48000", "-c", "1", "-b", "16", out, "pad", formatSeconds(lead), "30").CombinedOutput(); err != nil {
		t.Fatalf("sox: %v: %s", err, b)
	}
	return out
}

func formatSeconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }

// wavPCM returns the samples and rate of a 16-bit mono WAV (as the
// controller uploads for speech-to-text).
func wavPCM(t *testing.T, wav []byte) ([]int16, int) {
	t.Helper()
	if len(wav) < 44 || string(wav[:4]) != "RIFF" {
		t.Fatalf("not a WAV upload (%d bytes)", len(wav))
	}
	rate := int(binary.LittleEndian.Uint32(wav[24:28]))
	data := wav[44:]
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
	}
	return pcm, rate
}
