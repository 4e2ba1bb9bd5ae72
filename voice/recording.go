package voice

import (
	"context"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/recordings"
)

// Recorder keeps calls' audio (package recordings).
type Recorder interface {
	Begin(callID string, sampleRate int) (*recordings.Take, error)
	Get(ctx context.Context, callID string) (recordings.Info, error)
	Open(ctx context.Context, callID string) (io.ReadCloser, recordings.Info, error)
}

// callRecording is a recorded call's take and where its turns sit in it.
type callRecording struct {
	take   *recordings.Take
	policy config.Recording
	// start is when the recording's first frame went out (clock unix
	// nanos): the caller's turns are placed from it.
	start atomic.Int64

	mu sync.Mutex
	// agent is each assistant turn's first and last frame played.
	agent map[int][2]int64
	// user is each caller turn's first and last voiced moment.
	user map[int][2]time.Time
	// asked is set from the consent sentence until the caller's first
	// words after it answered it.
	asked bool
}

// startRecording begins the call's recording when its agent records
// calls and the box has a recorder; a recorder that fails is logged and
// the call goes on unrecorded.
func (c *Call) startRecording() {
	v := c.agent.Voice
	if v == nil || v.Recording == nil || !v.Recording.Enabled || c.m.cfg.Recorder == nil {
		return
	}
	take, err := c.m.cfg.Recorder.Begin(c.info.ID, c.info.SampleRate)
	if err != nil {
		c.m.log.Warn("voice: recording", "call", c.info.ID, "error", err)
		return
	}
	c.rec.Store(&callRecording{take: take, policy: *v.Recording, agent: map[int][2]int64{}, user: map[int][2]time.Time{}})
}

// recordingTap records each frame the playout writes before it goes out.
type recordingTap struct{ c *Call }

func (w recordingTap) WriteFrame(pcm []int16) error {
	if r := w.c.rec.Load(); r != nil {
		if r.take.Agent(pcm) == 1 {
			r.start.Store(w.c.clk.Now().UnixNano())
		}
	}
	return w.c.t.WriteFrame(pcm)
}

// out is where the playout writes: the transport, through the recording
// when the call is recorded.
func (c *Call) out() FrameWriter {
	if c.rec.Load() != nil {
		return recordingTap{c}
	}
	return c.t
}

// recordSpeech notes that assistant turn id's audio is playing.
func (c *Call) recordSpeech(id int) {
	r := c.rec.Load()
	if r == nil {
		return
	}
	n := r.take.Frames()
	r.mu.Lock()
	span, ok := r.agent[id]
	if !ok {
		span[0] = n - 1
	}
	span[1] = n
	r.agent[id] = span
	r.mu.Unlock()
}

// sayConsent says the recording's consent sentence first, when the call
// is recorded; the caller's first words answer it.
func (c *Call) sayConsent(ctx context.Context) {
	r := c.rec.Load()
	if r == nil || r.policy.Consent == "-" {
		return
	}
	text := r.policy.Consent
	if text == "" {
		text = config.DefaultRecordingConsent
	}
	t := c.speakFixed(ctx, text)
	if t == nil {
		return
	}
	r.mu.Lock()
	r.asked = true
	r.mu.Unlock()
	// What follows (the greeting) waits for it: a new turn would cut it.
	select {
	case <-t.committed:
	case <-ctx.Done():
	}
}

// declines matches a caller's answer that refuses the recording.
var declines = regexp.MustCompile(`(?i)^\W*(no|nope|no thanks|no thank you)\b|\b(don'?t|do not|please don'?t|not be|rather not) (record|be recorded)|\bno recording\b|\b(i )?(don'?t|do not) (consent|agree)\b|\bstop recording\b`)

// heardCaller notes where caller turn id sits in the recording, and, for
// the first words after the consent sentence, whether they decline it: a
// declined recording is discarded whole and the call goes on unrecorded.
func (c *Call) heardCaller(id int, text string, u utterance) {
	r := c.rec.Load()
	if r == nil {
		return
	}
	r.mu.Lock()
	if !u.began.IsZero() {
		r.user[id] = [2]time.Time{u.began, u.lastVoice}
	}
	answer := r.asked
	r.asked = false
	r.mu.Unlock()
	if answer && declines.MatchString(strings.TrimSpace(text)) && c.rec.CompareAndSwap(r, nil) {
		r.take.Discard()
		c.m.log.Info("call recording declined", "call", c.info.ID)
	}
}

// keepRecording stores the call's recording with where each heard entry
// sits in it, before the call's completion is recorded.
func (c *Call) keepRecording(ctx context.Context, entries []Entry) {
	r := c.rec.Swap(nil)
	if r == nil {
		return
	}
	retention := r.policy.Retention
	if retention <= 0 {
		retention = config.DefaultRecordingRetention
	}
	start := time.Unix(0, r.start.Load())
	r.mu.Lock()
	marks := make([]recordings.Mark, 0, len(entries))
	for _, e := range entries {
		switch e.Role {
		case RoleAssistant:
			if span, ok := r.agent[e.Turn]; ok {
				marks = append(marks, recordings.Mark{Turn: e.Turn, Role: e.Role, StartMs: span[0] * 20, EndMs: span[1] * 20})
			}
		case RoleUser:
			if span, ok := r.user[e.Turn]; ok {
				marks = append(marks, recordings.Mark{Turn: e.Turn, Role: e.Role,
					StartMs: max(0, span[0].Sub(start).Milliseconds()), EndMs: max(0, span[1].Sub(start).Milliseconds()+20)})
			}
		}
	}
	r.mu.Unlock()
	if _, err := r.take.Keep(ctx, recordings.Meta{AgentID: c.info.Agent, UserID: c.sel.Value, Retention: retention, Marks: marks}); err != nil {
		c.m.log.Warn("voice: keep recording", "call", c.info.ID, "error", err)
	}
}
