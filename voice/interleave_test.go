package voice

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/provider/providertest"
)

// watchedLine is a test line that checks, at every voiced frame the call
// writes, that the answer playing belongs to a confirmed turn: a turn is
// on the playout, and the caller's side it answers is committed.
type watchedLine struct {
	line
	call  atomic.Pointer[Call]
	mu    sync.Mutex
	early int   // voiced frames written before their turn was confirmed
	last  *turn // the turn of the previous voiced frame
}

func (w *watchedLine) WriteFrame(pcm []int16) error {
	if c := w.call.Load(); c != nil && Level(pcm) > -40 {
		c.mu.Lock()
		t := c.speaking
		c.mu.Unlock()
		w.mu.Lock()
		if t == nil {
			// A barge-in or the answer's end clears c.speaking before the
			// playout is interrupted: a frame the play loop took from the
			// playout just before is written after, and belongs to the
			// turn of the frames before it.
			t = w.last
		}
		w.last = t
		w.mu.Unlock()
		confirmed := t != nil
		if t != nil && t.u.pcm != nil { // a caller's turn, not a fixed phrase
			confirmed = false
			for _, e := range c.Entries() {
				confirmed = confirmed || (e.Role == RoleUser && e.Turn == t.id-1)
			}
		}
		w.mu.Lock()
		if !confirmed {
			w.early++
		}
		w.mu.Unlock()
	}
	return w.line.WriteFrame(pcm)
}

// Random interleavings of the caller's speech and pauses, speculative and
// interim transcripts, preemptive answers started and abandoned, model
// and speech answers arriving at random moments, and barge-in: whatever
// the order, no agent audio plays before its turn is confirmed, nothing of
// an abandoned speculation is committed or reaches the model's history,
// each agent entry is whole sentences that played (and all of it when not
// cut), and the call completes and saves exactly once.
func TestRandomInterleavingsKeepTheHeardTranscriptTrue(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			interleave(t, seed, seed%2 == 1)
		})
	}
}

const interleaveAnswer = "Alpha one. Bravo two is here. Charlie three."

func interleave(t *testing.T, seed uint64, streaming bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	// The provider's own randomness, from its goroutines.
	prng := rand.New(rand.NewPCG(seed, 7))
	var pmu sync.Mutex
	jitter := func(max int) time.Duration {
		pmu.Lock()
		defer pmu.Unlock()
		return time.Duration(prng.IntN(max)) * time.Millisecond
	}
	// The caller's words from the audio alone: its length picks how the
	// words end (a question, a statement, a trailing word, nothing), so a
	// speculation of part of an utterance reads differently from the whole.
	words := func(samples int) string {
		n := samples / 160
		switch n % 4 {
		case 0:
			return fmt.Sprintf("Caller frames %d?", n)
		case 1:
			return fmt.Sprintf("Caller frames %d.", n)
		case 2:
			return fmt.Sprintf("Caller frames %d and", n)
		}
		return fmt.Sprintf("Caller frames %d", n)
	}
	f := &fakeStreamSTT{}
	var e *env
	if streaming {
		e = streamingEnv(t, f)
	} else {
		e = newEnv(t)
	}
	e.model.RespondTranscripts(func(wav []byte) string { return words((len(wav) - 44) / 2) })
	e.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if req.Model == "extractor" {
			return providertest.Reply{Content: `{"operations":[],"summary":"A test call."}`}
		}
		return providertest.Reply{Content: interleaveAnswer, Delay: jitter(30), ChunkDelay: jitter(5)}
	})
	// The stream's final is the words of the audio since the last final.
	f.final = func(s *fakeStream) TranscriptEvent {
		s.mu.Lock()
		n := s.samples
		s.samples = 0
		s.mu.Unlock()
		return TranscriptEvent{Text: words(n), Final: true}
	}

	c, err := e.mgr.Open(t.Context(), CallInfo{Agent: "talker", PhoneNumber: fmt.Sprintf("+1555%04d", seed), Direction: Inbound})
	if err != nil {
		t.Fatal(err)
	}
	wl := &watchedLine{}
	wl.call.Store(c)
	r := &run{e: e, call: c, line: &wl.line, done: make(chan error, 1), stop: func() {}}
	go func() { r.done <- c.Run(t.Context(), wl) }()
	for i := 0; wl.writes.Load() == 0; i++ {
		if i > 5000 {
			t.Fatal("the call never started playing")
		}
		e.clock.Add(FrameDuration)
		time.Sleep(time.Millisecond)
	}
	turns := 3 + rng.IntN(3)
	for range turns {
		parts := 1 + rng.IntN(3)
		for p := range parts {
			if p > 0 {
				r.step(5 + rng.IntN(35)) // a pause of 100-800 ms
			}
			r.say(300 + 20*rng.IntN(45))
			for len(r.in) > 0 {
				r.step(1)
				if streaming && rng.IntN(6) == 0 {
					if s := f.stream(); s != nil {
						// An interim that may or may not match the final.
						s.results <- TranscriptEvent{Text: words(160 * (10 + rng.IntN(200)))}
					}
				}
				if streaming && rng.IntN(12) == 0 {
					if s := f.stream(); s != nil {
						// Words the provider's own endpointing settled,
						// through all the audio so far or short of it.
						through := s.through(8000) - time.Duration(rng.IntN(3))*200*time.Millisecond
						s.results <- TranscriptEvent{Text: words(160 * (10 + rng.IntN(200))), Settled: true, Through: through}
					}
				}
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
			}
		}
		// Silence of random length: sometimes the answer plays through,
		// sometimes the caller talks over it.
		for range 10 + rng.IntN(150) {
			r.step(1)
			time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond)
		}
	}
	// The last words' transcription and the answer to them, however slow
	// the machine: the provider's answers come in call time from here.
	stepped := 0
	r.stepPatiently("the last turn", 101, func() bool { stepped++; return stepped > 100 })
	r.stepUntil("quiet", 2000, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.speaking == nil && !c.answering
	})
	c.End(OutcomeCallerHangup, "")
	rec := r.end()

	wl.mu.Lock()
	early := wl.early
	wl.mu.Unlock()
	if early > 0 {
		t.Fatalf("%d voiced frames played before their turn was confirmed", early)
	}
	// Every agent entry is whole sentences of the answer, all of it unless
	// cut, and no more than played.
	sentences := strings.SplitAfter(interleaveAnswer, ". ")
	for i, en := range rec.Transcript {
		if en.Role != RoleAssistant {
			continue
		}
		if en.Text == fallbackText && !en.Cut {
			continue // a failed turn's apology, played through
		}
		if !strings.HasPrefix(interleaveAnswer, en.Text) || (!en.Cut && en.Text != interleaveAnswer) {
			t.Fatalf("entry %d %q is not what played of %q", i, en.Text, interleaveAnswer)
		}
		if whole := strings.Join(sentences, ""); en.Text != whole {
			ok := false
			for k := 1; k <= len(sentences); k++ {
				ok = ok || strings.TrimSpace(strings.Join(sentences[:k], "")) == en.Text
			}
			if !ok {
				t.Fatalf("entry %d %q is not whole sentences", i, en.Text)
			}
		}
	}
	// The model's history in every request is the heard transcript as it
	// was: nothing of an abandoned speculation or answer.
	heardTexts := map[string]bool{}
	for _, en := range rec.Transcript {
		heardTexts[en.Text] = true
	}
	for _, req := range e.model.ChatRequests() {
		if req.Model == "extractor" {
			continue
		}
		for k, m := range req.Messages {
			if m.Role == "system" || k == len(req.Messages)-1 {
				continue // the last is the turn being answered (maybe abandoned)
			}
			if !heardTexts[m.Content] {
				t.Fatalf("the model's history holds %q, which is not in the heard transcript", m.Content)
			}
		}
	}
	if n := e.ends.count(c.ID()); n != 1 {
		t.Fatalf("%d completions", n)
	}
	if n := e.extractions(); n != 1 || !rec.Memory.Saved {
		t.Fatalf("%d memory saves (saved %v)", n, rec.Memory.Saved)
	}
	// The save got exactly the heard transcript.
	var extract string
	for _, req := range e.model.ChatRequests() {
		if req.Model == "extractor" {
			extract = req.Messages[len(req.Messages)-1].Content
		}
	}
	for _, en := range rec.Transcript {
		if !strings.Contains(extract, en.Text) {
			t.Fatalf("the save lacks the heard %q", en.Text)
		}
	}
	t.Logf("seed %d streaming %v: %d turns spoken, %d entries, %d chat requests", seed, streaming, turns, len(rec.Transcript), len(e.model.ChatRequests()))
}
