package recordings

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Jitter bounds, in frames, of the caller's audio against the agent's
// schedule: a caller frame is recorded at the first agent frame after it
// arrived, and caller audio more than maxAhead frames ahead of the
// schedule (a burst after a stall) is dropped, so the two channels never
// drift apart by more than that.
const maxAhead = 2

// queueFrames bounds the frames waiting for the encoder (10 s); past it
// frames are dropped rather than holding the call's schedule.
const queueFrames = 500

// Take is one call's recording while the call runs. Caller and Agent may
// be called from different goroutines; Keep or Discard ends it once.
type Take struct {
	s      *Service
	callID string
	rate   int
	n      int // samples per 20 ms frame
	path   string
	format string
	file   file

	frames  int64 // stereo frames recorded (set by Agent)
	queue   chan []int16
	written chan error

	mu      sync.Mutex
	caller  [][]int16 // caller frames waiting for the agent's next frame
	playing []int16   // the agent's frame being played, written with the next
	dropped int
	ended   bool
}

// Begin starts recording call callID at rate (8, 16, 24 or 48 kHz).
func (s *Service) Begin(callID string, rate int) (*Take, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("recordings: sample rate %d", rate)
	}
	path := filepath.Join(s.cfg.SpoolDir, callID+".part")
	f, format, err := createFile(path, rate)
	if err != nil {
		return nil, err
	}
	t := &Take{s: s, callID: callID, rate: rate, n: rate / 50, path: path, format: format, file: f,
		queue: make(chan []int16, queueFrames), written: make(chan error, 1)}
	go t.write()
	return t, nil
}

// Caller queues one frame of the caller's audio.
func (t *Take) Caller(pcm []int16) {
	f := make([]int16, t.n)
	copy(f, pcm)
	t.mu.Lock()
	if !t.ended {
		t.caller = append(t.caller, f)
		if len(t.caller) > maxAhead+1 {
			t.caller = t.caller[1:]
		}
	}
	t.mu.Unlock()
}

// Agent records one frame the agent played and returns the recording's
// length in frames. A frame is written once the next one comes, beside
// the caller's oldest waiting frame (silence when none arrived): the
// caller audio that arrived while a frame played sits beside it.
func (t *Take) Agent(pcm []int16) int64 {
	f := make([]int16, t.n)
	copy(f, pcm)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return t.frames
	}
	t.flush()
	t.playing = f
	t.frames++
	return t.frames
}

// flush writes the frame playing beside the caller's oldest waiting one.
func (t *Take) flush() {
	if t.playing == nil {
		return
	}
	var caller []int16
	if len(t.caller) > 0 {
		caller, t.caller = t.caller[0], t.caller[1:]
	}
	st := make([]int16, 2*t.n)
	for i := 0; i < t.n; i++ {
		if i < len(caller) {
			st[2*i] = caller[i]
		}
		st[2*i+1] = t.playing[i]
	}
	t.playing = nil
	select {
	case t.queue <- st:
	default:
		t.dropped++
	}
}

// Frames is how many 20 ms frames are recorded so far.
func (t *Take) Frames() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.frames
}

// write encodes the queued frames into the spool file until the take ends.
func (t *Take) write() {
	var err error
	for st := range t.queue {
		if err == nil {
			err = t.file.write(st)
		}
	}
	t.written <- errors.Join(err, t.file.close())
}

// end stops taking frames and waits for the spool file to be complete.
func (t *Take) end() error {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return errors.New("recordings: the take already ended")
	}
	t.flush()
	t.ended = true
	t.caller = nil
	close(t.queue)
	t.mu.Unlock()
	return <-t.written
}

// Keep finishes the recording and stores it under meta.
func (t *Take) Keep(ctx context.Context, meta Meta) (Info, error) {
	if err := t.end(); err != nil {
		os.Remove(t.path)
		return Info{}, err
	}
	if t.dropped > 0 {
		t.s.log.Warn("recording lost frames: its encoder fell behind", "call", t.callID, "frames", t.dropped)
	}
	return t.s.keep(ctx, t, meta)
}

// Discard ends the recording and deletes everything of it.
func (t *Take) Discard() {
	_ = t.end()
	os.Remove(t.path)
}
