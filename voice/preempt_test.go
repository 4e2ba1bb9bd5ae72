package voice

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
)

// The caller asks a question and pauses: the answer starts on the
// speculative transcript before the endpoint, is generated and
// synthesised, and held. The caller goes on before the endpoint: the held
// answer is abandoned without a frame of it played, nothing of it is
// committed or sent to the model again, its run is marked cancelled, and
// the whole question is answered.
func TestPreemptiveAnswerIsHeldAndAbandonedWhenTheCallerGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A question ends the turn after a full second here, so the endpoint is
	// far beyond the 140 ms of silence below on the call's clock however
	// the frames and the speculation's answer interleave on a loaded
	// machine (at 200 ms the turn was sometimes confirmed first, and the
	// scenario was another one).
	ag := e.mgr.cfg.Agents["talker"]
	ag.Voice = &config.AgentVoice{MinEndpointDelay: time.Second, MaxEndpointDelay: 1200 * time.Millisecond}
	e.mgr.cfg.Agents["talker"] = ag
	e.mgr.answerLead["talker"] = time.Second // the answers are known to be slow: start early
	e.model.RespondTranscripts(func(wav []byte) string {
		if len(wav)-44 < 2*8000 {
			return "Can I book a table?"
		}
		return "Can I book a table for two on Friday?"
	})
	e.model.Script(providertest.Reply{Content: "Sure, for how many?"}, providertest.Reply{Content: "Friday for two is booked."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	r.say(800)
	r.step(len(r.in))
	r.step(7) // 140 ms of silence: the speculation went out at 120 ms
	// On the call's clock the endpoint (200 ms after a question) has not
	// come; the held answer is generated and synthesised meanwhile.
	poll.Until(t, "the held answer's speech", 10*time.Second, func() bool { return len(e.model.SpeechRequests()) >= 1 })
	if n := r.line.voicedOut(); n != 0 {
		t.Fatalf("%d voiced frames played before the turn was confirmed (entries %+v)", n, r.call.Entries())
	}
	r.say(600) // the caller goes on
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	entries := r.call.Entries()
	if entries[0].Text != "Can I book a table for two on Friday?" || entries[1].Text != "Friday for two is booked." {
		t.Fatalf("heard %+v", entries)
	}
	r.call.End(OutcomeCompleted, "")
	rec := r.end()
	for _, en := range rec.Transcript {
		if strings.Contains(en.Text, "how many") {
			t.Fatal("the abandoned answer was committed")
		}
	}
	chats := e.model.ChatRequests()
	if len(chats) != 3 { // the abandoned, the answer, the extraction
		t.Fatalf("%d chat requests", len(chats))
	}
	for _, m := range chats[1].Messages {
		if m.Content == "Can I book a table?" || strings.Contains(m.Content, "how many") {
			t.Fatal("the abandoned speculation reached the model again")
		}
	}
	if !strings.Contains(chats[2].Messages[len(chats[2].Messages)-1].Content, "Friday for two is booked.") ||
		strings.Contains(chats[2].Messages[len(chats[2].Messages)-1].Content, "how many") {
		t.Fatal("the memory extraction did not get exactly the heard conversation")
	}
	m := rec.Metrics[0]
	wasted, _ := m["wasted"].([]any)
	kinds := map[string]bool{}
	for _, w := range wasted {
		kinds[w.(map[string]any)["kind"].(string)] = true
	}
	if !kinds["generation"] || m["preemptive"] != true {
		t.Fatalf("metrics %+v", m)
	}
	var abandoned int
	poll.Until(t, "the abandoned run marked", 10*time.Second, func() bool {
		list, err := runs.NewStore(e.mgr.cfg.Pool).List(context.Background(), runs.Filter{AgentID: "talker"})
		if err != nil {
			t.Fatal(err)
		}
		abandoned = 0
		for _, run := range list {
			if v, ok := run.Metadata["voice"].(map[string]any); ok && v["preemptive"] == "abandoned" && run.Status == runs.StatusCancelled {
				abandoned++
			}
		}
		return abandoned == 1
	})
	if n := e.ends.count(r.call.ID()); n != 1 {
		t.Fatalf("%d completions", n)
	}
}

// A turn lets go of the contexts of its requests once they are over: the
// speculation the turn was answered on and the generation that spoke the
// answer are done while the call goes on. A context never cancelled stays
// among the call's for the whole call, with everything its requests
// left in it (thousands of turns' worth on a loaded box).
func TestATurnLetsGoOfItsRequestsContexts(t *testing.T) {
	t.Parallel()
	rec := &requestContexts{}
	e := newEnv(t, func(c *Config) {
		inner := c.Speech
		c.Speech = func(name string, ag config.Agent, rate int) (Transcriber, Synthesizer, error) {
			stt, tts, err := inner(name, ag, rate)
			return contextsSTT{stt, rec}, contextsTTS{tts, rec}, err
		}
	})
	e.model.RespondTranscripts(func([]byte) string { return "What time do you open tomorrow?" })
	e.model.Script(providertest.Reply{Content: "At nine."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	r.say(800)
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	stts, ttss := rec.counts()
	if stts == 0 || ttss == 0 {
		t.Fatalf("%d transcriptions and %d syntheses seen", stts, ttss)
	}
	poll.Until(t, "every request's context to be done while the call goes on", 10*time.Second, func() bool {
		return rec.open() == 0
	})
	r.call.End(OutcomeCompleted, "")
	if how := r.end().Metrics[0]["transcription"]; how != "speculative" {
		t.Fatalf("the turn's transcription was %v, not the speculation's", how)
	}
}

// requestContexts keeps the contexts the call's engines were asked under.
type requestContexts struct {
	mu         sync.Mutex
	ctxs       []context.Context
	stts, ttss int
}

func (r *requestContexts) keep(ctx context.Context, stt bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctxs = append(r.ctxs, ctx)
	if stt {
		r.stts++
	} else {
		r.ttss++
	}
}

func (r *requestContexts) counts() (stts, ttss int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stts, r.ttss
}

// open counts the contexts not done.
func (r *requestContexts) open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ctx := range r.ctxs {
		if ctx.Err() == nil {
			n++
		}
	}
	return n
}

type contextsSTT struct {
	Transcriber
	r *requestContexts
}

func (s contextsSTT) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	s.r.keep(ctx, true)
	return s.Transcriber.Transcribe(ctx, pcm, rate)
}

type contextsTTS struct {
	Synthesizer
	r *requestContexts
}

func (s contextsTTS) Synthesize(ctx context.Context, text string, rate int) (Segment, error) {
	s.r.keep(ctx, false)
	return s.Synthesizer.Synthesize(ctx, text, rate)
}
