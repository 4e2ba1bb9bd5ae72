package voice

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
)

// A caller talks, the agent answers aloud, the caller hangs up: what was
// heard is saved once, and the next call from the number recalls it before
// the first answer.
func TestCallLifecycleSavesWhatWasHeardAndRecallsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	number := "+34600111222"

	e.model.ScriptTranscripts("I am interested in the AI master. Call me after four.")
	e.model.Script(
		providertest.Reply{Content: "Great. I will arrange a call after four."},
		// The extraction after the call:
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master."},{"op":"add","content":"Wants calls after 16:00."}],"summary":"Asked about the AI master."}`},
	)
	r := e.start(CallInfo{Agent: "receptionist", PhoneNumber: number, Trunk: "local"})
	// The greeting plays through, then the caller speaks.
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	r.say(1200)
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 3 })
	// While the call is up each entry is written once, as its own row,
	// and the record reads them; the end folds them into the record.
	poll.Until(t, "the heard turns to be persisted", 20*time.Second, func() bool {
		live, _ := e.mgr.Get(ctx, r.call.ID())
		return len(live.Transcript) == 3
	})
	if folded, rows := e.stored(r.call.ID()); folded != 0 || rows != 3 {
		t.Fatalf("during the call: %d entries in the record, %d rows (seq 0-2 once each), want 0 and 3", folded, rows)
	}
	r.call.End(OutcomeCallerHangup, "")
	rec := r.end()
	if folded, rows := e.stored(r.call.ID()); folded != 3 || rows != 0 {
		t.Fatalf("after the end: %d entries in the record, %d rows left, want 3 and 0", folded, rows)
	}
	if rec.Status != "ended" || *rec.Outcome != OutcomeCallerHangup || rec.DurationSeconds == nil || *rec.DurationSeconds < 1 {
		t.Fatalf("call record: %+v", rec)
	}
	var texts []string
	for _, en := range rec.Transcript {
		texts = append(texts, en.Role+": "+en.Text)
	}
	want := []string{"assistant: Hello, this is the front desk.", "user: I am interested in the AI master. Call me after four.",
		"assistant: Great. I will arrange a call after four."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("heard transcript %q, want %q", texts, want)
	}
	if !rec.Memory.Saved || rec.Memory.Identity != number || rec.Memory.IdentityKey != "phoneNumber" {
		t.Fatalf("memory report: %+v", rec.Memory)
	}
	facts, _ := e.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
	if len(facts.Facts) != 2 || len(facts.Calls) != 1 || *facts.Calls[0].Outcome != string(OutcomeCallerHangup) || *facts.Calls[0].DurationSeconds < 1 {
		t.Fatalf("saved memory: %+v", facts)
	}
	// The extraction got exactly the heard transcript.
	extract := e.model.ChatRequests()[1].Messages[1].Content
	for _, w := range want {
		if !strings.Contains(extract, strings.SplitN(w, ": ", 2)[1]) {
			t.Fatalf("extraction lacks %q", w)
		}
	}
	// The turn's metrics were recorded before the call record, from the
	// controller's clock: the speculative transcript after 120 ms of
	// silence ends on a statement that only tells, so the turn ended after
	// the sentence delay (600 ms) on it.
	if len(rec.Metrics) != 1 || rec.Metrics[0]["wireToWireMs"] == nil || rec.Metrics[0]["speechToTextMs"] == nil {
		t.Fatalf("metrics: %+v", rec.Metrics)
	}
	if eou := rec.Metrics[0]["endOfUtteranceMs"].(float64); eou < 590 || eou > 710 || rec.Metrics[0]["endpoint"] != endSentence ||
		rec.Metrics[0]["transcription"] != "speculative" {
		t.Fatalf("end of utterance %v ms on the call's clock (%v, %v), want the sentence delay on the speculative transcript",
			eou, rec.Metrics[0]["endpoint"], rec.Metrics[0]["transcription"])
	}
	if n := len(e.model.Uploads()); n != 1 {
		t.Fatalf("%d transcription requests, want the one speculative request kept", n)
	}

	// Second call from the same number: the recall is in what the model is
	// sent for its first answer.
	e.model.ScriptTranscripts("Hi again.")
	e.model.Script(providertest.Reply{Content: "Welcome back."})
	r2 := e.start(CallInfo{Agent: "receptionist", PhoneNumber: number})
	r2.stepUntil("the greeting", 500, func() bool { return len(r2.call.Entries()) == 1 })
	r2.say(800)
	r2.stepUntil("the first answer", 1000, func() bool { return len(e.model.ChatRequests()) >= 3 })
	first := e.model.ChatRequests()[2]
	if !strings.Contains(first.Messages[1].Content, "Interested in the AI master.") || first.Messages[1].Role != "system" {
		t.Fatalf("recall not sent before the first answer: %+v", first.Messages)
	}
	for _, tl := range first.Tools {
		if strings.HasPrefix(tl.Function.Name, "memory_") {
			t.Fatal("a call offered memory tools")
		}
	}
	r2.call.End(OutcomeCompleted, "")
	r2.end()
}

// The caller talks over a long answer: playout stops, the answer commits
// only the sentences that fully played (the provider's voice has no word
// timings), before the caller's interrupting turn, and the model's next
// request holds only what was heard.
func TestBargeInCommitsOnlyWhatPlayed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := "First sentence is short. Second sentence is a little longer than that. Third sentence goes on and on for quite a while. Fourth sentence is never reached."
	e.model.ScriptTranscripts("Tell me everything.", "Stop, please.")
	e.model.Script(providertest.Reply{Content: long}, providertest.Reply{Content: "Okay."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	r.say(800)
	// Interrupt once the second sentence has started playing: the first is
	// about 1 s of audio.
	r.stepUntil("the answer to start playing", 1000, func() bool { return r.line.voicedOut() > 70 })
	r.say(800)
	// The answer to it may start before its turn is confirmed (preemptive
	// generation), so wait for the commit, not for the model request.
	r.stepUntil("the interruption to be answered", 1000, func() bool {
		return len(e.model.ChatRequests()) >= 2 && len(r.call.Entries()) >= 3
	})
	entries := r.call.Entries()
	if len(entries) < 3 || entries[0].Role != "user" || entries[1].Role != "assistant" || entries[2].Role != "user" || entries[2].Text != "Stop, please." {
		t.Fatalf("transcript order: %+v", entries)
	}
	heard := entries[1].Text
	if !entries[1].Cut || entries[0].Cut || entries[2].Cut {
		t.Fatalf("only the interrupted answer is marked cut: %+v", entries)
	}
	if !strings.HasPrefix(long, heard) || strings.Contains(heard, "Fourth") || heard == long {
		t.Fatalf("committed %q: not a strict prefix of whole sentences of %q", heard, long)
	}
	// The model's next request knows only what was heard.
	for _, m := range e.model.ChatRequests()[1].Messages {
		if strings.Contains(m.Content, "Fourth sentence") {
			t.Fatal("unheard text reached the model")
		}
	}
	r.call.End(OutcomeCompleted, "")
	r.end()
}

// Every way a call ends is decided by the call's owner alone: the recorded
// outcome is the first end reported (or the call's own limit), and whatever
// else races it, there is exactly one completion and one save.
func TestEveryCallEndCompletesOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		info    CallInfo
		end     func(r *run)
		want    Outcome
		reason  string
		saves   int
		answerd bool
	}{
		{name: "caller BYE", end: func(r *run) { r.call.End(OutcomeCallerHangup, "") }, want: OutcomeCallerHangup, saves: 1},
		{name: "box hangs up", end: func(r *run) { r.call.End(OutcomeCompleted, "") }, want: OutcomeCompleted, saves: 1},
		{name: "room left", info: CallInfo{Direction: Browser, SampleRate: 16000},
			end: func(r *run) { r.call.End(OutcomeCallerHangup, "") }, want: OutcomeCallerHangup, saves: 1},
		{name: "session expiry", end: func(r *run) { r.call.End(OutcomeFailed, "the SIP session expired without a refresh") },
			want: OutcomeFailed, reason: "the SIP session expired without a refresh", saves: 1},
		{name: "transferred", end: func(r *run) { r.call.End(OutcomeTransferred, "") }, want: OutcomeTransferred, saves: 1},
		{name: "shutdown", end: func(r *run) { r.stop() }, want: OutcomeShutdown, saves: 1},
		{name: "media timeout", info: CallInfo{MediaTimeout: 2 * time.Second},
			end: func(r *run) {
				// The caller's side goes silent on the wire: no packets.
				for range 150 {
					r.e.clock.Add(FrameDuration)
					time.Sleep(100 * time.Microsecond)
					select {
					case <-r.call.Done():
						return
					default:
					}
				}
			}, want: OutcomeMediaTimeout, saves: 1},
		{name: "maximum length", info: CallInfo{MaxDuration: 20 * time.Second},
			end: func(r *run) {
				r.stepUntil("the maximum length", 1000, func() bool {
					select {
					case <-r.call.Done():
						return true
					default:
						return false
					}
				})
			}, want: OutcomeMaxDuration, saves: 1},
		{name: "error on the line", end: func(r *run) {
			r.line.failWrite.Store(true)
			r.step(1)
		}, want: OutcomeFailed, reason: "the agent's audio could not be sent", saves: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			number := "+3460010" + strings.Repeat("0", 4)
			e.model.ScriptTranscripts("Please note that I prefer mornings.")
			e.model.Script(providertest.Reply{Content: "Noted."},
				providertest.Reply{Content: `{"operations":[{"op":"add","content":"Prefers mornings."}],"summary":"Asked to note a preference."}`})
			info := tc.info
			info.Agent, info.PhoneNumber = "receptionist", number
			if info.Direction == Browser {
				info.PhoneNumber, info.Identities = "", map[string]string{"phoneNumber": number}
			}
			r := e.start(info)
			r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
			r.say(800)
			r.stepUntil("the answer", 1000, func() bool { return len(r.call.Entries()) == 3 })
			// The end, with other reports racing it.
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); tc.end(r) }()
			wg.Wait()
			r.call.End(OutcomeCancelled, "") // too late to count
			rec := r.end()
			if rec.Outcome == nil || *rec.Outcome != tc.want {
				t.Fatalf("outcome %v, want %s", rec.Outcome, tc.want)
			}
			if got := ""; rec.EndReason != nil {
				got = *rec.EndReason
				if got != tc.reason {
					t.Fatalf("reason %q, want %q", got, tc.reason)
				}
			} else if tc.reason != "" {
				t.Fatalf("no reason recorded, want %q", tc.reason)
			}
			if n := e.ends.count(r.call.ID()); n != 1 {
				t.Fatalf("%d completions, want 1", n)
			}
			if n := e.extractions(); n != tc.saves {
				t.Fatalf("%d saves, want %d", n, tc.saves)
			}
			if !rec.Memory.Saved || len(rec.Transcript) != 3 {
				t.Fatalf("memory %+v, transcript %+v", rec.Memory, rec.Transcript)
			}
			if r.line.hangups.Load() != 1 {
				t.Fatalf("%d hang-ups of the transport, want 1", r.line.hangups.Load())
			}
			if e.mgr.Active() != 0 {
				t.Fatal("the call is still counted as active")
			}
		})
	}
}

// A failed save is recorded and not retried; an agent keyed on email runs
// without memory on a phone call and says why.
func TestFailedSaveAndNoIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.ScriptTranscripts("Please remember my order number.")
	e.model.Script(providertest.Reply{Content: "I will."},
		providertest.Reply{Status: 500, Message: "extraction exploded"}) // the save fails
	r := e.start(CallInfo{Agent: "receptionist", PhoneNumber: "+34600999000"})
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	r.say(800)
	r.stepUntil("the answer", 1000, func() bool { return len(r.call.Entries()) == 3 })
	r.call.End(OutcomeCompleted, "")
	rec := r.end()
	if e.extractions() != 1 {
		t.Fatalf("%d extraction requests, want exactly one (no retry)", e.extractions())
	}
	if rec.Memory.Saved || rec.Memory.SaveError != "memory_model_failed" || rec.Status != "ended" {
		t.Fatalf("completion: %+v %+v", rec, rec.Memory)
	}

	e.model.Script(providertest.Reply{Content: "Hello."})
	r2 := e.start(CallInfo{Agent: "mailer", PhoneNumber: "+34600999000"})
	r2.call.End(OutcomeCompleted, "")
	rec2 := r2.end()
	if rec2.Memory.Off == "" || !strings.Contains(rec2.Memory.Off, "email") || rec2.Memory.Saved || rec2.Memory.RecalledFacts != 0 {
		t.Fatalf("email-keyed agent on a phone call: %+v", rec2.Memory)
	}
}

// A call that ended before it ran (CANCEL before answer, no answer)
// completes at once: its record ends and its slot frees; a late Run
// returns without carrying media.
func TestCallEndedBeforeItRan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	call, err := e.mgr.Open(ctx, CallInfo{Direction: Inbound, Agent: "receptionist", PhoneNumber: "+34600555000"})
	if err != nil {
		t.Fatal(err)
	}
	if e.mgr.Active() != 1 {
		t.Fatalf("active %d", e.mgr.Active())
	}
	call.End(OutcomeCancelled, "")
	select {
	case <-call.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a call ended before it ran never completed")
	}
	rec, _ := e.mgr.Get(ctx, call.ID())
	if rec.Status != "ended" || *rec.Outcome != OutcomeCancelled || rec.AnsweredAt != nil || e.mgr.Active() != 0 {
		t.Fatalf("record %+v, active %d", rec, e.mgr.Active())
	}
	l := &line{}
	if err := call.Run(ctx, l); err != nil {
		t.Fatal(err)
	}
	if n := len(e.model.SpeechRequests()); n != 0 || l.writes.Load() != 0 || e.ends.count(call.ID()) != 1 {
		t.Fatalf("%d speech requests, %d frames, %d completions for a call that never ran", n, l.writes.Load(), e.ends.count(call.ID()))
	}
}

// A call opened with an id in progress or recorded is refused as
// ErrCallExists and the call and its record stay as they were; an
// incoming call's ringing record, committed without waiting for its log
// flush, is there for a reader at once.
func TestOpenWithATakenIDIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	first, err := e.mgr.Open(ctx, CallInfo{ID: "call_taken", Direction: Inbound, Agent: "receptionist", PhoneNumber: "+34600555001"})
	if err != nil {
		t.Fatal(err)
	}
	var status, phone string
	if err := e.vc.Pool.QueryRow(ctx, `SELECT status, phone_number FROM stackbone_platform.voice_calls WHERE id = 'call_taken'`).Scan(&status, &phone); err != nil || status != "ringing" {
		t.Fatalf("the ringing record: %q, %v", status, err)
	}
	_, err = e.mgr.Open(ctx, CallInfo{ID: "call_taken", Direction: Inbound, Agent: "receptionist", PhoneNumber: "+34600555002"})
	if !errors.Is(err, ErrCallExists) {
		t.Fatalf("a second open of the id: %v, want ErrCallExists", err)
	}
	if e.mgr.Active() != 1 {
		t.Fatalf("active %d after the refused open", e.mgr.Active())
	}
	if err := e.vc.Pool.QueryRow(ctx, `SELECT phone_number FROM stackbone_platform.voice_calls WHERE id = 'call_taken'`).Scan(&phone); err != nil || phone != "+34600555001" {
		t.Fatalf("the first call's record changed: %q, %v", phone, err)
	}
	// Ended here, so only its record holds the id: the database refuses it.
	first.End(OutcomeCancelled, "")
	<-first.Done()
	_, err = e.mgr.Open(ctx, CallInfo{ID: "call_taken", Direction: Inbound, Agent: "receptionist", PhoneNumber: "+34600555003"})
	if !errors.Is(err, ErrCallExists) {
		t.Fatalf("an open of a recorded id: %v, want ErrCallExists", err)
	}
	if err := e.vc.Pool.QueryRow(ctx, `SELECT status, phone_number FROM stackbone_platform.voice_calls WHERE id = 'call_taken'`).Scan(&status, &phone); err != nil || status != "ended" || phone != "+34600555001" {
		t.Fatalf("the recorded call changed: %q %q, %v", status, phone, err)
	}
	if e.mgr.Active() != 0 {
		t.Fatalf("active %d after the refused open", e.mgr.Active())
	}
}

// A box that dies mid-call leaves the call's lease to run out: another box
// closes it as box_lost from the turns persisted as the call went, and of
// two boxes racing to do it, one saves; the dead box coming back to
// complete it changes nothing and saves nothing twice.
func TestLostCallIsRecoveredOnceByAnotherBox(t *testing.T) {
	t.Parallel()
	perMinute, perMillion := 0.006, 15.0
	prices := costs.NewTable(&config.Config{Providers: map[string]config.Provider{"openai": {Prices: map[string]config.Price{
		"chat": {Input: 2, Output: 8}, "whisper-1": {PerMinute: &perMinute}, "tts-1": {PerMillionCharacters: &perMillion}}}}})
	e := newEnv(t, func(c *Config) { c.LeaseTTL, c.Prices = time.Second, prices })
	ctx := context.Background()
	number := "+34600777888"
	e.model.ScriptTranscripts("I moved to Valencia last month.")
	e.model.Script(providertest.Reply{Content: "Thanks, noted."},
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Lives in Valencia."}],"summary":"Said they moved."}`})
	r := e.start(CallInfo{Agent: "receptionist", PhoneNumber: number})
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	r.say(800)
	r.stepUntil("the answer", 1000, func() bool { return len(r.call.Entries()) == 3 })
	// The turns are in the record as they were heard, before any end.
	poll.Until(t, "the heard turns to be persisted", 20*time.Second, func() bool {
		rec, _ := e.mgr.Get(ctx, r.call.ID())
		return len(rec.Transcript) == 3 && rec.Status == "active"
	})

	// This box "dies": it stops renewing leases (it never ran Run). Two
	// other boxes look for lost calls at once.
	other := func() *Manager {
		cfg := e.mgr.cfg
		cfg.BoxID, cfg.Clock = "", nil
		return NewManager(cfg)
	}
	b1, b2 := other(), other()
	poll.Until(t, "the lease to run out", 20*time.Second, func() bool {
		var lost bool
		_ = e.mgr.cfg.Pool.QueryRow(ctx, `SELECT lease_until < now() FROM stackbone_platform.voice_calls WHERE id = $1`, r.call.ID()).Scan(&lost)
		return lost
	})

	var wg sync.WaitGroup
	for _, b := range []*Manager{b1, b2} {
		wg.Add(1)
		go func() { defer wg.Done(); b.recoverLost(ctx) }()
	}
	wg.Wait()
	if folded, rows := e.stored(r.call.ID()); folded != 3 || rows != 0 {
		t.Fatalf("after the recovery: %d entries in the record, %d rows left, want 3 and 0", folded, rows)
	}
	rec, err := e.mgr.Get(ctx, r.call.ID())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "ended" || *rec.Outcome != OutcomeBoxLost || rec.EndReason == nil || !rec.Memory.Saved || len(rec.Transcript) != 3 {
		t.Fatalf("recovered record: %+v memory %+v", rec, rec.Memory)
	}
	if e.extractions() != 1 {
		t.Fatalf("%d saves, want 1", e.extractions())
	}
	// The recovering box priced what the call used up to its last
	// persisted turn: the answer's tokens (the scripted defaults), the
	// greeting's and the answer's characters, the utterance's audio.
	var chars int64
	for _, text := range e.model.SpeechRequests() {
		chars += int64(utf8.RuneCountInString(text))
	}
	var samples int64
	rate := 0
	for _, wav := range e.model.Uploads() {
		samples += int64(len(wav)-44) / 2
		rate = int(binary.LittleEndian.Uint32(wav[24:28]))
	}
	seconds := float64(samples) / float64(rate)
	in, out := 10, 5
	if u := rec.Usage; u == nil || u.Model.InputTokens != int64(in) || u.Model.OutputTokens != int64(out) ||
		u.TextToSpeech.Characters != chars || u.SpeechToText.Seconds != seconds {
		t.Fatalf("recovered usage %+v; the provider reported %d/%d tokens and was sent %d characters, %v s", rec.Usage, in, out, chars, seconds)
	}
	want := (float64(in)*2+float64(out)*8)/1e6 + seconds*perMinute/60 + float64(chars)*perMillion/1e6
	if c := rec.Cost; c == nil || c.Total == nil || *c.Total != want {
		t.Fatalf("recovered cost %+v, want %v", rec.Cost, want)
	}
	facts, _ := e.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
	if len(facts.Facts) != 1 || len(facts.Calls) != 1 || *facts.Calls[0].Outcome != string(OutcomeBoxLost) {
		t.Fatalf("saved memory: %+v", facts)
	}
	// The first box was only cut off, not dead: its own completion must
	// neither overwrite the record nor save again.
	r.call.End(OutcomeCallerHangup, "")
	r.end()
	rec2, _ := e.mgr.Get(ctx, r.call.ID())
	facts2, _ := e.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
	if *rec2.Outcome != OutcomeBoxLost || len(facts2.Calls) != 1 || e.extractions() != 1 {
		t.Fatalf("after the cut-off box completed: outcome %s, %d calls saved, %d extractions", *rec2.Outcome, len(facts2.Calls), e.extractions())
	}
}

// Drain lets calls end on their own until its deadline, refuses new ones,
// then ends the rest as shutdown, each completed and saved before it
// returns.
func TestDrainEndsCallsAsShutdownAndSavesThem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.model.ScriptTranscripts("I prefer email.")
	e.model.Script(providertest.Reply{Content: "Noted."},
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Prefers email."}],"summary":"Stated a preference."}`})
	r := e.start(CallInfo{Agent: "receptionist", PhoneNumber: "+34600121212"})
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	r.say(800)
	r.stepUntil("the answer", 1000, func() bool { return len(r.call.Entries()) == 3 })
	drainCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	drained := make(chan struct{})
	go func() { e.mgr.Drain(drainCtx); close(drained) }()
	poll.Until(t, "the drain to start", 20*time.Second, e.mgr.Draining)
	if _, err := e.mgr.Open(ctx, CallInfo{Agent: "receptionist", Direction: Inbound}); err != ErrDraining {
		t.Fatalf("a new call while draining: %v", err)
	}
	select {
	case <-drained:
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not return")
	}
	// Drain returned only after the completion: the record is final.
	rec, _ := e.mgr.Get(ctx, r.call.ID())
	if rec.Status != "ended" || *rec.Outcome != OutcomeShutdown || !rec.Memory.Saved || e.extractions() != 1 {
		t.Fatalf("after the drain: %+v %+v", rec, rec.Memory)
	}
}

// stored reads how a call's heard transcript is kept: the entries folded
// into its record, and the entry rows written since (counted only when
// their seq run 0, 1, ... without a gap).
func (e *env) stored(id string) (folded, rows int) {
	e.t.Helper()
	err := e.mgr.cfg.Pool.QueryRow(context.Background(), `SELECT jsonb_array_length(transcript),
		(SELECT CASE WHEN count(*) = coalesce(max(seq) + 1, 0) AND coalesce(min(seq), 0) = 0 THEN count(*) ELSE -1 END
			FROM stackbone_platform.voice_call_entries WHERE call_id = $1)
		FROM stackbone_platform.voice_calls WHERE id = $1`, id).Scan(&folded, &rows)
	if err != nil {
		e.t.Fatal(err)
	}
	return folded, rows
}

// The person is erased while their call goes on (memory's delete-all with
// the calls' erasure in its transaction): the turns persisted so far go,
// the call writes no more, and at its end keeps no transcript, saves
// nothing and names nobody; its times and outcome stay.
func TestErasureDuringACallKeepsNothingOfIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	number := "+34600777999"
	e.model.ScriptTranscripts("I moved to Valencia last month.", "And I have a dog.")
	e.model.Script(providertest.Reply{Content: "Thanks, noted."}, providertest.Reply{Content: "Lovely."},
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Lives in Valencia."}],"summary":"Said they moved."}`})
	r := e.start(CallInfo{Agent: "receptionist", PhoneNumber: number})
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	r.say(800)
	r.stepUntil("the answer", 1000, func() bool { return len(r.call.Entries()) == 3 })
	poll.Until(t, "the heard turns to be persisted", 20*time.Second, func() bool {
		_, rows := e.stored(r.call.ID())
		return rows == 3
	})
	if _, err := e.mem.DeleteAll(ctx, "receptionist", number); err != nil {
		t.Fatal(err)
	}
	var erased []string
	if err := pgx.BeginFunc(ctx, e.mgr.cfg.Pool, func(tx pgx.Tx) (err error) {
		erased, err = e.mgr.EraseTx(ctx, tx, "receptionist", number)
		return err
	}); err != nil || len(erased) != 1 || erased[0] != r.call.ID() {
		t.Fatalf("erased %v (%v)", erased, err)
	}
	if folded, rows := e.stored(r.call.ID()); folded != 0 || rows != 0 {
		t.Fatalf("after the erasure: %d entries in the record, %d rows", folded, rows)
	}
	// The call goes on: a turn heard after the erasure is not written.
	r.say(800)
	r.stepUntil("the second answer", 1000, func() bool { return len(r.call.Entries()) == 5 })
	r.call.End(OutcomeCallerHangup, "")
	rec := r.end()
	if _, rows := e.stored(r.call.ID()); rows != 0 {
		t.Fatalf("%d entry rows written after the erasure", rows)
	}
	if rec.Status != "ended" || *rec.Outcome != OutcomeCallerHangup || len(rec.Transcript) != 0 || rec.PhoneNumber != nil ||
		rec.Memory.Identity != "" || rec.Memory.Saved || rec.DurationSeconds == nil {
		t.Fatalf("the erased person's call record: %+v, memory %+v", rec, rec.Memory)
	}
	if n := e.extractions(); n != 0 {
		t.Fatalf("%d extractions: the erased person's call was saved", n)
	}
	facts, _ := e.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
	if len(facts.Facts) != 0 || len(facts.Calls) != 0 {
		t.Fatalf("memory after the erasure and the call's end: %+v", facts)
	}
}
