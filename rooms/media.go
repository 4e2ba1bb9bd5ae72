package rooms

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stackbone/box/internal/pace"
)

// peerMedia is the agent's side of a room's audio, common to both
// backends: frames go out through send, which encodes one frame into one
// RTP packet, until the room ends. The caller's side goes straight to the
// controller (room.hear); framing, gaps and the media timeout live in
// package voice.
type peerMedia struct {
	send func(pcm []int16) error
	// mark, when the backend stamps its own RTP, says the next frame
	// starts a talkspurt (voice.Talkspurter); nil where the backend's
	// track keeps the time (LiveKit).
	mark func()
	// batch, when the backend queues its packets for the pacer's round,
	// is what flushes them (voice.Batcher); nil where each goes out as it
	// is written.
	batch func() pace.Flusher
	// readBy, when the caller's packets are read with other calls', says
	// whether every one that arrived by t was handed on
	// (voice.SharedReader); nil where they come as they are read.
	readBy func(t time.Time) bool

	stopped  chan struct{}
	stopOnce sync.Once
	sent     atomic.Int64 // agent frames sent
}

func newPeerMedia(send func([]int16) error) *peerMedia {
	return &peerMedia{send: send, stopped: make(chan struct{})}
}

// stop ends the agent's side: WriteFrame drops frames from now on.
func (m *peerMedia) stop() { m.stopOnce.Do(func() { close(m.stopped) }) }

func (m *peerMedia) isStopped() bool {
	select {
	case <-m.stopped:
		return true
	default:
		return false
	}
}

// WriteFrame sends 20 ms of agent audio as one RTP packet; it drops frames
// once the media stopped.
func (m *peerMedia) WriteFrame(pcm []int16) error {
	if m.isStopped() || len(pcm) == 0 {
		return nil
	}
	if err := m.send(pcm); err != nil {
		if m.isStopped() {
			return nil
		}
		return err
	}
	m.sent.Add(1)
	return nil
}
