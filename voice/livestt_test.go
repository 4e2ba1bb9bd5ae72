package voice

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
)

// The live transcription tests do not run in parallel: each ends by
// checking that no goroutine of a stream outlived its Close.

const liveKey = "sk-live-test-KEY-0123456789"

// liveClients are the two protocols against one scripted provider.
func liveClients(srv *providertest.Server, opts LiveOptions) map[string]StreamingTranscriber {
	return map[string]StreamingTranscriber{
		"realtime": &RealtimeSTT{BaseURL: srv.URL(), APIKey: liveKey, Model: "gpt-4o-transcribe", Options: opts},
		"deepgram": &DeepgramSTT{BaseURL: srv.URL(), APIKey: liveKey, Model: "nova-3", Options: opts},
	}
}

// speechFrames is ms of a voiced tone at rate in 20 ms frames.
func speechFrames(ms, rate int) [][]int16 {
	return frames(tone(220, 6000, ms, rate, rand.New(rand.NewPCG(3, 4)), 300), rate/50)
}

func energy(pcm []int16) float64 {
	var sum float64
	for _, v := range pcm {
		sum += float64(v) * float64(v)
	}
	if len(pcm) == 0 {
		return 0
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// noStreamGoroutines fails the test if a goroutine of a live stream (or
// of its WebSocket) is still running a while after every stream closed.
func noStreamGoroutines(t *testing.T) {
	t.Helper()
	var stacks string
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		var live []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "voice.(*liveStream)") || strings.Contains(g, "voice.newLiveStream") ||
				strings.Contains(g, "coder/websocket.(*Conn)") {
				live = append(live, g)
			}
		}
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d stream goroutines outlived Close:\n%s", len(live), strings.Join(live, "\n\n"))
		}
		time.Sleep(poll.Every)
	}
}

// listen opens a stream at rate (closed when the test ends).
func listen(t *testing.T, c StreamingTranscriber, rate int) TranscriptStream {
	t.Helper()
	ts, err := c.Listen(context.Background(), rate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts
}

// speak sends ms of voiced audio in 20 ms frames, failing the test if a
// Send fails.
func speak(t *testing.T, ts TranscriptStream, ms, rate int) {
	t.Helper()
	for _, f := range speechFrames(ms, rate) {
		if err := ts.Send(f); err != nil {
			t.Fatal(err)
		}
	}
}

// next waits for the next event, failing the test after limit.
func next(t *testing.T, ts TranscriptStream, limit time.Duration) (TranscriptEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-ts.Results():
		return ev, ok
	case <-time.After(limit):
		t.Fatalf("no transcript event in %s", limit)
		return TranscriptEvent{}, false
	}
}

// untilFinal collects interims until the final.
func untilFinal(t *testing.T, ts TranscriptStream) (interims []string, final TranscriptEvent) {
	t.Helper()
	for {
		ev, ok := next(t, ts, 10*time.Second)
		switch {
		case !ok:
			t.Fatal("the stream ended before the final")
		case ev.Err != nil:
			t.Fatalf("stream failed: %v", ev.Err)
		case ev.Final:
			return interims, ev
		default:
			interims = append(interims, ev.Text)
		}
	}
}

// The caller's audio reaches the provider while they speak, interim
// transcripts come back, and the final arrives after the Finalize (the
// scripted 150 ms later); what went on the wire is each protocol's.
func TestLiveInterimThenFinal(t *testing.T) {
	srv := providertest.New(t)
	for name, c := range liveClients(srv, LiveOptions{}) {
		for _, rate := range []int{8000, 16000} {
			t.Run(fmt.Sprintf("%s/%d", name, rate), func(t *testing.T) {
				srv.ScriptTranscripts("I would like to book a table")
				n := len(srv.LiveSessions())
				ts := listen(t, c, rate)
				speak(t, ts, 1200, rate)
				// Interims arrive while audio flows, before any Finalize.
				first, _ := next(t, ts, 10*time.Second)
				if first.Final || first.Err != nil || first.Text == "" {
					t.Fatalf("first event %+v, want an interim", first)
				}
				finalized := time.Now()
				if err := ts.Finalize(); err != nil {
					t.Fatal(err)
				}
				interims, final := untilFinal(t, ts)
				took := time.Since(finalized)
				interims = append([]string{first.Text}, interims...)
				if final.Text != "I would like to book a table" {
					t.Fatalf("final %q", final.Text)
				}
				if took < providertest.DefaultFinalDelay {
					t.Fatalf("the final came %s after Finalize, before the scripted %s", took, providertest.DefaultFinalDelay)
				}
				for _, in := range interims {
					if !strings.HasPrefix(final.Text, in) {
						t.Fatalf("interim %q is not the start of the final", in)
					}
				}
				if err := ts.Close(); err != nil {
					t.Fatal(err)
				}

				s := srv.LiveSessions()[n]
				if s.Protocol != name || energy(s.Audio) < 1000 {
					t.Fatalf("session %s: energy %.0f", s.Protocol, energy(s.Audio))
				}
				if got, want := len(s.Audio), 1200*s.Rate/1000; got < want*95/100 || got > want*105/100 {
					t.Fatalf("%d samples at %d Hz received, want about %d", got, s.Rate, want)
				}
				if len(s.Finals) != 1 || len(s.Interims) < 2 {
					t.Fatalf("provider sent %d interims, finals %q", len(s.Interims), s.Finals)
				}
				msgs := strings.Join(s.Messages, "\n")
				switch name {
				case "realtime":
					// A telephone call's audio goes as it came off the line
					// (G.711 µ-law at 8 kHz), any other at the API's 24 kHz PCM.
					wantRate, format := RealtimeRate, `"format":{"rate":24000,"type":"audio/pcm"}`
					if rate == 8000 {
						wantRate, format = 8000, `"format":{"type":"audio/pcmu"}`
					}
					if s.Rate != wantRate || s.Header.Get("Authorization") != "Bearer "+liveKey || s.Query.Get("intent") != "transcription" {
						t.Fatalf("realtime handshake: rate %d, query %v", s.Rate, s.Query)
					}
					if !strings.Contains(s.Messages[0], `"type":"session.update"`) || !strings.Contains(s.Messages[0], `"model":"gpt-4o-transcribe"`) ||
						!strings.Contains(s.Messages[0], format) ||
						!strings.Contains(s.Messages[0], `"turn_detection":{"silence_duration_ms":200,"type":"server_vad"}`) || !strings.Contains(msgs, "input_audio_buffer.commit") {
						t.Fatalf("realtime messages:\n%s", msgs)
					}
				case "deepgram":
					q := s.Query
					if s.Rate != rate || s.Header.Get("Authorization") != "Token "+liveKey || q.Get("encoding") != "linear16" ||
						q.Get("interim_results") != "true" || q.Get("model") != "nova-3" {
						t.Fatalf("deepgram handshake: rate %d, query %v", s.Rate, q)
					}
					if !strings.Contains(msgs, `{"type":"Finalize"}`) || !strings.Contains(msgs, `{"type":"CloseStream"}`) {
						t.Fatalf("deepgram messages:\n%s", msgs)
					}
				}
			})
		}
	}
	noStreamGoroutines(t)
}

// Two utterances on one stream get their own finals, in order; a Finalize
// with no audio since the last final answers "" without asking the
// provider (an empty commit is an error on Realtime).
func TestLiveTwoUtterancesOnOneStream(t *testing.T) {
	srv := providertest.New(t)
	for name, c := range liveClients(srv, LiveOptions{}) {
		t.Run(name, func(t *testing.T) {
			srv.ScriptTranscripts("first question", "second question")
			n := len(srv.LiveSessions())
			ts := listen(t, c, 16000)
			speak(t, ts, 600, 16000)
			_ = ts.Finalize()
			_ = ts.Finalize() // nothing new: ""
			speak(t, ts, 600, 16000)
			_ = ts.Finalize()
			var finals []string
			for len(finals) < 3 {
				_, ev := untilFinal(t, ts)
				finals = append(finals, ev.Text)
			}
			if fmt.Sprint(finals) != "[first question  second question]" {
				t.Fatalf("finals %q", finals)
			}
			_ = ts.Close()
			if s := srv.LiveSessions()[n]; fmt.Sprint(s.Finals) != "[first question second question]" {
				t.Fatalf("provider finals %q", s.Finals)
			}
		})
	}
	noStreamGoroutines(t)
}

// liveSession is the scripted provider's n-th live session, once its
// handler has taken it (which may come after the client's dial returned).
func liveSession(srv *providertest.Server, n int) (providertest.LiveSession, bool) {
	ss := srv.LiveSessions()
	if len(ss) <= n {
		return providertest.LiveSession{}, false
	}
	return ss[n], true
}

// A consumer that reads nothing while the caller speaks loses interims
// (each later one carries the whole text), never a final: Finalize does
// not wait on it either.
func TestLiveConsumerBehindKeepsFinals(t *testing.T) {
	srv := providertest.New(t)
	srv.SetLive(providertest.Live{InterimEvery: 20 * time.Millisecond})
	words := strings.TrimSpace(strings.Repeat("word ", 150))
	for name, c := range liveClients(srv, LiveOptions{}) {
		t.Run(name, func(t *testing.T) {
			srv.ScriptTranscripts(words, "second")
			n := len(srv.LiveSessions())
			ts := listen(t, c, 8000)
			speak(t, ts, 3000, 8000)
			poll.Until(t, "the interims to be sent", 10*time.Second, func() bool {
				s, ok := liveSession(srv, n)
				return ok && len(s.Interims) >= 140
			})
			// The stream holds interims for a consumer that reads none only
			// up to its bound, leaving room for finals (how many more it
			// hands over once the consumer reads depends on how far its
			// reader is behind the socket on a busy machine).
			ls := ts.(*liveStream)
			limit := cap(ls.results) - finalsRoom
			poll.Until(t, "the held interims to reach the bound", 10*time.Second, func() bool { return len(ls.results) >= limit })
			if held := len(ls.results); held != limit {
				t.Fatalf("the stream holds %d interims, its bound is %d", held, limit)
			}
			_ = ts.Finalize()
			_ = ts.Finalize() // nothing new: "" at once
			speak(t, ts, 300, 8000)
			_ = ts.Finalize()
			var finals []string
			interims := 0
			for len(finals) < 3 {
				ev, ok := next(t, ts, 10*time.Second)
				switch {
				case !ok || ev.Err != nil:
					t.Fatalf("stream ended: %v", ev.Err)
				case ev.Final:
					finals = append(finals, ev.Text)
				default:
					interims++
				}
			}
			if len(finals[0]) != len(words) || finals[1] != "" || finals[2] != "second" {
				t.Fatalf("finals %q", finals)
			}
			if interims < limit {
				t.Fatalf("%d interims delivered, fewer than the %d held", interims, limit)
			}
		})
	}
	noStreamGoroutines(t)
}

// Deepgram's own endpointing settles an utterance before the controller's
// Finalize, which then gets no answer (nothing was left to process): the
// wire answers it itself, and the next utterance is still its own.
func TestDeepgramFinalizeAfterProviderEndpointing(t *testing.T) {
	srv := providertest.New(t)
	srv.SetLive(providertest.Live{Endpointing: true})
	srv.ScriptTranscripts("settled by the provider", "second one")
	c := liveClients(srv, LiveOptions{SettleAfter: 100 * time.Millisecond})["deepgram"]
	ts := listen(t, c, 8000)
	silence := make([]int16, 160)
	for i := range 2 {
		speak(t, ts, 600, 8000)
		if i == 0 {
			for range 15 {
				_ = ts.Send(silence)
			}
			poll.Until(t, "the provider's endpointing", 10*time.Second, func() bool {
				ss := srv.LiveSessions() // the server records the session after the upgrade the client saw
				return len(ss) > 0 && len(ss[0].Finals) == 1
			})
		}
		_ = ts.Finalize()
		_, ev := untilFinal(t, ts)
		if want := []string{"settled by the provider", "second one"}[i]; ev.Text != want {
			t.Fatalf("utterance %d: final %q, want %q", i+1, ev.Text, want)
		}
	}
	_ = ts.Close()
	s := srv.LiveSessions()[0]
	if n := strings.Count(strings.Join(s.Messages, "\n"), `{"type":"Finalize"}`); n != 2 || len(s.Finals) != 2 {
		t.Fatalf("%d Finalize messages, provider finals %q", n, s.Finals)
	}
	noStreamGoroutines(t)
}

// A provider that detects the end of speech itself (OpenAI server VAD,
// Deepgram endpointing) settles the utterance 150 ms of silence after it,
// before any Finalize: the words arrive as a Settled event that says how
// far into the stream's audio they hold. The controller's Finalize after
// that gets the same words (the audio since was silence), and the next
// utterance on the stream is its own.
func TestLiveProviderEndOfSpeechSettlesTheWords(t *testing.T) {
	srv := providertest.New(t)
	srv.SetLive(providertest.Live{EndOfSpeech: 150 * time.Millisecond, InterimEvery: 100 * time.Millisecond, HeardInterims: true})
	// The words grow with the speech heard (one more every 100 ms), so
	// each interim extends the one before, as Realtime's deltas must.
	said := func(voicedFrames int) string { return "said" + strings.Repeat(" more", voicedFrames/5) }
	srv.RespondTranscripts(func(wav []byte) string {
		rate := int(binary.LittleEndian.Uint32(wav[24:]))
		n := 0
		for i := 44; i+2*rate/50 <= len(wav); i += 2 * rate / 50 {
			f := make([]int16, rate/50)
			for j := range f {
				f[j] = int16(binary.LittleEndian.Uint16(wav[i+2*j:]))
			}
			if energy(f) > 1000 {
				n++
			}
		}
		if n == 0 {
			return ""
		}
		return said(n)
	})
	silence := make([]int16, 160)
	for name, c := range liveClients(srv, LiveOptions{SettleAfter: 50 * time.Millisecond}) {
		t.Run(name, func(t *testing.T) {
			n := len(srv.LiveSessions())
			ts := listen(t, c, 8000)
			speak(t, ts, 800, 8000)
			for range 10 { // 200 ms of silence
				if err := ts.Send(silence); err != nil {
					t.Fatal(err)
				}
			}
			var settled TranscriptEvent
			var interims []string
			for !settled.Settled {
				ev, ok := next(t, ts, 10*time.Second)
				switch {
				case !ok || ev.Err != nil || ev.Final:
					t.Fatalf("event %+v before the provider settled the words", ev)
				case ev.Settled:
					settled = ev
				default:
					interims = append(interims, ev.Text)
				}
			}
			// The provider heard 800 ms of speech and 160 ms of silence (the
			// frame that reached 150 ms) when it settled them.
			if settled.Text != said(40) || settled.Through < 940*time.Millisecond || settled.Through > 1010*time.Millisecond {
				t.Fatalf("settled %+v (interims %q)", settled, interims)
			}
			if len(interims) < 4 || interims[len(interims)-1] != said(40) {
				t.Fatalf("interims %q: want the words heard so far, every 100 ms of audio", interims)
			}
			if msgs := strings.Join(srv.LiveSessions()[n].Messages, "\n"); strings.Contains(msgs, "commit") || strings.Contains(msgs, "Finalize") {
				t.Fatalf("the client finalized before the provider settled:\n%s", msgs)
			}
			// The Finalize after the provider's endpoint: the same words.
			if err := ts.Finalize(); err != nil {
				t.Fatal(err)
			}
			if _, final := untilFinal(t, ts); final.Text != settled.Text {
				t.Fatalf("final %q after the settled %q", final.Text, settled.Text)
			}
			// The next utterance is finalized by the client alone.
			speak(t, ts, 400, 8000)
			if err := ts.Finalize(); err != nil {
				t.Fatal(err)
			}
			if _, final := untilFinal(t, ts); final.Text != said(20) {
				t.Fatalf("second final %q", final.Text)
			}
			_ = ts.Close()
		})
	}
	noStreamGoroutines(t)
}

// In a load run the scripted provider keeps no audio past its utterance
// (DiscardRequests); its Deepgram results still carry times on the
// stream, so the answer to each Finalize is taken as its answer, not as
// the late answer to an earlier one (before, every Finalize after the
// first went unanswered until FinalTimeout failed the stream: bench calls
// --stt deepgram opened 958 streams for 400 calls).
func TestDeepgramFinalsInALoadRun(t *testing.T) {
	srv := providertest.New(t)
	srv.DiscardRequests()
	srv.ScriptTranscripts("first", "second", "third")
	c := liveClients(srv, LiveOptions{FinalTimeout: 3 * time.Second})["deepgram"]
	ts := listen(t, c, 8000)
	for _, want := range []string{"first", "second", "third"} {
		speak(t, ts, 600, 8000)
		if err := ts.Finalize(); err != nil {
			t.Fatal(err)
		}
		if _, ev := untilFinal(t, ts); ev.Text != want {
			t.Fatalf("final %q, want %q", ev.Text, want)
		}
	}
	_ = ts.Close()
	noStreamGoroutines(t)
}

// failures runs a scripted misbehaviour on both protocols and returns each
// protocol's stream error, after checking the stream's contract: an Err
// event, then Results closed, and Send refused.
func failures(t *testing.T, live providertest.Live, opts LiveOptions, frames int, pace time.Duration) map[string]error {
	t.Helper()
	srv := providertest.New(t)
	srv.SetLive(live)
	srv.ScriptTranscripts("never final", "never final")
	out := map[string]error{}
	for name, c := range liveClients(srv, opts) {
		ts, err := c.Listen(context.Background(), 8000)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var sendErr error
		sent := 0
		var slowest time.Duration
		for _, f := range speechFrames(frames*20, 8000) {
			start := time.Now()
			sendErr = ts.Send(f)
			slowest = max(slowest, time.Since(start))
			if sendErr != nil {
				break
			}
			sent++
			if pace > 0 {
				time.Sleep(pace) // the media path's pace, faster than real time
			}
		}
		if slowest > 250*time.Millisecond {
			t.Errorf("%s: a Send took %s: it must not wait on the network", name, slowest)
		}
		var got error
		for ev := range ts.Results() {
			if ev.Err != nil {
				got = ev.Err
			}
		}
		if got == nil {
			t.Fatalf("%s: the stream ended without an Err event (sent %d frames, send error %v)", name, sent, sendErr)
		}
		if err := ts.Send(make([]int16, 160)); err == nil {
			t.Fatalf("%s: Send after the failure succeeded", name)
		}
		if err := ts.Close(); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{liveKey, "sk-live-secret"} {
			if strings.Contains(got.Error(), s) {
				t.Fatalf("%s: the error quotes the key or the provider's message: %v", name, got)
			}
		}
		out[name] = got
	}
	noStreamGoroutines(t)
	return out
}

// The provider reporting an error mid-stream fails it as Upstream.
func TestLiveProviderErrorMidStream(t *testing.T) {
	for name, err := range failures(t, providertest.Live{ErrorAfter: 300 * time.Millisecond}, LiveOptions{}, 300, 5*time.Millisecond) {
		if !errors.Is(err, ErrSTTFailed) || fault.KindOf(err) != fault.Upstream {
			t.Errorf("%s: %v (kind %s), want ErrSTTFailed, upstream", name, err, fault.KindOf(err))
		}
	}
}

// A dropped connection fails the stream as Unavailable (the next Listen
// opens a new one).
func TestLiveServerDropsTheStream(t *testing.T) {
	for name, err := range failures(t, providertest.Live{DropAfter: 300 * time.Millisecond}, LiveOptions{}, 300, 5*time.Millisecond) {
		if !errors.Is(err, ErrSTTUnavailable) || fault.KindOf(err) != fault.Unavailable {
			t.Errorf("%s: %v (kind %s), want ErrSTTUnavailable", name, err, fault.KindOf(err))
		}
	}
}

// A provider that never answers a Finalize fails the stream as Timeout
// rather than hold the turn.
func TestLiveFinalOverdue(t *testing.T) {
	srv := providertest.New(t)
	srv.SetLive(providertest.Live{FinalDelay: time.Minute})
	for name, c := range liveClients(srv, LiveOptions{FinalTimeout: 300 * time.Millisecond}) {
		srv.ScriptTranscripts("too late")
		ts := listen(t, c, 8000)
		speak(t, ts, 300, 8000)
		_ = ts.Finalize()
		var got error
		for ev := range ts.Results() {
			if ev.Final {
				t.Fatalf("%s: a final %q", name, ev.Text)
			}
			if ev.Err != nil {
				got = ev.Err
			}
		}
		if !errors.Is(got, ErrSTTTimeout) || fault.KindOf(got) != fault.Timeout {
			t.Fatalf("%s: %v, want ErrSTTTimeout", name, got)
		}
		_ = ts.Close()
	}
	noStreamGoroutines(t)
}

// A provider that stops reading backs the queue up: Send never waits, and
// the stream fails with ErrSTTOverflow instead.
func TestLiveSlowServerOverflows(t *testing.T) {
	// No keep-alive within the test: a sender held up for the default 5 s
	// (a collection of its 4 million frames on a loaded machine) would
	// otherwise let a keep-alive ping time out on the stalled server first.
	for name, err := range failures(t, providertest.Live{Stall: true}, LiveOptions{Queue: 8, KeepAlive: time.Hour}, 200000, 0) {
		if !errors.Is(err, ErrSTTOverflow) {
			t.Errorf("%s: %v, want ErrSTTOverflow", name, err)
		}
	}
}

// An idle stream is kept open (Deepgram's KeepAlive message, a WebSocket
// ping on Realtime) and still works; Close ends it without an error event.
func TestLiveKeepAliveAndQuietClose(t *testing.T) {
	srv := providertest.New(t)
	for name, c := range liveClients(srv, LiveOptions{KeepAlive: 50 * time.Millisecond}) {
		t.Run(name, func(t *testing.T) {
			n := len(srv.LiveSessions())
			ts := listen(t, c, 8000)
			poll.Until(t, "two keep-alives", 10*time.Second, func() bool { return ts.(*liveStream).keepAlives.Load() >= 2 })
			if name == "deepgram" {
				poll.Until(t, "the provider to get two KeepAlive messages", 10*time.Second, func() bool {
					s, ok := liveSession(srv, n)
					return ok && strings.Count(strings.Join(s.Messages, "\n"), `{"type":"KeepAlive"}`) >= 2
				})
			}
			// Still healthy: an utterance after the idle time is
			// transcribed.
			srv.ScriptTranscripts("still here")
			speak(t, ts, 400, 8000)
			_ = ts.Finalize()
			if _, ev := untilFinal(t, ts); ev.Text != "still here" {
				t.Fatalf("final after idle %q", ev.Text)
			}
			if err := ts.Close(); err != nil {
				t.Fatal(err)
			}
			for ev := range ts.Results() {
				if ev.Err != nil {
					t.Fatalf("Close produced an error event: %v", ev.Err)
				}
			}
			if err := ts.Send(make([]int16, 160)); !errors.Is(err, ErrSTTUnavailable) {
				t.Fatalf("Send after Close: %v", err)
			}
		})
	}
	noStreamGoroutines(t)
}

// Transcribe works wherever a Transcriber does: one stream per utterance.
// Through ProviderSpeech, a live mode whose WebSocket cannot be opened
// falls back to the provider's HTTP transcription, and the key is in no
// error and no printed model.
func TestLiveTranscribeAndFallback(t *testing.T) {
	srv := providertest.New(t)
	pcm := tone(220, 6000, 800, 8000, rand.New(rand.NewPCG(5, 6)), 200)
	for name, c := range liveClients(srv, LiveOptions{}) {
		srv.ScriptTranscripts("what time is it")
		got, err := c.Transcribe(context.Background(), pcm, 8000)
		if err != nil || got != "what time is it" {
			t.Fatalf("%s: Transcribe %q, %v", name, got, err)
		}
	}
	if n := len(srv.Uploads()); n != 0 {
		t.Fatalf("%d HTTP uploads, want the live streams only", n)
	}

	// A provider that refuses the WebSocket upgrade: Transcribe goes over
	// HTTP; one that takes it streams. Either way with or without a key.
	for _, refuse := range []bool{true, false} {
		srv.SetLive(providertest.Live{Refuse: refuse})
		key := liveKey
		if !refuse {
			key = "" // a local provider without a key
		}
		reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: srv.URL(), APIKey: key}}, nil)
		if m, _ := reg.Resolve("openai/gpt-4o-transcribe"); key != "" && strings.Contains(fmt.Sprintf("%+v %#v", m, m), key) {
			t.Fatal("a printed model shows the key")
		}
		for _, mode := range []string{"http", "realtime", "deepgram"} {
			ag := config.Agent{Voice: &config.AgentVoice{STT: config.ModelChain{"openai/gpt-4o-transcribe"}, STTMode: mode}}
			stt, _, err := ProviderSpeech(reg, nil)("a", ag, 8000)
			if err != nil {
				t.Fatal(err)
			}
			_, streaming := stt.(StreamingTranscriber)
			if streaming != (mode != "http") {
				t.Fatalf("mode %s: streaming %v", mode, streaming)
			}
			uploads, sessions := len(srv.Uploads()), len(srv.LiveSessions())
			srv.ScriptTranscripts("fallback or not")
			got, err := stt.Transcribe(context.Background(), pcm, 8000)
			if err != nil || got != "fallback or not" {
				t.Fatalf("refused %v, mode %s: %q, %v", refuse, mode, got, err)
			}
			overHTTP := len(srv.Uploads()) > uploads
			if want := mode == "http" || refuse; overHTTP != want {
				t.Fatalf("refused %v, mode %s: over HTTP %v, want %v", refuse, mode, overHTTP, want)
			}
			if live := len(srv.LiveSessions()) > sessions; live != (mode != "http" && !refuse) {
				t.Fatalf("refused %v, mode %s: live session %v", refuse, mode, live)
			}
		}
	}
	if s := srv.LiveSessions(); s[len(s)-1].Header.Get("Authorization") != "" {
		t.Fatal("an Authorization header without a key")
	}

	// A provider that is not there: Listen fails at once, classified.
	dead := &DeepgramSTT{BaseURL: "http://127.0.0.1:1/v1", APIKey: liveKey}
	_, err := dead.Listen(context.Background(), 8000)
	if !errors.Is(err, ErrSTTUnavailable) || strings.Contains(err.Error(), liveKey) {
		t.Fatalf("Listen on a closed port: %v", err)
	}
	noStreamGoroutines(t)
}

// What a 20 ms frame of an 8 kHz call costs the media path on each wire
// before the network: resampling and encoding.
func BenchmarkLiveFrame(b *testing.B) {
	frame := speechFrames(20, 8000)[0]
	for name, w := range map[string]liveProtocol{"realtime-pcm24k": &realtimeWire{}, "realtime-pcmu": &realtimeWire{ulaw: true}, "deepgram": &deepgramWire{}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pcm := frame
				if name == "realtime-pcm24k" {
					pcm = Resample(frame, 8000, RealtimeRate)
				}
				w.audio(pcm)
			}
		})
	}
}

// The client's own share of a final: Finalize to the final event with a
// provider that answers in 1 ms, on one stream, 300 ms of audio each.
func BenchmarkLiveFinal(b *testing.B) {
	srv := providertest.New(b)
	srv.SetLive(providertest.Live{FinalDelay: time.Millisecond})
	srv.RespondTranscripts(func([]byte) string { return "hello there" })
	for name, c := range liveClients(srv, LiveOptions{}) {
		b.Run(name, func(b *testing.B) {
			ts, err := c.Listen(context.Background(), 8000)
			if err != nil {
				b.Fatal(err)
			}
			defer ts.Close()
			audio := speechFrames(300, 8000)
			for b.Loop() {
				for _, f := range audio {
					_ = ts.Send(f)
				}
				_ = ts.Finalize()
				for ev := range ts.Results() {
					if ev.Err != nil {
						b.Fatal(ev.Err)
					}
					if ev.Final {
						break
					}
				}
			}
		})
	}
}
