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

// rtpMedia is a call's audio over diago's RTP session: G.711 decoded and
// handed to the controller (voice.Call.Hear), RFC 4733 digits to its DTMF,
// hold passed on, and the agent's frames encoded into RTP. Framing, the
// media timeout and the controller's lag live in package voice.
type rtpMedia struct {
	med *diago.DialogMedia
	ctl mediaSink
	log *slog.Logger

	stopped  chan struct{}
	stopOnce sync.Once
	readDone chan struct{}

	held     atomic.Bool
	sendPT   atomic.Uint32
	received atomic.Int64 // RTP packets

	wmu       sync.Mutex
	marker    bool
	talkspurt bool // the next frame starts a talkspurt (Talkspurt)
	enc       []byte
	keys      keypad // digits to send in place of frames (keypad.go)
	lastWrite time.Time
	// pacing records each packet's interval error (Server.Stats).
	pacing func(time.Duration)
}

// mediaSink hears a dialog's audio: the call's controller (voice.Call), or
// a warm transfer's second leg.
type mediaSink interface {
	Hear(pcm []int16)
	DTMF(digit rune)
	Hold(held bool)
	Alive()
}

func newRTPMedia(med *diago.DialogMedia, ctl mediaSink, log *slog.Logger) *rtpMedia {
	m := &rtpMedia{
		med: med, ctl: ctl, log: log,
		stopped: make(chan struct{}), readDone: make(chan struct{}),
		marker: true, enc: make([]byte, 0, 4*frameSamples),
	}
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
	m.held.Store(held)
	m.ctl.Hold(held)
}

// stop ends the media: WriteFrame drops frames and the RTP sockets close.
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
			m.ctl.DTMF(d)
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
	pcm := make([]int16, 0, 4*frameSamples)
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
		m.received.Add(1)
		pcm = pcm[:0]
		switch m.med.RTPPacketReader.PacketHeader.PayloadType {
		case ptPCMU:
			for _, b := range buf[:n] {
				pcm = append(pcm, g711.DecodeUlawFrame(b))
			}
		case ptPCMA:
			for _, b := range buf[:n] {
				pcm = append(pcm, g711.DecodeAlawFrame(b))
			}
		default:
			m.ctl.Alive() // telephone-event, comfort noise
			continue
		}
		m.ctl.Hear(pcm)
	}
}

// Talkspurt marks the next frame as the start of a talkspurt
// (voice.Talkspurter).
func (m *rtpMedia) Talkspurt() {
	m.wmu.Lock()
	m.talkspurt = true
	m.wmu.Unlock()
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
	if sent, err := m.keyFrame(); sent {
		now := time.Now()
		if m.pacing != nil && !m.lastWrite.IsZero() {
			m.pacing(now.Sub(m.lastWrite) - voice.FrameDuration)
		}
		m.lastWrite = now
		return m.writeErr(err)
	}
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
	now := time.Now()
	early := m.talkspurt && !m.lastWrite.IsZero() && now.Sub(m.lastWrite) < voice.FrameDuration
	if early {
		// A talkspurt that starts ahead of the 20 ms schedule: its
		// timestamp advances by the time that passed, not by a frame, so
		// the packet is on time on the RTP clock (the writer's next
		// timestamp already holds a whole frame: take the rest back).
		gap := uint32(int64(now.Sub(m.lastWrite)) * int64(frameSamples) / int64(voice.FrameDuration))
		m.med.RTPPacketWriter.DelayTimestamp(gap - uint32(frameSamples)) // wraps: subtracts
	}
	_, err := m.med.RTPPacketWriter.WriteSamples(m.enc, uint32(len(pcm)), m.marker || m.talkspurt, pt)
	m.marker, m.talkspurt = false, false
	if m.pacing != nil && !m.lastWrite.IsZero() && !early {
		m.pacing(now.Sub(m.lastWrite) - voice.FrameDuration)
	}
	m.lastWrite = now
	return m.writeErr(err)
}

// writeErr is a packet write's error as the controller sees it: none once
// the media stopped or its socket closed.
func (m *rtpMedia) writeErr(err error) error {
	if err == nil {
		return nil
	}
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
