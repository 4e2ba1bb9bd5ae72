package rooms_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/internal/cdp"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/voice"
)

// pageState is window.stackboneCall of the call page.
type pageState struct {
	Status     string        `json:"status"`
	Connection string        `json:"connection"`
	RoomID     string        `json:"roomId"`
	CallID     string        `json:"callId"`
	Backend    string        `json:"backend"`
	Transcript []voice.Entry `json:"transcript"`
	Error      string        `json:"error"`
	LevelMax   float64       `json:"agentLevelMax"`
	VoicedMs   int           `json:"agentVoicedMs"`
}

func (p pageState) has(role, text string) bool {
	for _, e := range p.Transcript {
		if e.Role == role && e.Text == text {
			return true
		}
	}
	return false
}

// failures keeps a failed test's reason for the LiveKit server's cleanup
// to say again after the server's long log, so the reason ends the
// test's output.
var failures sync.Map // *testing.T → string

// fail fails the test at once with the reason, kept in failures.
func fail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	failures.Store(t, msg)
	t.Fatal(msg)
}

// waitFor polls cond until it holds or limit passes; a timeout fails the
// test with what detail says of the moment.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool, detail func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			fail(t, "timed out after %s waiting for %s; %s", limit, what, detail())
		}
		time.Sleep(poll.Every)
	}
}

// wait is waitFor on the page: a timeout says the page's state and what
// speech-to-text and the speech endpoint were sent by then.
func (p *callPage) wait(b *box, what string, limit time.Duration, cond func() bool) {
	p.t.Helper()
	waitFor(p.t, what, limit, cond, func() string {
		var s pageState
		err := p.br.Eval(p.ctx, `window.stackboneCall`, &s)
		return fmt.Sprintf("page %+v (%v); %d uploads to speech-to-text, %d speech requests",
			s, err, len(b.model.Uploads()), len(b.model.SpeechRequests()))
	})
}

// callPage is the call page in headless Chromium, its microphone a
// recorded voice.
type callPage struct {
	t   *testing.T
	ctx context.Context
	br  *cdp.Browser
}

func (p *callPage) state() pageState {
	var s pageState
	if err := p.br.Eval(p.ctx, `window.stackboneCall`, &s); err != nil {
		p.t.Fatal(err)
	}
	return s
}

// press clicks the page's button id, then waits until the call's status
// is status; a call that fails fails the test at once.
func (p *callPage) press(id, status string, within time.Duration) {
	if err := p.br.Eval(p.ctx, `document.getElementById(`+strconv.Quote(id)+`).click()`, nil); err != nil {
		p.t.Fatal(err)
	}
	poll.Until(p.t, "the page's call to be "+status+" after "+id, within, func() bool {
		s := p.state()
		if s.Status == "failed" {
			p.t.Fatalf("the page failed: %s", s.Error)
		}
		return s.Status == status
	})
}

// startCallPage opens the call page with wav as the microphone, picks the
// agent, enters number as the phone number, starts the call and waits
// until it is active with its media connected.
func startCallPage(ctx context.Context, t *testing.T, b *box, backend, wav, number string) *callPage {
	br, err := cdp.Start(ctx, cdp.Options{UserDataDir: t.TempDir(), FakeAudio: wav, Logf: t.Logf, NetNS: b.ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	p := &callPage{t: t, ctx: ctx, br: br}
	base := b.url
	if b.pageURL != "" {
		base = b.pageURL
	}
	page := base + "/call?raw=1&agent=frontdesk&idName=phoneNumber&idValue=" + strings.ReplaceAll(number, "+", "%2B")
	if err := br.Navigate(ctx, page); err != nil {
		t.Fatal(err)
	}
	// The page loads the agents with the key from its field, then starts.
	poll.Until(t, "the agents to load", 10*time.Second, func() bool {
		var v string
		_ = br.Eval(ctx, `document.getElementById("agent").value`, &v)
		return v == "frontdesk"
	})

	started := time.Now()
	p.press("start", "active", 20*time.Second)

	s := p.state()
	if s.Backend != backend || !strings.HasPrefix(s.RoomID, "room_") || !strings.HasPrefix(s.CallID, "call_") {
		t.Fatalf("page state: %+v", s)
	}
	t.Logf("joined in %s", time.Since(started).Round(time.Millisecond))
	// The media connection is up, as the SDK reports it on either backend.
	poll.Until(t, "the page's media connection", 10*time.Second, func() bool { return p.state().Connection == "connected" })
	return p
}

// browserCall is the end-to-end scenario on either backend: headless
// Chromium opens the call page, picks the agent, enters a phone number and
// starts a call with a recorded voice as its microphone. The agent hears
// the speech (the scripted speech-to-text receives it and the page shows
// the heard transcript), the browser receives the agent's answer as sound,
// and once the page has left, the call has completed and the person's
// memory holds the extracted facts. It returns the call's id.
func browserCall(t *testing.T, b *box, backend string, lead float64) (callID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	need(t, "chromium", "chromium")
	wav := speechWAV(t, callerSays, lead)
	number := "+34600111222"
	b.model.ScriptTranscripts(callerSays)
	b.model.RespondTranscripts(func([]byte) string { return "" }) // the quiet tail says nothing

	p := startCallPage(ctx, t, b, backend, wav, number)
	br, state := p.br, p.state
	s := state()

	// The agent heard the caller: the page shows the heard transcript.
	p.wait(b, "the caller's words in the page's transcript", 60*time.Second, func() bool {
		return state().has(voice.RoleUser, callerSays)
	})

	ups := b.model.Uploads()
	if len(ups) == 0 {
		fail(t, "speech-to-text received no audio")
	}
	// The whole utterance: a speculative request at a pause in the speech
	// carries only its start.
	longest := ups[0]
	for _, up := range ups {
		if len(up) > len(longest) {
			longest = up
		}
	}
	pcm, rate := wavPCM(t, longest)
	secs := float64(len(pcm)) / float64(rate)
	if lvl := voice.Level(pcm); lvl < -40 || secs < 1.5 {
		fail(t, "speech-to-text got %.1f s at %.1f dBFS: not the recorded speech", secs, lvl)
	}
	t.Logf("speech-to-text received %.1f s of %d Hz audio at %.1f dBFS", secs, rate, voice.Level(pcm))

	// The agent's answer plays through to the browser and commits as heard.
	p.wait(b, "the agent's answer to play and commit", 30*time.Second, func() bool {
		return state().has(voice.RoleAssistant, agentSays)
	})

	s = state()
	if s.LevelMax < 0.05 || s.VoicedMs < 500 {
		fail(t, "the browser heard no agent audio: peak RMS %.3f, %d ms above -40 dBFS", s.LevelMax, s.VoicedMs)
	}
	t.Logf("the browser heard the agent: peak RMS %.3f, %d ms of sound", s.LevelMax, s.VoicedMs)

	// The page leaves: the room closes, the call completes and saves once.
	if err := br.Navigate(ctx, "about:blank"); err != nil {
		t.Fatal(err)
	}
	var (
		rec    voice.CallRecord
		recErr error
	)
	waitFor(t, "the call to complete after the page left", 30*time.Second, func() bool {
		rec, recErr = b.calls.Get(ctx, s.CallID)
		return recErr == nil && rec.Status == "ended" && rec.Memory != nil && (rec.Memory.Saved || rec.Memory.SaveError != "")
	}, func() string { return fmt.Sprintf("record %+v memory %+v (%v)", rec, rec.Memory, recErr) })

	if rec.Direction != voice.Browser || rec.Outcome == nil || *rec.Outcome != voice.OutcomeCallerHangup || rec.PhoneNumber != nil {
		fail(t, "call record: %+v outcome %v", rec, rec.Outcome)
	}
	if !rec.Memory.Saved || rec.Memory.IdentityKey != "phoneNumber" || rec.Memory.Identity != number {
		fail(t, "memory report: %+v", rec.Memory)
	}
	if len(rec.Metrics) != 1 || rec.Metrics[0]["wireToWireMs"] == nil || rec.Metrics[0]["speechToTextMs"] == nil {
		fail(t, "per-turn metrics: %+v", rec.Metrics)
	}
	t.Logf("turn metrics: %v", rec.Metrics[0])
	got, err := b.mem.Recall(ctx, memory.RecallRequest{AgentID: "frontdesk", UserID: number})
	if err != nil {
		t.Fatal(err)
	}
	var facts []string
	for _, f := range got.Facts {
		facts = append(facts, f.Content)
	}
	if strings.Join(facts, "|") != "Interested in the AI master.|Wants calls after 16:00." || len(got.Calls) != 1 ||
		*got.Calls[0].Outcome != string(voice.OutcomeCallerHangup) {
		fail(t, "saved memory: facts %q, calls %+v", facts, got.Calls)
	}
	// The API shows the ended room from the call's record.
	var v struct {
		Status     string        `json:"status"`
		Transcript []voice.Entry `json:"transcript"`
	}
	if st, code := b.do("GET", "/api/voice/rooms/"+s.RoomID, nil, &v); st != 200 || v.Status != "ended" || len(v.Transcript) != 2 {
		fail(t, "GET room after the call: %d %s %+v", st, code, v)
	}
	return s.CallID
}
