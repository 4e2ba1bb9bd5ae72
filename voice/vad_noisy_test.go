package voice

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

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
	clean := speechClip(t, rate)
	pcm := append(clean, make([]int16, tail*rate)...)
	n := rate / 50
	line := noisyLine{rate: rate, start: -1}
	var speech, count float64
	for i := 0; i+int(n) <= len(clean); i += int(n) {
		if Level(clean[i:i+int(n)]) > -50 {
			if line.start < 0 {
				line.start = i / int(n)
			}
			line.end = i / int(n)
			for _, v := range clean[i : i+int(n)] {
				speech += float64(v) * float64(v)
				count++
			}
		}
	}
	rng := rand.New(rand.NewPCG(29, 10))
	noise := make([]float64, len(pcm))
	var b0, b1, b2, acc, power float64
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
		power += noise[i] * noise[i]
	}
	gain := math.Sqrt(speech/count) / math.Sqrt(power/float64(len(noise))) / math.Pow(10, snr/20)
	for i := range pcm {
		pcm[i] = int16(max(-32768, min(32767, math.Round(float64(pcm[i])+gain*noise[i]))))
	}
	line.pcm = pcm
	return line
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

// noisyCall is a call whose caller says the noisy line's sentence to an
// agent using detector; the transcriber answers an open clause for audio
// short of the whole sentence and the sentence for all of it, as a real
// one would. It returns the caller's transcript entries, the longest
// audio sent for transcription (the utterance's) and the first turn's
// time from the end of speech to the endpoint (-1: no turn), once the
// frames of the speech, the endpointing delay and deadline more have been
// sent.
func noisyCall(t *testing.T, line noisyLine, detector string, deadline int) (users []Entry, heard int, eou float64) {
	model := providertest.New(t)
	agents := fmt.Sprintf("agents:\n  caller:\n    model: openai/chat\n    voice: {vad: %s}\n", detector)
	e := newEnvWith(t, agents, map[string]config.Provider{"openai": {BaseURL: model.URL()}}, model)
	whole := (line.end - line.start - 5) * 160
	model.RespondTranscripts(func(wav []byte) string {
		if (len(wav)-44)/2 < whole {
			return "I would like to book a table for Tuesday, my number is four five six,"
		}
		return "I would like to book a table for Tuesday, my number is four five six seven eight nine, thank you."
	})
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "Booked."} })
	r := e.start(CallInfo{Agent: "caller", PhoneNumber: "+34600111222", Trunk: "local"})
	r.in = frames(line.pcm, 160)
	r.step(line.end + int(DefaultMaxEndpointDelay/FrameDuration) + deadline)
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
	users, heard, eou := noisyCall(t, line, VADSilero, deadline)
	eUsers, eHeard, eEOU := noisyCall(t, line, VADEnergy, deadline)
	t.Logf("silero: %d caller turns, %d ms heard, end of utterance %v ms; energy: %d caller turns %v, %d ms heard, end of utterance %v ms; the speech lasts %d ms",
		len(users), heard/8, eou, len(eUsers), eUsers, eHeard/8, eEOU, (line.end-line.start+1)*20)
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
