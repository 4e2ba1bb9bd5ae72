package voice

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/voice/silero"
)

// A caller on a noisy line: a spoken sentence with 400 and 700 ms pauses
// inside it (espeak-ng, voice/silero/testdata/speech8k.wav and its 16 kHz
// twin), under pink or
// brown noise at 10 dB SNR that goes on for seconds after it. The tests
// below check that the Silero detector hears it as one utterance, whole,
// that ends, where the energy detector is logged for comparison.

// noisyLine is the caller's audio and where the speech in it is.
type noisyLine struct {
	rate       int
	pcm        []int16
	start, end int // the first and last speech frame
	// segments are the sample ranges of the sentence's three phrases
	// (its pauses part them).
	segments [][2]int
}

// find sets where the speech of clean (the line's samples before noise)
// is, and returns its power: the sum of its squared samples, and their
// count.
func (nl *noisyLine) find(t testing.TB, clean []int16) (power, count float64) {
	n := nl.rate / 50
	nl.start = -1
	quiet := 0
	for i := 0; i+n <= len(clean); i += n {
		if Level(clean[i:i+n]) <= -50 {
			quiet++
			continue
		}
		f := i / n
		if nl.start < 0 {
			nl.start = f
		}
		if len(nl.segments) == 0 || quiet >= 15 {
			nl.segments = append(nl.segments, [2]int{i, i + n})
		}
		nl.segments[len(nl.segments)-1][1] = i + n
		nl.end, quiet = f, 0
		for _, v := range clean[i : i+n] {
			power += float64(v) * float64(v)
			count++
		}
	}
	if len(nl.segments) != 3 {
		t.Fatalf("the sentence has %d phrases, want 3", len(nl.segments))
	}
	return power, count
}

// heard is what a transcriber makes of audio cut from the line: the
// caller's words it holds (noise and other voices are no words to it).
// The audio is found on the line by all its samples: the babble repeats
// with the sentence's length, and where the sentence pauses in digital
// silence a frame of the voices alone after it equals one in the pause
// (a cut from the tail read by its first frame was heard as the last two
// phrases).
func (nl noisyLine) heard(pcm []int16) string {
	n := nl.rate / 50
	if len(pcm) < n {
		return ""
	}
	at := -1
	for i := 0; i+len(pcm) <= len(nl.pcm) && at < 0; i += n {
		if slices.Equal(nl.pcm[i:i+len(pcm)], pcm) {
			at = i
		}
	}
	phrases := []string{"I would like to book a table for Tuesday,", "my number is four five six,", "seven eight nine, thank you."}
	var words []string
	for i, s := range nl.segments {
		if at < 0 || at > s[0] || at+len(pcm) <= s[0] {
			continue
		}
		// A phrase cut off is heard as far as its words are, taken as
		// evenly spread over it.
		ws := strings.Fields(phrases[i])
		k := len(ws) * (min(at+len(pcm), s[1]) - s[0]) / (s[1] - s[0])
		words = append(words, ws[:k]...)
	}
	return strings.Join(words, " ")
}

// speechClip reads the clean sentence at rate (8000 or 16000).
func speechClip(t testing.TB, rate int) []int16 {
	t.Helper()
	name := fmt.Sprintf("silero/testdata/speech%dk.wav", rate/1000)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// The file is written by sox: a 44-byte header, then the samples.
	if len(b) < 44 || string(b[36:40]) != "data" || binary.LittleEndian.Uint32(b[24:]) != uint32(rate) {
		t.Fatalf("%s: not a plain %d Hz WAV", name, rate)
	}
	pcm := make([]int16, (len(b)-44)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[44+2*i:]))
	}
	return pcm
}

// newNoisyLine mixes the sentence with noise (brown: integrated white
// noise; else pink, Kellet's filter) at snr dB below the speech's RMS,
// and tail seconds more of the noise after the clip.
func newNoisyLine(t testing.TB, rate int, brown bool, snr float64, tail int) noisyLine {
	return newNoisyLineAfter(t, rate, brown, snr, 0, tail)
}

// newNoisyLineAfter is newNoisyLine with lead seconds of the noise before
// the clip, as a call's line carries while the agent greets the caller.
func newNoisyLineAfter(t testing.TB, rate int, brown bool, snr float64, lead, tail int) noisyLine {
	clean := append(make([]int16, lead*rate), speechClip(t, rate)...)
	pcm := append(clean, make([]int16, tail*rate)...)
	line := noisyLine{rate: rate}
	speech, count := line.find(t, clean)
	rng := rand.New(rand.NewPCG(29, 10))
	noise := make([]float64, len(pcm))
	var b0, b1, b2, acc float64
	for i := range noise {
		w := rng.NormFloat64()
		if brown {
			acc = 0.998*acc + w
			noise[i] = acc
		} else {
			b0 = 0.99765*b0 + w*0.0990460
			b1 = 0.96300*b1 + w*0.2965164
			b2 = 0.57000*b2 + w*1.0526913
			noise[i] = b0 + b1 + b2 + w*0.1848
		}
	}
	line.pcm = mixSNR(pcm, noise, speech/count, snr)
	return line
}

// mixSNR adds noise to pcm at snr dB under the speech's mean power.
func mixSNR(pcm []int16, noise []float64, speechPower, snr float64) []int16 {
	var power float64
	for _, v := range noise {
		power += v * v
	}
	gain := math.Sqrt(speechPower) / math.Sqrt(power/float64(len(noise))) / math.Pow(10, snr/20)
	for i := range pcm {
		pcm[i] = int16(max(-32768, min(32767, math.Round(float64(pcm[i])+gain*noise[i]))))
	}
	return pcm
}

// utterances runs the line through a detector with the listener's longest
// endpointing delay (1.5 s) and returns the utterances it found as frame
// spans [first voiced frame, frame of the end event].
func (nl noisyLine) utterances(t testing.TB, detector string) [][2]int {
	t.Helper()
	v, err := newVAD(VADConfig{Detector: detector, EndFrames: int(DefaultMaxEndpointDelay / FrameDuration)}, nl.rate)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]int
	begin := 0
	for i, f := range frames(nl.pcm, nl.rate/50) {
		switch v.Process(f) {
		case vadSpeechStart:
			begin = i - v.cfg.StartFrames + 1
		case vadSpeechEnd:
			out = append(out, [2]int{begin, i})
		}
	}
	if speaking, _ := v.Speaking(); speaking {
		out = append(out, [2]int{begin, -1}) // stuck: never ended
	}
	return out
}

func TestSileroHearsANoisyLineWhole(t *testing.T) {
	t.Parallel()
	for _, kind := range []struct {
		name  string
		rate  int
		brown bool
	}{{"pink", 8000, false}, {"brown", 8000, true}, {"pink16k", 16000, false}, {"brown16k", 16000, true}} {
		t.Run(kind.name, func(t *testing.T) {
			line := newNoisyLine(t, kind.rate, kind.brown, 10, 4)
			got := line.utterances(t, VADSilero)
			t.Logf("speech in frames %d-%d; silero: %v; energy: %v", line.start, line.end, got, line.utterances(t, VADEnergy))
			if len(got) != 1 {
				t.Fatalf("silero found %d utterances %v, want the sentence as one", len(got), got)
			}
			u := got[0]
			// Whole: it starts within 100 ms of the speech, and ends the
			// endpointing delay after the last word, give or take the
			// word's fading end and a noise burst the model half took for
			// speech (800 ms), not on the noise seconds later.
			if u[0] < line.start-5 || u[0] > line.start+5 {
				t.Errorf("utterance starts at frame %d, the speech at %d", u[0], line.start)
			}
			delay := int(DefaultMaxEndpointDelay / FrameDuration)
			if u[1] < line.end+delay || u[1] > line.end+delay+40 {
				t.Errorf("utterance ends at frame %d; the speech ends at %d, plus the delay %d", u[1], line.end, delay)
			}
		})
	}
}

// The auto detector (the default) turns the model on for a noisy line and
// then hears it as the Silero detector does, one whole utterance; on the
// same sentence over a quiet line (noise 40 dB under it) the model never
// starts and the energy detector's utterance stands.
func TestAutoDetectorTurnsToTheModelOnNoisyLines(t *testing.T) {
	t.Parallel()
	for _, kind := range []struct {
		name  string
		rate  int
		brown bool
		snr   float64
		model bool
		lead  int
	}{{"pink", 8000, false, 10, true, 4}, {"brown", 8000, true, 10, true, 4}, {"pink16k", 16000, false, 10, true, 4},
		{"pink 20 dB", 8000, false, 20, true, 4}, {"quiet", 8000, false, 40, false, 4}, {"quiet16k", 16000, true, 40, false, 4},
		{"quiet, speech first", 8000, false, 40, false, 0}} {
		t.Run(kind.name, func(t *testing.T) {
			// Four seconds of the line before the caller speaks (the
			// agent's greeting), or the caller first.
			line := newNoisyLineAfter(t, kind.rate, kind.brown, kind.snr, kind.lead, 4)
			got, on := line.autoUtterances(t)
			want := line.utterances(t, VADEnergy)
			if kind.model {
				want = line.utterances(t, VADSilero)
			}
			t.Logf("speech in frames %d-%d; auto: %v (model %v); want %v", line.start, line.end, got, on, want)
			if on != kind.model {
				t.Fatalf("the model decided: %v, want %v", on, kind.model)
			}
			if len(want) != 1 {
				t.Fatalf("the detector auto stands for found %v: want the sentence as one", want)
			}
			// Brown noise's drift is speech to the energy detector until
			// its floor knows the line: the utterance it started is let go
			// of as the model takes over. The sentence is one utterance.
			if len(got) != 1 {
				t.Fatalf("auto found %v: want the sentence as one", got)
			}
			// The utterance starts with the speech and ends the longest
			// endpointing delay after it, give or take a word's fading end
			// (as TestSileroHearsANoisyLineWhole).
			u, delay := got[0], int(DefaultMaxEndpointDelay/FrameDuration)
			if u[0] < line.start-5 || u[0] > line.start+5 || u[1] < line.end+delay || u[1] > line.end+delay+40 {
				t.Fatalf("auto's utterance %v, the speech in frames %d-%d", u, line.start, line.end)
			}
		})
	}
}

// autoUtterances is utterances for the auto detector, and whether the
// model decided (where it did not, it must have stopped).
func (nl noisyLine) autoUtterances(t testing.TB) ([][2]int, bool) {
	t.Helper()
	got := nl.utterances(t, VADAuto)
	v, err := newVAD(VADConfig{Detector: VADAuto}, nl.rate)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames(nl.pcm, nl.rate/50) {
		v.Process(f)
	}
	a := v.kind.(*autoVoicing)
	if !a.modelOn() && a.s != nil {
		t.Fatal("the model still runs on a quiet line, past its first seconds")
	}
	return got, a.modelOn()
}

// call starts a call whose caller says the line's sentence (its frames
// queued, none sent yet) to an agent using detector, who answers
// "Booked."; the transcriber hears the words the audio it is sent holds
// (heard), as a real one would.
func (nl noisyLine) call(t *testing.T, detector string) (*run, *providertest.Server) {
	model := providertest.New(t)
	agents := fmt.Sprintf("agents:\n  caller:\n    model: openai/chat\n    voice: {vad: %s}\n", detector)
	e := newEnvWith(t, agents, map[string]config.Provider{"openai": {BaseURL: model.URL()}}, model)
	model.RespondTranscripts(func(wav []byte) string {
		pcm, _, err := DecodeWAV(wav)
		if err != nil {
			return ""
		}
		return nl.heard(pcm)
	})
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "Booked."} })
	r := e.start(CallInfo{Agent: "caller", PhoneNumber: "+34600111222", Trunk: "local"})
	r.in = frames(nl.pcm, nl.rate/50)
	return r, model
}

// noisyCall is the line's call (noisyLine.call). It returns the caller's
// transcript entries, the longest audio sent for transcription (the
// utterance's) and the first turn's time from the end of speech to the
// endpoint (-1: no turn), once the frames of the speech, the endpointing
// delay and deadline more have been sent, each after the provider's
// answers in progress.
func noisyCall(t *testing.T, line noisyLine, detector string, deadline int) (users []Entry, heard int, eou float64) {
	r, model := line.call(t, detector)
	// Patiently: the speculative transcript that tells the closing comes
	// in the provider's time on the machine's clock, which is not the
	// call's (a loaded machine made the endpoint look late).
	n, stepped := line.end+int(DefaultMaxEndpointDelay/FrameDuration)+deadline, 0
	r.stepPatiently("the speech and the endpoint", n+1, func() bool { stepped++; return stepped > n })
	for _, en := range r.call.Entries() {
		if en.Role == "user" {
			users = append(users, en)
		}
	}
	for _, u := range model.Uploads() {
		heard = max(heard, (len(u)-44)/2)
	}
	r.call.End(OutcomeCallerHangup, "")
	rec := r.end()
	eou = -1
	if len(rec.Metrics) > 0 {
		eou, _ = rec.Metrics[0]["endOfUtteranceMs"].(float64)
	}
	return users, heard, eou
}

// A call on a noisy line (pink noise, 10 dB SNR) with the Silero detector:
// the caller's sentence is one turn, heard whole (not cut at its 400 and
// 700 ms pauses), and the turn ends within the endpointing delay of its
// last word (not held open by the noise), which its metrics measure from
// the last word, not from the noise after it. The energy detector's result
// on the same audio is logged.
func TestNoisyLineCallIsNeitherCutNorStuck(t *testing.T) {
	t.Parallel()
	line := newNoisyLine(t, 8000, false, 10, 4)
	// Past the longest endpointing delay after the last word: the word's
	// fading end and the detector's 32 ms windows (500 ms).
	const deadline = 25
	eUsers, eHeard, eEOU := noisyCall(t, line, VADEnergy, deadline)
	t.Logf("energy: %d caller turns %v, %d ms heard, end of utterance %v ms; the speech lasts %d ms",
		len(eUsers), eUsers, eHeard/8, eEOU, (line.end-line.start+1)*20)
	for _, detector := range []string{VADSilero, VADAuto} {
		t.Run(detector, func(t *testing.T) {
			t.Parallel()
			checkNoisyCall(t, line, detector, deadline)
		})
	}
}

// checkNoisyCall asserts that a call with detector on the noisy line
// heard the sentence as one whole turn, ended a closing's delay after its
// last word.
func checkNoisyCall(t *testing.T, line noisyLine, detector string, deadline int) {
	users, heard, eou := noisyCall(t, line, detector, deadline)
	t.Logf("%s: %d caller turns, %d ms heard, end of utterance %v ms", detector, len(users), heard/8, eou)
	if len(users) != 1 {
		t.Fatalf("%d caller turns %+v, want the sentence as one, ended in time", len(users), users)
	}
	if want := "thank you."; len(users[0].Text) < len(want) || users[0].Text[len(users[0].Text)-len(want):] != want {
		t.Fatalf("the turn is %q, not the whole sentence", users[0].Text)
	}
	if heard < (line.end-line.start+1)*160 {
		t.Fatalf("%d ms of audio transcribed, the speech lasts %d ms", heard/8, (line.end-line.start+1)*20)
	}
	// A closing's delay (200 ms: "thank you.") after the last voiced frame.
	if eou < 180 || eou > 320 {
		t.Fatalf("end of utterance %v ms after the last word, want a closing's delay", eou)
	}
}

// A call at a multiple of the model's rates is brought down to it: 48 kHz
// audio that holds the 16 kHz line sample for sample is heard as at
// 16 kHz. A rate neither serves is refused (the listener falls back to the
// energy detector).
func TestSileroAtOtherRates(t *testing.T) {
	t.Parallel()
	line := newNoisyLine(t, 16000, false, 10, 2)
	want := line.utterances(t, VADSilero)
	up := noisyLine{rate: 48000, start: line.start, end: line.end, pcm: make([]int16, 0, 3*len(line.pcm))}
	for _, v := range line.pcm {
		up.pcm = append(up.pcm, v, v, v)
	}
	if got := up.utterances(t, VADSilero); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("at 48 kHz %v, at 16 kHz %v", got, want)
	}
	if _, err := newVAD(VADConfig{Detector: VADSilero}, 11025); !errors.Is(err, silero.ErrRate) {
		t.Fatalf("11025 Hz: %v, want silero.ErrRate", err)
	}
}

// newBabbleLine is the noisy line's sentence after lead seconds of other
// voices, which go on under it and tail seconds after it: the same
// recording at three offsets, a second voice's worth apart, snr dB under
// the caller.
func newBabbleLine(t testing.TB, snr float64, lead, tail int) noisyLine {
	const rate = 8000
	clean := speechClip(t, rate)
	pcm := append(append(make([]int16, lead*rate), clean...), make([]int16, tail*rate)...)
	line := noisyLine{rate: rate}
	speech, count := line.find(t, pcm[:lead*rate+len(clean)])
	babble := make([]float64, len(pcm))
	for i := range babble {
		for _, off := range []int{3100, 11700, 25300} {
			babble[i] += float64(clean[(i+off*8)%len(clean)])
		}
	}
	line.pcm = mixSNR(pcm, babble, speech/count, snr)
	return line
}

// Other voices on the line 10 dB under the caller, from before they speak
// to long after: the Silero model hears them as speech, so the utterance
// never falls silent. The caller's words end the turn: once two checks of
// its transcript find the same words, it ends there ("background") and is
// the caller's whole sentence; the voices alone after it are no turn.
func TestBackgroundVoicesEndTheTurnOnTheCallersWords(t *testing.T) {
	t.Parallel()
	line := newBabbleLine(t, 10, 3, 12)
	for _, detector := range []string{VADSilero, VADAuto} {
		t.Run(detector, func(t *testing.T) {
			t.Parallel()
			if detector == VADSilero {
				if u := line.utterances(t, VADSilero); len(u) == 0 || u[len(u)-1][1] >= 0 {
					t.Fatalf("the model heard %v: want an utterance held open by the voices", u)
				}
			}
			r, _ := line.call(t, detector)
			// The checks each 1.5 s from 4 s into the utterance: its words
			// are the same twice within 3 s of the last word, and the turn
			// ends before 4.5 s. Each check's transcript takes the
			// provider's time, not the call's: the call waits for it.
			r.stepPatiently("the caller's turn ended", line.end+int(4500*time.Millisecond/FrameDuration), func() bool {
				return slices.ContainsFunc(r.call.Entries(), func(en Entry) bool { return en.Role == "user" })
			})
			// The answer takes the provider's time, which is the machine's
			// and not the call's clock: a loaded machine may step many
			// frames while the model and the speech answer.
			answered := func() bool {
				return slices.ContainsFunc(r.call.Entries(), func(en Entry) bool { return en.Role == "assistant" && en.Text == "Booked." })
			}
			deadline := time.Now().Add(30 * time.Second)
			for !answered() && time.Now().Before(deadline) {
				r.step(1)
				time.Sleep(time.Millisecond) // let the provider's answers arrive between frames
			}
			if !answered() {
				t.Fatalf("no answer within 30 s: %+v", r.call.Entries())
			}
			var users []Entry
			for _, en := range r.call.Entries() {
				if en.Role == "user" {
					users = append(users, en)
				}
			}
			r.call.End(OutcomeCallerHangup, "")
			rec := r.end()
			var reasons []any
			for _, m := range rec.Metrics {
				reasons = append(reasons, m["endpoint"])
			}
			t.Logf("%s: caller turns %v, ends %v", detector, users, reasons)
			if len(users) != 1 || !strings.HasSuffix(users[0].Text, "thank you.") || !strings.HasPrefix(users[0].Text, "I would like") {
				t.Fatalf("caller turns %+v, want the whole sentence as one", users)
			}
			if len(reasons) == 0 || reasons[0] != endBackground {
				t.Fatalf("the turn ended on %v, want %q", reasons, endBackground)
			}
			// The voices go on under the answer: they pause it, and as
			// its transcription finds no words in them it goes on after
			// ResumeAfter, though they do not stop.
			var pauses []any
			for _, m := range rec.Metrics {
				if xs, ok := m["interruptions"].([]any); ok {
					pauses = append(pauses, xs...)
				}
			}
			if len(pauses) == 0 {
				t.Fatalf("the voices did not pause the answer: %v", rec.Metrics)
			}
			for _, p := range pauses {
				x, _ := p.(map[string]any)
				if ms, _ := x["pausedMs"].(float64); x["outcome"] != overlapResumed || ms > 1500 {
					t.Fatalf("the answer under the voices: %v, want resumed within 1.5 s", pauses)
				}
			}
		})
	}
}
