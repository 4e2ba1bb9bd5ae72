package voice

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
)

// fakeStreamSTT is an agent's streaming transcriber in the test: each
// Listen opens a fakeStream the test drives.
type fakeStreamSTT struct {
	Transcriber
	mu      sync.Mutex
	streams []*fakeStream
	final   func(s *fakeStream) TranscriptEvent // the answer to Finalize
}

func (f *fakeStreamSTT) Listen(context.Context, int) (TranscriptStream, error) {
	s := &fakeStream{owner: f, results: make(chan TranscriptEvent, 64)}
	f.mu.Lock()
	f.streams = append(f.streams, s)
	f.mu.Unlock()
	return s, nil
}

// opened waits for the call's stream: the listener opens it as the call
// starts, beside the greeting.
func (f *fakeStreamSTT) opened(t testing.TB) *fakeStream {
	t.Helper()
	poll.Until(t, "the call's speech-to-text stream", 10*time.Second, func() bool { return f.stream() != nil })
	return f.stream()
}

func (f *fakeStreamSTT) stream() *fakeStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.streams) == 0 {
		return nil
	}
	return f.streams[len(f.streams)-1]
}

type fakeStream struct {
	owner   *fakeStreamSTT
	mu      sync.Mutex
	samples int // since the last final (the final func may reset it)
	total   int // on the stream
	finals  int
	closed  bool
	results chan TranscriptEvent
}

func (s *fakeStream) Send(pcm []int16) error {
	s.mu.Lock()
	s.samples += len(pcm)
	s.total += len(pcm)
	s.mu.Unlock()
	return nil
}

func (s *fakeStream) Finalize() error {
	s.mu.Lock()
	s.finals++
	s.mu.Unlock()
	s.results <- s.owner.final(s)
	return nil
}

func (s *fakeStream) Results() <-chan TranscriptEvent { return s.results }

func (s *fakeStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.results)
	}
	return nil
}

// through is how much audio the stream carried, on its own time.
func (s *fakeStream) through(rate int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.total) * time.Second / time.Duration(rate)
}

func (s *fakeStream) sent() (samples, finals int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.finals
}

func streamingEnv(t *testing.T, f *fakeStreamSTT) *env {
	return newEnv(t, func(c *Config) {
		inner := c.Speech
		c.Speech = func(name string, ag config.Agent, rate int) (Transcriber, Synthesizer, error) {
			stt, tts, err := inner(name, ag, rate)
			f.Transcriber = stt
			return f, tts, err
		}
	})
}

// With a streaming transcriber the caller's audio goes out as they speak;
// an interim that ends a question ends the turn after the minimum delay,
// the endpoint asks for the final, and the final is what commits. No
// utterance is uploaded for transcription.
func TestStreamingTranscriptionEndsEarlyAndCommitsTheFinal(t *testing.T) {
	t.Parallel()
	f := &fakeStreamSTT{final: func(*fakeStream) TranscriptEvent {
		return TranscriptEvent{Text: "What time do you open tomorrow?", Final: true}
	}}
	e := streamingEnv(t, f)
	e.model.Script(providertest.Reply{Content: "At nine."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	s := f.opened(t)
	r.say(1000)
	r.step(25)
	s.results <- TranscriptEvent{Text: "What time do"}
	r.step(len(r.in))
	r.step(1)
	s.results <- TranscriptEvent{Text: "What time do you open tomorrow?"}
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	entries := r.call.Entries()
	if entries[0].Text != "What time do you open tomorrow?" || entries[1].Text != "At nine." {
		t.Fatalf("heard %+v", entries)
	}
	samples, finals := s.sent()
	if finals != 1 || samples < 8000*800/1000 { // the voiced 800 ms of the second, at least
		t.Fatalf("stream got %d samples and %d finalize requests", samples, finals)
	}
	r.call.End(OutcomeCompleted, "")
	rec := r.end()
	m := rec.Metrics[0]
	if m["transcription"] != "stream" || m["endpoint"] != endComplete {
		t.Fatalf("metrics %+v", m)
	}
	if eou := m["endOfUtteranceMs"].(float64); eou > 400 {
		t.Fatalf("end of utterance %v ms after a complete question", eou)
	}
	if n := len(e.model.Uploads()); n != 0 {
		t.Fatalf("%d utterances uploaded with a streaming transcriber", n)
	}
}

// A stream that fails mid-call leaves the call on one request per
// utterance.
func TestFailedStreamFallsBackToRequests(t *testing.T) {
	t.Parallel()
	f := &fakeStreamSTT{final: func(*fakeStream) TranscriptEvent { return TranscriptEvent{Text: "unused", Final: true} }}
	e := streamingEnv(t, f)
	e.model.ScriptTranscripts("Are you there?")
	e.model.Script(providertest.Reply{Content: "Yes."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	s := f.opened(t)
	s.results <- TranscriptEvent{Err: context.DeadlineExceeded}
	s.Close()
	r.say(800)
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	if entries := r.call.Entries(); entries[0].Text != "Are you there?" || entries[1].Text != "Yes." {
		t.Fatalf("heard %+v", entries)
	}
	r.call.End(OutcomeCompleted, "")
	r.end()
}

// When the provider's own end-of-speech detection settled the words
// through the caller's last voiced frame, the endpoint takes them at once
// and drops the answer to its Finalize (the silence after them); words
// settled short of the last voiced frame do not end the wait: the turn
// takes the Finalize's answer.
func TestSettledWordsAnswerTheEndpointWhenTheyCoverTheSpeech(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cover  bool
		commit string
	}{
		{"covering", true, "What time do you open tomorrow?"},
		{"short", false, "What time do you open on Sunday?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeStreamSTT{final: func(*fakeStream) TranscriptEvent {
				return TranscriptEvent{Text: "What time do you open on Sunday?", Final: true}
			}}
			e := streamingEnv(t, f)
			// The answer started on the settled words, and again on the
			// final when it differs.
			e.model.Script(providertest.Reply{Content: "At nine."}, providertest.Reply{Content: "At nine."})
			r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
			s := f.opened(t)
			r.say(1000)
			r.step(len(r.in))
			r.step(1)
			through := s.through(8000)
			if !tc.cover {
				through = 400 * time.Millisecond
			}
			s.results <- TranscriptEvent{Text: "What time do you open tomorrow?", Settled: true, Through: through}
			r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
			if got := r.call.Entries()[0].Text; got != tc.commit {
				t.Fatalf("committed %q, want %q", got, tc.commit)
			}
			if _, finals := s.sent(); finals != 1 {
				t.Fatalf("%d Finalize calls, want the endpoint's one", finals)
			}
			r.call.End(OutcomeCompleted, "")
			rec := r.end()
			if m := rec.Metrics[0]; m["transcription"] != "stream" || m["endpoint"] != endComplete {
				t.Fatalf("metrics %+v", m)
			}
		})
	}
}

// An interim that reads as a whole statement once the caller fell silent
// starts the answer at once when the agent's answers take longer than the
// statement's endpoint (600 ms) to be ready, and holds it: nothing plays until the endpoint confirms the turn,
// then the held answer is the one heard.
func TestCompleteWordsStartTheAnswerBeforeTheEndpoint(t *testing.T) {
	t.Parallel()
	const said = "I would like a table for two."
	f := &fakeStreamSTT{final: func(*fakeStream) TranscriptEvent { return TranscriptEvent{Text: said, Final: true} }}
	e := streamingEnv(t, f)
	e.mgr.answerLead["talker"] = time.Second // the answers are known to be slow: start early
	e.model.Script(providertest.Reply{Content: "Of course."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	s := f.opened(t)
	r.say(1000)
	r.step(len(r.in))
	r.step(1) // 20 ms of silence on the call's clock, and no more below
	s.results <- TranscriptEvent{Text: said}
	poll.Until(t, "the held answer's speech", 10*time.Second, func() bool { return len(e.model.SpeechRequests()) >= 1 })
	if n := len(e.model.ChatRequests()); n != 1 {
		t.Fatalf("%d chat requests before the endpoint", n)
	}
	if n := r.line.voicedOut(); n != 0 || len(r.call.Entries()) != 0 {
		t.Fatalf("%d voiced frames played, entries %+v, before the endpoint", n, r.call.Entries())
	}
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	if en := r.call.Entries(); en[0].Text != said || en[1].Text != "Of course." {
		t.Fatalf("heard %+v", en)
	}
	r.call.End(OutcomeCompleted, "")
	rec := r.end()
	m := rec.Metrics[0]
	if m["preemptive"] != true || m["endpoint"] != endClosed {
		t.Fatalf("metrics %+v", m)
	}
	if eou := m["endOfUtteranceMs"].(float64); eou < 240 {
		t.Fatalf("the turn ended %v ms after the statement, before its endpoint", eou)
	}
}
