package sip

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/zaf/g711"

	"github.com/stackbone/box/voice"
)

// sampleRate is the rate of G.711, the codecs the box offers on SIP.
const sampleRate = 8000

// frameSamples is one voice.FrameDuration at sampleRate.
const frameSamples = sampleRate * int(voice.FrameDuration/time.Millisecond) / 1000

// Static RTP payload types of the codecs the box offers.
const (
	ptPCMU = 0
	ptPCMA = 8
)

// rtpMedia is a call's voice.Media over diago's RTP session: G.711 decoded
// to 20 ms PCM frames and back, RFC 4733 digits handed to onDTMF, the media
// timeout, and hold (no timeout, nothing sent).
type rtpMedia struct {
	med     *diago.DialogMedia
	timeout time.Duration
	onDTMF  func(rune)
	log     *slog.Logger

	frames   chan []int16
	stopped  chan struct{}
	stopOnce sync.Once
	readDone chan struct{}

	lastRx   atomic.Int64 // unix nanos of the last RTP packet
	held     atomic.Bool
	timedOut atomic.Bool
	sendPT   atomic.Uint32
	received atomic.Int64 // RTP packets
	dropped  atomic.Int64 // frames the controller did not take in time

	timer *time.Timer // ReadFrame's, used by one reader

	wmu       sync.Mutex
	marker    bool
	enc       []byte
	lastWrite time.Time
	// pacing records each packet's interval error (Server.Stats).
	pacing func(time.Duration)
}

func newRTPMedia(med *diago.DialogMedia, timeout time.Duration, onDTMF func(rune), log *slog.Logger) *rtpMedia {
	m := &rtpMedia{
		med: med, timeout: timeout, onDTMF: onDTMF, log: log,
		frames:  make(chan []int16, 50), // 1 s
		stopped: make(chan struct{}), readDone: make(chan struct{}),
		marker: true, enc: make([]byte, 0, 4*frameSamples),
	}
	m.lastRx.Store(time.Now().UnixNano())
	m.updateCodec()
	go m.read()
	return m
}

// updateCodec follows the negotiated codec (initial answer, re-INVITE).
func (m *rtpMedia) updateCodec() {
	ms := m.med.MediaSession()
	if ms == nil {
		return
	}
	c := media.CodecAudioFromSession(ms)
	switch c.PayloadType {
	case ptPCMU, ptPCMA:
		m.sendPT.Store(uint32(c.PayloadType))
	}
}

func (m *rtpMedia) setHeld(held bool) {
	m.wmu.Lock()
	m.lastWrite = time.Time{} // a pause in sending is no pacing error
	m.wmu.Unlock()
	if !held {
		// The timeout counts from the moment media should flow again.
		m.lastRx.Store(time.Now().UnixNano())
	}
	m.held.Store(held)
}

// stop ends the media: ReadFrame returns io.EOF, WriteFrame drops frames,
// and the RTP sockets close.
func (m *rtpMedia) stop() {
	m.stopOnce.Do(func() {
		close(m.stopped)
		if err := m.med.Close(); err != nil {
			m.log.Debug("sip: closing media", "error", err)
		}
	})
}

// read decodes RTP into frames until the session closes.
func (m *rtpMedia) read() {
	defer close(m.readDone)
	defer m.stop()
	var r io.Reader
	if dr, err := m.med.AudioReaderDTMF(); err == nil {
		dr.OnDTMF(func(d rune) error {
			if m.onDTMF != nil {
				m.onDTMF(d)
			}
			return nil
		})
		r = dr
	} else {
		// No telephone-event negotiated: audio only.
		if r, err = m.med.AudioReader(); err != nil {
			m.log.Warn("sip: no audio reader", "error", err)
			return
		}
	}
	buf := make([]byte, media.RTPBufSize)
	acc := make([]int16, 0, 4*frameSamples)
	failures := 0
	for {
		n, err := r.Read(buf)
		if err != nil {
			if failures++; failures > 1000 {
				m.log.Warn("sip: rtp reads keep failing", "error", err)
				return
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-m.stopped:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // a media update interrupted the read
			}
			// A malformed packet must not end the call.
			continue
		}
		failures = 0
		m.lastRx.Store(time.Now().UnixNano())
		m.received.Add(1)
		if n == 0 || m.held.Load() {
			// On hold the other side may play music; it is not the caller
			// speaking, so the agent does not hear it.
			acc = acc[:0]
			continue
		}
		switch m.med.RTPPacketReader.PacketHeader.PayloadType {
		case ptPCMU:
			for _, b := range buf[:n] {
				acc = append(acc, g711.DecodeUlawFrame(b))
			}
		case ptPCMA:
			for _, b := range buf[:n] {
				acc = append(acc, g711.DecodeAlawFrame(b))
			}
		default:
			continue // telephone-event, comfort noise
		}
		for len(acc) >= frameSamples {
			f := make([]int16, frameSamples)
			copy(f, acc)
			acc = append(acc[:0], acc[frameSamples:]...)
			m.deliver(f)
		}
	}
}

// deliver queues a frame, dropping the oldest when the controller lags.
func (m *rtpMedia) deliver(f []int16) {
	for {
		select {
		case m.frames <- f:
			return
		default:
		}
		select {
		case <-m.frames:
			m.dropped.Add(1)
		default:
		}
	}
}

// SampleRate is 8000 (G.711).
func (m *rtpMedia) SampleRate() int { return sampleRate }

// ReadFrame blocks for the next 20 ms of caller audio. It returns io.EOF
// once the call ended and voice.ErrMediaTimeout when no RTP arrived for the
// media timeout while the call was not on hold.
func (m *rtpMedia) ReadFrame() ([]int16, error) {
	for {
		select {
		case f := <-m.frames:
			return f, nil
		default:
		}
		select {
		case <-m.stopped:
			return nil, io.EOF
		default:
		}
		wait := time.Hour
		if m.timeout > 0 {
			wait = m.timeout
			if !m.held.Load() {
				wait = m.timeout - time.Since(time.Unix(0, m.lastRx.Load()))
				if wait <= 0 {
					m.timedOut.Store(true)
					return nil, voice.ErrMediaTimeout
				}
			}
		}
		if m.timer == nil {
			m.timer = time.NewTimer(wait)
		} else {
			m.timer.Reset(wait)
		}
		select {
		case f := <-m.frames:
			m.timer.Stop()
			return f, nil
		case <-m.stopped:
			m.timer.Stop()
			return nil, io.EOF
		case <-m.timer.C:
		}
	}
}

// WriteFrame sends 20 ms of agent audio as one RTP packet in the
// negotiated codec. It does not pace (the controller does) and drops frames
// while the call is on hold or after it ended.
func (m *rtpMedia) WriteFrame(pcm []int16) error {
	select {
	case <-m.stopped:
		return nil
	default:
	}
	if m.held.Load() || len(pcm) == 0 {
		return nil
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	pt := uint8(m.sendPT.Load())
	m.enc = m.enc[:0]
	if pt == ptPCMA {
		for _, v := range pcm {
			m.enc = append(m.enc, g711.EncodeAlawFrame(v))
		}
	} else {
		for _, v := range pcm {
			m.enc = append(m.enc, g711.EncodeUlawFrame(v))
		}
	}
	_, err := m.med.RTPPacketWriter.WriteSamples(m.enc, uint32(len(pcm)), m.marker, pt)
	m.marker = false
	now := time.Now()
	if m.pacing != nil && !m.lastWrite.IsZero() {
		m.pacing(now.Sub(m.lastWrite) - voice.FrameDuration)
	}
	m.lastWrite = now
	if err != nil {
		select {
		case <-m.stopped:
			return nil
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	}
	return nil
}
