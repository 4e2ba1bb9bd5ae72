package rooms

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stackbone/box/voice"
)

// gapSlack is how late a caller frame may be before the media fills the
// gap with silence: packets jitter by a few ms on loopback and by tens on a
// real network, and Opus DTX sends nothing at all during silence, but the
// controller's VAD counts frames, so silence must keep flowing.
const gapSlack = 60 * time.Millisecond

// peerMedia is a call's audio path over WebRTC, common to both backends:
// the backend's RTP reader pushes decoded caller frames, the controller
// reads them at the pace they arrive (silence fills gaps), and agent frames
// go out through send, which encodes one frame into one RTP packet.
type peerMedia struct {
	rate    int
	samples int // per 20 ms frame
	timeout time.Duration
	send    func(pcm []int16) error

	frames   chan []int16
	stopped  chan struct{}
	stopOnce sync.Once
	lastRx   atomic.Int64 // unix ns of the last caller packet (or the start)
	timedOut atomic.Bool
	received atomic.Int64 // caller frames pushed
	dropped  atomic.Int64 // caller frames dropped on overflow
	sent     atomic.Int64 // agent frames sent

	// Read side, one goroutine (the controller's listener).
	due   time.Time
	timer *time.Timer
	rest  []int16 // decoded samples not yet framed
}

func newPeerMedia(rate int, timeout time.Duration, send func([]int16) error) *peerMedia {
	m := &peerMedia{rate: rate, samples: rate * int(voice.FrameDuration/time.Millisecond) / 1000, timeout: timeout,
		send: send, frames: make(chan []int16, 50), stopped: make(chan struct{})}
	m.lastRx.Store(time.Now().UnixNano())
	return m
}

// SampleRate is the rate of frames both ways.
func (m *peerMedia) SampleRate() int { return m.rate }

// push hands decoded caller audio of any length to the reader, cut into
// 20 ms frames. When the controller falls a second behind, the oldest frame
// is dropped rather than blocking the RTP reader. One goroutine pushes.
func (m *peerMedia) push(pcm []int16) {
	m.lastRx.Store(time.Now().UnixNano())
	m.rest = append(m.rest, pcm...)
	for len(m.rest) >= m.samples {
		f := append([]int16(nil), m.rest[:m.samples]...)
		m.rest = m.rest[m.samples:]
		m.received.Add(1)
		for {
			select {
			case m.frames <- f:
			default:
				select {
				case <-m.frames:
					m.dropped.Add(1)
				default:
				}
				continue
			}
			break
		}
	}
	if len(m.rest) == 0 {
		m.rest = m.rest[:0:0]
	}
}

// touch records that the caller's transport is alive without audio (Opus
// DTX keeps sending small packets; RTCP arrives), so silence is not a media
// timeout.
func (m *peerMedia) touch() { m.lastRx.Store(time.Now().UnixNano()) }

// stop ends the media: ReadFrame returns io.EOF and WriteFrame drops frames.
func (m *peerMedia) stop() { m.stopOnce.Do(func() { close(m.stopped) }) }

func (m *peerMedia) isStopped() bool {
	select {
	case <-m.stopped:
		return true
	default:
		return false
	}
}

// ReadFrame blocks for the next 20 ms of caller audio. A frame later than
// gapSlack is replaced by silence, and silence then flows at the frame
// rate until audio resumes. It returns io.EOF once the browser left and
// voice.ErrMediaTimeout when nothing arrived for the media timeout.
func (m *peerMedia) ReadFrame() ([]int16, error) {
	select {
	case <-m.stopped:
		return nil, io.EOF
	case f := <-m.frames:
		m.due = time.Now().Add(voice.FrameDuration + gapSlack)
		return f, nil
	default:
	}
	if m.timeout > 0 && time.Since(time.Unix(0, m.lastRx.Load())) > m.timeout {
		m.timedOut.Store(true)
		return nil, voice.ErrMediaTimeout
	}
	now := time.Now()
	if m.due.IsZero() {
		m.due = now.Add(voice.FrameDuration + gapSlack)
	}
	wait := m.due.Sub(now)
	if wait <= 0 {
		// Far behind the frame clock (the reader was busy): restart it
		// rather than returning a burst of silence.
		if wait < -gapSlack {
			m.due = now
		}
		m.due = m.due.Add(voice.FrameDuration)
		return make([]int16, m.samples), nil
	}
	if m.timer == nil {
		m.timer = time.NewTimer(wait)
	} else {
		m.timer.Reset(wait)
	}
	select {
	case f := <-m.frames:
		m.timer.Stop()
		m.due = time.Now().Add(voice.FrameDuration + gapSlack)
		return f, nil
	case <-m.stopped:
		m.timer.Stop()
		return nil, io.EOF
	case <-m.timer.C:
		m.due = m.due.Add(voice.FrameDuration)
		return make([]int16, m.samples), nil
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
