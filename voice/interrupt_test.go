package voice

import (
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
)

// longAnswer is about 5 s of the scripted voice: long enough to talk over.
const longAnswer = "First sentence is short. Second sentence is a little longer than that. Third sentence goes on and on for quite a while. Fourth sentence ends it."

// overlapRun starts a call on the talker agent, asks for the long answer
// and steps until about a second of it played.
func overlapRun(t *testing.T, overlapTranscript string) (*env, *run) {
	t.Helper()
	e := newEnv(t)
	e.model.ScriptTranscripts("Tell me everything.", overlapTranscript)
	r := talkingAtLength(e, "Okay, Tuesday it is.")
	return e, r
}

// interruptions is what the call's metrics recorded of the overlaps of
// its agent turns.
func interruptions(rec CallRecord) []map[string]any {
	var out []map[string]any
	for _, m := range rec.Metrics {
		if list, ok := m["interruptions"].([]any); ok {
			for _, x := range list {
				out = append(out, x.(map[string]any))
			}
		}
	}
	return out
}

// A backchannel while the agent speaks pauses the playout at once and
// resumes it where it paused: the caller hears every sample of the answer,
// the heard transcript has the whole answer once (not cut), the
// backchannel is no turn (the model is not asked again), and the turn
// records the overlap as resumed.
func TestBackchannelPausesAndResumes(t *testing.T) {
	t.Parallel()
	e, r := overlapRun(t, "Mm-hmm.")
	before := r.line.voicedOut()
	r.say(400)
	r.step(len(r.in))
	if grew := r.line.voicedOut() - before; grew > 4 {
		t.Fatalf("the agent went on over the caller's backchannel: %d voiced frames played during it", grew)
	}
	r.stepUntil("the answer to play through", 1500, func() bool { return len(r.call.Entries()) >= 2 })
	entries := r.call.Entries()
	if len(entries) != 2 || entries[1].Text != longAnswer || entries[1].Cut {
		t.Fatalf("heard transcript %+v, want the whole answer once", entries)
	}
	// 2 frames of the scripted voice per character of each of the four
	// sentences (the spaces between them are not spoken): every one was
	// heard.
	if want := 2 * (len(longAnswer) - 3); r.line.voicedOut() < want {
		t.Fatalf("the caller heard %d voiced frames of the answer's %d", r.line.voicedOut(), want)
	}
	r.step(100)
	if n := len(e.model.ChatRequests()); n != 1 {
		t.Fatalf("the model was asked %d times: the backchannel was taken as a turn", n)
	}
	r.call.End(OutcomeCompleted, "")
	got := interruptions(r.end())
	if len(got) != 1 || got[0]["outcome"] != overlapResumed || got[0]["pausedMs"] == nil {
		t.Fatalf("interruptions recorded %v", got)
	}
}

// A noise burst (a click, a cough too short to be speech) pauses and
// resumes the agent the same way.
func TestNoiseBurstDoesNotInterrupt(t *testing.T) {
	t.Parallel()
	e, r := overlapRun(t, "")
	r.say(100)
	r.step(len(r.in) + 20)
	r.stepUntil("the answer to play through", 1500, func() bool { return len(r.call.Entries()) >= 2 })
	if entries := r.call.Entries(); len(entries) != 2 || entries[1].Text != longAnswer || entries[1].Cut {
		t.Fatalf("heard transcript %+v, want the whole answer once", entries)
	}
	r.step(100)
	if n := len(e.model.ChatRequests()); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
	r.call.End(OutcomeCompleted, "")
	if got := interruptions(r.end()); len(got) != 1 || got[0]["outcome"] != overlapResumed {
		t.Fatalf("interruptions recorded %v", got)
	}
}

// A real barge-in ("No, wait, I meant Tuesday.") pauses the agent at the
// caller's first sound and makes it yield once the words arrive: the
// answer is cut where the caller heard it stop (nothing played after the
// pause), the caller's words are their turn, and the model's next request
// holds only what was heard.
func TestBargeInYieldsWhereItPaused(t *testing.T) {
	t.Parallel()
	e, r := overlapRun(t, "No, wait, I meant Tuesday.")
	r.say(600)
	r.step(3) // the VAD's start of speech
	paused := r.line.voicedOut()
	r.stepUntil("the interruption to be answered", 1000, func() bool {
		return len(e.model.ChatRequests()) >= 2 && len(r.call.Entries()) >= 3
	})
	entries := r.call.Entries()
	if len(entries) < 3 || entries[2].Role != "user" || entries[2].Text != "No, wait, I meant Tuesday." {
		t.Fatalf("transcript %+v", entries)
	}
	heard := entries[1].Text
	if !entries[1].Cut || !strings.HasPrefix(longAnswer, heard) || heard == longAnswer || strings.Contains(heard, "Fourth") {
		t.Fatalf("committed %q: not the part heard before the pause", heard)
	}
	// What the caller heard of the answer is what played before the pause:
	// the committed sentences are no longer than the frames played.
	if 2*len(heard) > paused {
		t.Fatalf("committed %d characters, but only %d frames played before the pause", len(heard), paused)
	}
	for _, m := range e.model.ChatRequests()[1].Messages {
		if strings.Contains(m.Content, "Fourth sentence") {
			t.Fatal("unheard text reached the model")
		}
	}
	r.call.End(OutcomeCompleted, "")
	if got := interruptions(r.end()); len(got) != 1 || got[0]["outcome"] != overlapYielded || got[0]["words"] != float64(5) {
		t.Fatalf("interruptions recorded %v", got)
	}
}

func TestBackchannelWords(t *testing.T) {
	in := newInterruption(config.Agent{})
	for text, want := range map[string]int{
		"Mm-hmm.": 0, "Yeah, yeah.": 0, "Okay.": 0, "Uh huh": 0, "All right!": 0, "Sí, vale.": 0, "D'accord.": 0,
		"No, wait.": 2, "I meant Tuesday": 3, "Yeah, but Tuesday.": 2, "": 0, "(cough)": 1,
	} {
		if got := in.substantive(text); got != want {
			t.Errorf("substantive(%q) = %d, want %d", text, got, want)
		}
	}
}

// When no words come for the caller's sound over the agent (its
// transcription hangs), the playout resumes ResumeAfter after the pause,
// once the caller is quiet, and the sound is no turn.
func TestPausedAgentResumesWithoutWords(t *testing.T) {
	t.Parallel()
	e, r := overlapRun(t, "")
	e.model.SetFault(providertest.EndpointTranscriptions, providertest.Fault{Hang: time.Minute})
	before := r.line.voicedOut()
	r.say(300)
	r.step(len(r.in))
	paused := r.line.voicedOut()
	if paused-before > 4 {
		t.Fatalf("the agent went on over the caller: %d voiced frames", paused-before)
	}
	// Quiet, still no words: paused until a second after the pause began.
	r.step(30)
	if r.line.voicedOut() != paused {
		t.Fatalf("the agent resumed %d ms after the pause, before resumeAfter", 20*(15+30))
	}
	r.stepUntil("the agent to resume", 100, func() bool { return r.line.voicedOut() > paused })
	e.model.ClearFault(providertest.EndpointTranscriptions)
	r.stepUntil("the answer to play through", 1500, func() bool { return len(r.call.Entries()) >= 2 })
	if entries := r.call.Entries(); len(entries) != 2 || entries[1].Text != longAnswer {
		t.Fatalf("heard transcript %+v", entries)
	}
	r.call.End(OutcomeCompleted, "")
	if got := interruptions(r.end()); len(got) != 1 || got[0]["outcome"] != overlapResumed || got[0]["pausedMs"].(float64) < 1000 {
		t.Fatalf("interruptions recorded %v", got)
	}
}

// Words that arrive after the caller's overlapping utterance ended (a slow
// transcription) still make the agent yield when they are more than
// backchannels: the utterance is the caller's turn and is answered.
func TestLateWordsStillYield(t *testing.T) {
	t.Parallel()
	e, r := overlapRun(t, "No, wait, I meant Tuesday.")
	e.model.SetAudioLatency(providertest.AudioLatency{Transcription: 400 * time.Millisecond})
	r.say(600)
	r.stepUntil("the interruption to be answered", 3000, func() bool {
		return len(e.model.ChatRequests()) >= 2 && len(r.call.Entries()) >= 3
	})
	entries := r.call.Entries()
	if len(entries) < 3 || !entries[1].Cut || entries[2].Text != "No, wait, I meant Tuesday." {
		t.Fatalf("transcript %+v", entries)
	}
	r.call.End(OutcomeCompleted, "")
	got := interruptions(r.end())
	if len(got) == 0 || got[len(got)-1]["outcome"] != overlapYielded {
		t.Fatalf("interruptions recorded %v", got)
	}
}

// A barge-in whose first word comes with a pause after it ("No, ... wait,
// I meant Tuesday."): the word that is more than a backchannel holds the
// pause (the caller is going on), so the agent does not resume into the
// rest; the rest makes it yield, and the whole is the caller's turn.
func TestFirstWordOfABargeInHoldsThePause(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.ScriptTranscripts("Tell me everything.")
	e.model.RespondTranscripts(func(wav []byte) string {
		if (len(wav)-44)/2 < 8000*7/10 { // the first word and its pause
			return "No,"
		}
		return "No, wait, I meant Tuesday."
	})
	r := talkingAtLength(e, "Okay, Tuesday it is.")
	r.say(300)
	r.step(len(r.in))
	holdsTheFirstPause(t, e, r)
}

// talkingAtLength starts a call whose caller asks a question and whose
// agent answers it at length (longAnswer, playing when it returns), then
// with answer.
func talkingAtLength(e *env, answer string) *run {
	e.model.Script(providertest.Reply{Content: longAnswer}, providertest.Reply{Content: answer})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	r.say(800)
	r.stepUntil("the answer to start playing", 1000, func() bool { return r.line.voicedOut() > 50 })
	return r
}

// holdsTheFirstPause checks the rest of a barge-in whose first word ("No,")
// the caller said: the agent plays nothing through 300 ms of their quiet,
// in which the speculation of "No," answers, and yields to "wait, I meant
// Tuesday.", which is the caller's turn.
func holdsTheFirstPause(t *testing.T, e *env, r *run) {
	t.Helper()
	paused := r.line.voicedOut()
	r.step(15)
	if grew := r.line.voicedOut() - paused; grew > 0 {
		t.Fatalf("the agent resumed after the barge-in's first word: %d voiced frames played in the caller's pause", grew)
	}
	r.say(900)
	r.stepUntil("the interruption to be answered", 1000, func() bool {
		return len(e.model.ChatRequests()) >= 2 && len(r.call.Entries()) >= 3
	})
	if grew := r.line.voicedOut() - paused; grew > 2*len("Okay, Tuesday it is.") {
		t.Fatalf("%d voiced frames after the pause: more than the answer to the barge-in", grew)
	}
	if en := r.call.Entries(); en[2].Role != RoleUser || en[2].Text != "No, wait, I meant Tuesday." {
		t.Fatalf("transcript %+v", en)
	}
	r.call.End(OutcomeCompleted, "")
	if got := interruptions(r.end()); len(got) != 1 || got[0]["outcome"] != overlapYielded {
		t.Fatalf("interruptions recorded %v", got)
	}
}

// The transcription of a barge-in while it goes on (HTTP) may come before
// its first word is whole, and find no words: that says nothing of the
// pause that follows, so the agent holds its pause through the caller's
// breath until the words of it are known ("No,"), and yields.
func TestAnOverlapTranscribedBeforeItsFirstWordHoldsThePause(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.ScriptTranscripts("Tell me everything.")
	e.model.RespondTranscripts(func(wav []byte) string {
		switch n := (len(wav) - 44) / 2; {
		case n < 8000*7/10: // the first word under way
			return ""
		case n < 8000*11/10: // the first word and its pause
			return "No,"
		}
		return "No, wait, I meant Tuesday."
	})
	r := talkingAtLength(e, "Okay, Tuesday it is.")
	uploads := len(e.model.Uploads())
	r.say(600)
	// 300 ms of the overlap's voice: its transcription is asked, and
	// answers before the word's last frames.
	r.step(22)
	poll.Until(t, "the overlap's transcription", 10*time.Second, func() bool { return len(e.model.Uploads()) > uploads })
	r.step(len(r.in))
	holdsTheFirstPause(t, e, r)
}

// A barge-in whose first word is known ("Sorry,", from the speculation at
// its comma) and goes on without a pause: the agent yields once the
// caller has talked half of minVoiced, not the whole of it.
func TestAWordThatIsNoBackchannelYieldsAtHalfMinVoiced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.ScriptTranscripts("Tell me everything.")
	e.model.RespondTranscripts(func(wav []byte) string {
		if (len(wav)-44)/2 < 8000*6/10 {
			return "Sorry,"
		}
		return "Sorry, can you repeat that?"
	})
	r := talkingAtLength(e, "Of course.")
	r.say(300) // "Sorry,"
	r.step(len(r.in))
	r.step(8) // its comma: the speculation of "Sorry," is asked
	poll.Until(t, "the speculation's answer", 10*time.Second, func() bool { return len(e.model.Uploads()) >= 2 })
	// A few more quiet frames, each after a poll's wait, so the answer is
	// read by the listener before the caller goes on.
	quiet := 0
	poll.Until(t, "quiet frames", 10*time.Second, func() bool { r.step(1); quiet++; return quiet >= 4 })
	r.say(1200)
	r.step(len(r.in))
	r.stepUntil("the barge-in to be answered", 1000, func() bool { return len(e.model.ChatRequests()) >= 2 })
	r.call.End(OutcomeCompleted, "")
	got := interruptions(r.end())
	if len(got) != 1 || got[0]["outcome"] != overlapYielded || got[0]["voicedMs"].(float64) > 700 {
		t.Fatalf("interruptions recorded %v, want a yield before 700 ms of voice", got)
	}
}
