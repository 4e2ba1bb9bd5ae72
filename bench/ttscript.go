package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/stackbone/box/voice"
)

// The turn-taking bench's callers: behaviours spoken by espeak-ng, with
// pauses, hesitations, sounds (sox) and line noise (sox pink and brown
// noise, babble mixed from other espeak voices) at a set SNR.

// ttPart is a stretch of a caller's turn: words spoken without a pause
// (Text) or a sound (Sound: cough, cough2, click, door, rustle), after
// PauseBefore ms of silence.
type ttPart struct {
	Text        string
	Sound       string
	PauseBefore int
}

// ttBehaviour is one scripted caller behaviour.
type ttBehaviour struct {
	Class, Name string
	// Turn is what the caller says first.
	Turn []ttPart
	// Noise (pink, brown, babble) at SNR dB runs under the whole call.
	Noise string
	SNR   float64
	// Overlap is said OverlapAt ms into the agent's (long) answer: a
	// backchannel, a sound or a barge-in (Kind).
	Overlap *ttPart
	Kind    string
	// Follow is a second turn said as soon as the first answer ended.
	Follow []ttPart
}

// Kinds of overlap.
const (
	ttBackchannel = "backchannel"
	ttSound       = "sound"
	ttBargeIn     = "barge-in"
)

// Behaviour classes, in the report's order.
var ttClasses = []string{"complete", "mid-sentence pauses", "hesitations", "two sentences", "backchannels",
	"non-speech", "barge-ins", "noise 20 dB", "noise 10 dB", "noise 5 dB", "fast follow-ups"}

func say(text string) []ttPart { return []ttPart{{Text: text}} }

// parts reads "text | 500 | text" as parts with pauses between them.
func parts(spec string) []ttPart {
	var out []ttPart
	pause := 0
	for _, f := range strings.Split(spec, "|") {
		f = strings.TrimSpace(f)
		var n int
		if _, err := fmt.Sscanf(f, "%d", &n); err == nil && fmt.Sprint(n) == f {
			pause = n
			continue
		}
		out = append(out, ttPart{Text: f, PauseBefore: pause})
		pause = 0
	}
	return out
}

// ttBehaviours are the bench's callers: 75 behaviours in 11 classes.
func ttBehaviours() []ttBehaviour {
	var bs []ttBehaviour
	add := func(class string, turns ...[]ttPart) {
		for _, t := range turns {
			bs = append(bs, ttBehaviour{Class: class, Turn: t})
		}
	}
	add("complete",
		say("What time do you open tomorrow?"), say("Do you have a table for two tonight?"),
		say("Can I bring my dog to the restaurant?"), say("How much is the tasting menu?"),
		say("Is there parking near you?"), say("Where exactly are you located?"),
		say("I would like to book a table for four on Friday evening."), say("I need to cancel my reservation for Saturday."),
		say("We will arrive about twenty minutes late tonight."), say("My daughter is allergic to peanuts and shellfish."),
		say("I want to change my booking to seven o'clock."), say("The reservation is under the name Garcia."),
		say("A table for two at eight, please."), say("That is everything I needed, thank you."),
		say("Please send the menu to my email."), say("Okay, thanks, goodbye."))
	add("mid-sentence pauses",
		parts("My number is | 500 | five five five, | 700 | one two three, | 900 | four five six seven."),
		parts("I would like to book a table for | 600 | four people on Friday."),
		parts("Can you tell me | 400 | whether you have a vegetarian menu?"),
		parts("The booking is for | 800 | Saturday at eight."),
		parts("I need to move my booking | 300 | to Sunday instead."),
		parts("We are a group of | 1000 | twelve people."),
		parts("My name is | 1200 | Ana Lopez."),
		parts("Could we sit | 500 | outside on the terrace?"),
		parts("The card number ends in | 700 | four four two one."),
		parts("I was wondering if | 900 | you deliver to our street."))
	add("hesitations",
		parts("I would like | 300 | um | 500 | a table for tonight."),
		parts("So | 600 | we were thinking of coming on Friday."),
		parts("Uh | 700 | do you take credit cards?"),
		parts("I need to book, um | 800 | a table for six."),
		parts("Let me see, | 600 | uh | 600 | two adults and three children."),
		parts("And | 500 | is the kitchen open late?"),
		parts("The date is the | 900 | uh | 400 | fourteenth of May."),
		parts("Hmm, | 800 | maybe seven thirty would work better."))
	add("two sentences",
		say("Hi, this is Ana Lopez. I booked a table for tonight."),
		say("Hello. I would like to make a reservation."),
		say("I have a question. Do you open on Mondays?"),
		say("Okay. Then let us make it eight o'clock."),
		say("My name is David Chen. I am calling about my order."),
		say("I would like a table for Friday. Do you have parking?"))
	question := say("What are your opening hours?")
	for _, b := range []string{"Mm-hm.", "Yeah.", "Okay.", "Right.", "Uh-huh.", "I see.", "Sure.", "Yes, yes."} {
		bs = append(bs, ttBehaviour{Class: "backchannels", Name: b, Turn: question, Overlap: &ttPart{Text: b}, Kind: ttBackchannel})
	}
	for _, s := range []string{"cough", "cough2", "click", "door", "rustle", "click2"} {
		bs = append(bs, ttBehaviour{Class: "non-speech", Name: s, Turn: question, Overlap: &ttPart{Sound: s}, Kind: ttSound})
	}
	for _, b := range []string{"No, wait, I meant Tuesday.", "Sorry, can you repeat that?", "Actually, make it five people.",
		"Stop, that is not what I asked.", "Hold on, I need to check something.", "Wait, do you open on Sundays?",
		"No no, the other restaurant.", "Excuse me, I cannot hear you."} {
		bs = append(bs, ttBehaviour{Class: "barge-ins", Name: b, Turn: question, Overlap: &ttPart{Text: b}, Kind: ttBargeIn})
	}
	noisy := [][]ttPart{say("Do you have a table for two tonight?"),
		parts("I would like to book a table for | 600 | four people on Friday."),
		parts("My number is | 500 | five five five, | 700 | one two three.")}
	for _, snr := range []float64{20, 10, 5} {
		for i, n := range []string{"pink", "brown", "babble"} {
			bs = append(bs, ttBehaviour{Class: fmt.Sprintf("noise %.0f dB", snr), Name: n, Turn: noisy[i], Noise: n, SNR: snr})
		}
	}
	for _, f := range [][2]string{{"Do you open on Sundays?", "And on public holidays?"},
		{"Is there a children's menu?", "How much is it?"},
		{"I would like a table for two tonight.", "Can we sit by the window?"},
		{"Do you take card payments?", "What about cash?"}} {
		bs = append(bs, ttBehaviour{Class: "fast follow-ups", Turn: say(f[0]), Follow: say(f[1])})
	}
	for i := range bs {
		if bs[i].Name == "" {
			bs[i].Name = bs[i].text()
		}
	}
	return bs
}

func (b ttBehaviour) text() string { return partsText(b.Turn) }

func partsText(ps []ttPart) string {
	var out []string
	for _, p := range ps {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, " ")
}

// ttWord is a word of rendered speech: its text (with the punctuation
// the script gives it) and where it starts and ends, in samples.
type ttWord struct {
	text       string
	start, end int
}

// ttAudio is a rendered stretch of caller audio at 8 kHz.
type ttAudio struct {
	pcm   []int16
	words []ttWord
	// speechEnd is the sample after the last voiced sample of speech or
	// sound (noise excluded).
	speechEnd int
}

// ttRenderer makes caller audio with espeak-ng and sox, caching each
// text's rendering.
type ttRenderer struct {
	dir   string
	cache map[string][]int16
	noise map[string][]int16
}

// speechRMS is the level speech is rendered at (about -20 dBFS).
const speechRMS = 3300

func newTTRenderer(ctx context.Context) (*ttRenderer, error) {
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("bench turntaking: %s is needed to make the callers' audio (apt-get install espeak-ng sox)", tool)
		}
	}
	dir, err := os.MkdirTemp("", "stackbone-turntaking-")
	if err != nil {
		return nil, err
	}
	r := &ttRenderer{dir: dir, cache: map[string][]int16{}, noise: map[string][]int16{}}
	for name, args := range map[string][]string{
		"pink":   {"synth", "30", "pinknoise"},
		"brown":  {"synth", "30", "brownnoise"},
		"cough":  {"synth", "0.32", "brownnoise", "fade", "q", "0.01", "0.32", "0.22"},
		"door":   {"synth", "0.25", "pinknoise", "fade", "q", "0.003", "0.25", "0.2"},
		"rustle": {"synth", "0.6", "pinknoise", "highpass", "2000", "fade", "q", "0.1", "0.6", "0.2"},
	} {
		pcm, err := r.sox(ctx, name, args)
		if err != nil {
			return nil, err
		}
		r.noise[name] = pcm
	}
	// Babble: three other voices talking at once.
	var babble []int16
	for i, v := range []string{"en-gb", "en-us+f3", "en-gb+m3"} {
		pcm, err := r.espeak(ctx, v, 150+20*i, "The weather has been lovely this week and we went to the market on Saturday morning to buy some fresh bread, cheese and fruit for the picnic in the park with the children, who played football until it got dark and everyone was tired and hungry.")
		if err != nil {
			return nil, err
		}
		babble = mix(babble, scaleRMS(pcm, speechRMS), 1)
	}
	r.noise["babble"] = babble
	return r, nil
}

func (r *ttRenderer) close() { os.RemoveAll(r.dir) }

func (r *ttRenderer) sox(ctx context.Context, name string, effect []string) ([]int16, error) {
	path := filepath.Join(r.dir, name+".wav")
	args := append([]string{"-n", "-r", "8000", "-b", "16", "-c", "1", path}, effect...)
	if out, err := exec.CommandContext(ctx, "sox", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench turntaking: sox %s: %v: %s", name, err, out)
	}
	return readWAV8k(path)
}

// espeak renders text in voice at speed words per minute, at 8 kHz,
// without the silence around it.
func (r *ttRenderer) espeak(ctx context.Context, v string, speed int, text string) ([]int16, error) {
	key := fmt.Sprintf("%s/%d/%s", v, speed, text)
	if pcm, ok := r.cache[key]; ok {
		return pcm, nil
	}
	raw := filepath.Join(r.dir, fmt.Sprintf("e%d.wav", len(r.cache)))
	path := raw + ".8k.wav"
	if out, err := exec.CommandContext(ctx, "espeak-ng", "-v", v, "-s", fmt.Sprint(speed), "-w", raw, "--", text).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench turntaking: espeak-ng: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "sox", raw, "-r", "8000", "-b", "16", "-c", "1", path).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench turntaking: sox: %v: %s", err, out)
	}
	pcm, err := readWAV8k(path)
	if err != nil {
		return nil, err
	}
	pcm = trimQuiet(pcm)
	r.cache[key] = pcm
	return pcm, nil
}

func readWAV8k(path string) ([]int16, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pcm, rate, err := voice.DecodeWAV(b)
	if err != nil {
		return nil, fmt.Errorf("bench turntaking: %s: %w", path, err)
	}
	if rate != 8000 {
		return nil, fmt.Errorf("bench turntaking: %s is at %d Hz", path, rate)
	}
	return pcm, nil
}

// trimQuiet cuts the silence before the first and after the last sample
// louder than a quiet line.
func trimQuiet(pcm []int16) []int16 {
	first, last := -1, -1
	for i, v := range pcm {
		if v > 300 || v < -300 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	return pcm[first : last+1]
}

func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var s float64
	for _, v := range pcm {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(pcm)))
}

func scaleRMS(pcm []int16, target float64) []int16 {
	g := target / max(rms(pcm), 1)
	out := make([]int16, len(pcm))
	for i, v := range pcm {
		out[i] = clip16(float64(v) * g)
	}
	return out
}

func clip16(v float64) int16 {
	return int16(max(-32768, min(32767, math.Round(v))))
}

// mix adds b times gain into a (growing a as needed).
func mix(a, b []int16, gain float64) []int16 {
	for len(a) < len(b) {
		a = append(a, 0)
	}
	for i, v := range b {
		a[i] = clip16(float64(a[i]) + float64(v)*gain)
	}
	return a
}

// speech renders one part's words with the time each word ends: each
// prefix of the text is rendered too, and the word ends where the prefix
// does (capped by the whole: a prefix's last word is said a little longer
// than inside the sentence).
func (r *ttRenderer) speech(ctx context.Context, text string) ([]int16, []ttWord, error) {
	pcm, err := r.espeak(ctx, "en-us", 165, text)
	if err != nil {
		return nil, nil, err
	}
	fields := strings.Fields(text)
	words := make([]ttWord, len(fields))
	start := 0
	for k := range fields {
		end := len(pcm)
		if k < len(fields)-1 {
			pre, err := r.espeak(ctx, "en-us", 165, strings.Join(fields[:k+1], " "))
			if err != nil {
				return nil, nil, err
			}
			end = min(len(pre), len(pcm))
		}
		end = max(end, start+1)
		words[k] = ttWord{text: fields[k], start: start, end: end}
		start = end
	}
	return scaleRMS(pcm, speechRMS), words, nil
}

// sound renders a non-speech sound as loud as speech.
func (r *ttRenderer) sound(name string) []int16 {
	switch name {
	case "cough2":
		c := r.sound("cough")
		return append(append(c, make([]int16, 8000*18/100)...), c...)
	case "click", "click2":
		// A line click: a few ms of a sharp transient, twice for click2.
		n := 1
		if name == "click2" {
			n = 2
		}
		var out []int16
		for range n {
			for i := range 40 {
				out = append(out, int16(20000*math.Exp(-float64(i)/6)*math.Cos(float64(i))))
			}
			out = append(out, make([]int16, 8000*15/100)...)
		}
		return out
	case "rustle":
		return scaleRMS(r.noise[name], speechRMS/3)
	}
	return scaleRMS(r.noise[name], speechRMS*1.2)
}

// render makes ps as one stretch of audio, starting silent.
func (r *ttRenderer) render(ctx context.Context, ps []ttPart) (ttAudio, error) {
	var a ttAudio
	for _, p := range ps {
		a.pcm = append(a.pcm, make([]int16, p.PauseBefore*8)...)
		at := len(a.pcm)
		var pcm []int16
		if p.Sound != "" {
			pcm = r.sound(p.Sound)
		} else {
			var words []ttWord
			var err error
			pcm, words, err = r.speech(ctx, p.Text)
			if err != nil {
				return a, err
			}
			for _, w := range words {
				a.words = append(a.words, ttWord{text: w.text, start: at + w.start, end: at + w.end})
			}
		}
		a.pcm = append(a.pcm, pcm...)
		a.speechEnd = len(a.pcm)
	}
	return a, nil
}

// withNoise mixes the line's noise under pcm at snr dB below speech,
// starting at offset samples into the noise.
func (r *ttRenderer) withNoise(pcm []int16, kind string, snr float64, offset int) []int16 {
	n := r.noise[kind]
	if len(n) == 0 {
		return pcm
	}
	level := speechRMS / math.Pow(10, snr/20) / max(rms(n), 1)
	out := make([]int16, len(pcm))
	for i, v := range pcm {
		out[i] = clip16(float64(v) + float64(n[(offset+i)%len(n)])*level)
	}
	return out
}

// wavSeconds is how long a WAV file's audio lasts.
func wavSeconds(wav []byte) float64 {
	if len(wav) < 44 {
		return 0
	}
	rate := binary.LittleEndian.Uint32(wav[24:])
	bits := binary.LittleEndian.Uint16(wav[34:])
	if rate == 0 || bits == 0 {
		return 0
	}
	return float64(len(wav)-44) / float64(rate) / float64(bits/8)
}
