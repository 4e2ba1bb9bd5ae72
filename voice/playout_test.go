package voice

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

type countingWriter struct {
	frames int
}

func (w *countingWriter) WriteFrame([]int16) error { w.frames++; return nil }

const frame = 160 // 20 ms at 8 kHz

// randomTurn builds a reply of sentences; each may carry word timings and a
// turn may be a fixed phrase. It returns the segments and, for checking, the
// global sample offset at which each word finishes.
func randomTurn(rng *rand.Rand, turn int) (segs []Segment, words []string, wordEnd []int, segEnd []int) {
	unverifiable := rng.IntN(8) == 0
	n := 1 + rng.IntN(4)
	off := 0
	for s := 0; s < n; s++ {
		nw := 1 + rng.IntN(8)
		timed := rng.IntN(3) != 0
		var seg Segment
		pos := rng.IntN(200)
		var texts []string
		for w := 0; w < nw; w++ {
			text := fmt.Sprintf("t%ds%dw%d", turn, s, w)
			start := pos
			end := start + 80 + rng.IntN(4000)
			if timed {
				seg.Words = append(seg.Words, Word{Text: text, Start: start, End: end})
			}
			texts = append(texts, text)
			words = append(words, text)
			wordEnd = append(wordEnd, off+end)
			pos = end + rng.IntN(400)
		}
		seg.Text = strings.Join(texts, " ")
		seg.PCM = make([]int16, pos+rng.IntN(800))
		seg.Unverifiable = unverifiable
		off += len(seg.PCM)
		segEnd = append(segEnd, off)
		if !timed {
			// Without timings a word counts only once its whole segment played.
			for i := len(wordEnd) - nw; i < len(wordEnd); i++ {
				wordEnd[i] = off
			}
		}
		segs = append(segs, seg)
	}
	return segs, words, wordEnd, segEnd
}

// Interrupt playout at many random points (the tick is the playout clock):
// the committed assistant text is always a prefix of the reply's words and
// never holds a word whose audio had not fully been written; a cut fixed
// phrase commits nothing; each turn commits once, in order.
func TestHeardTextAtRandomInterruptions(t *testing.T) {
	const cases = 2000
	rng := rand.New(rand.NewPCG(42, 1))
	for c := 0; c < cases; c++ {
		p := newPlayout(frame)
		tr := newTranscript()
		w := &countingWriter{}
		turns := 1 + rng.IntN(3)
		var order []int
		for turn := 1; turn <= turns; turn++ {
			segs, words, wordEnd, _ := randomTurn(rng, turn)
			total := 0
			for _, s := range segs {
				total += len(s.PCM)
			}
			p.Start(turn)
			// Segments arrive while playing: enqueue some now, the rest later.
			now := rng.IntN(len(segs) + 1)
			for _, s := range segs[:now] {
				p.Enqueue(turn, s)
			}
			ticks := rng.IntN(total/frame + 30)
			spoken := 0
			finished := false
			for i := 0; i < ticks; i++ {
				if i == ticks/2 {
					for _, s := range segs[now:] {
						p.Enqueue(turn, s)
					}
					now = len(segs)
					p.Close(turn)
				}
				speech, fin, _ := p.Tick(w)
				if speech {
					spoken++
				}
				if fin {
					finished = true
					break
				}
			}
			var text string
			cut := !finished
			if cut {
				text = p.Interrupt()
			} else {
				text = p.Finish()
			}
			// Samples of this turn actually written: speech frames, each
			// carrying up to one frame of the current segment.
			written := writtenSamples(segs, spoken)
			got := strings.Fields(text)
			for i, word := range got {
				if i >= len(words) || words[i] != word {
					t.Fatalf("case %d turn %d: committed %q is not a prefix of %q", c, turn, got, words)
				}
				if wordEnd[i] > written {
					t.Fatalf("case %d turn %d: word %q ends at sample %d but only %d were written", c, turn, word, wordEnd[i], written)
				}
			}
			if cut && segs[0].Unverifiable && text != "" {
				t.Fatalf("case %d turn %d: a cut fixed phrase committed %q", c, turn, text)
			}
			if !cut && text != strings.Join(words, " ") {
				t.Fatalf("case %d turn %d: a turn that played through committed %q", c, turn, text)
			}
			if !tr.Commit(turn, RoleAssistant, text, time.Unix(int64(turn), 0)) || tr.Commit(turn, RoleAssistant, "again", time.Now()) {
				t.Fatalf("case %d turn %d: not exactly one commit", c, turn)
			}
			order = append(order, turn)
			// A user turn follows each assistant turn.
			tr.Commit(1000+turn, RoleUser, "user", time.Unix(int64(turn), 1))
		}
		var seen []int
		for _, e := range tr.Entries() {
			if e.Role == RoleAssistant {
				seen = append(seen, e.Turn)
			}
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] <= seen[i-1] {
				t.Fatalf("case %d: commits out of order %v", c, seen)
			}
		}
		_ = order
	}
}

// writtenSamples is how many samples of the turn's audio n speech frames
// carried: each frame takes up to frame samples of one segment.
func writtenSamples(segs []Segment, n int) int {
	total := 0
	for _, s := range segs {
		frames := (len(s.PCM) + frame - 1) / frame
		if n >= frames {
			total += len(s.PCM)
			n -= frames
			continue
		}
		return total + n*frame
	}
	return total
}
