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
	"github.com/pion/rtp"

	"github.com/stackbone/box/internal/companding"
	"github.com/stackbone/box/internal/pace"
	"github.com/stackbone/box/internal/rtpmux"
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
//
// On the shared RTP port (route set) the call has no reader of its own:
// the port's readers hand it its packets (Packet) and its frames are
// queued on the port's sockets, sent with the other calls' when the
// pacer's round ends (Batch). diago still negotiates the media and keeps
// the packets' sequence and timestamps; its own socket for the call
// stays idle.
type rtpMedia struct {
	med *diago.DialogMedia // set at construction, or by attach (under wmu)
	ctl mediaSink
	log *slog.Logger

	route  *rtpmux.Route
	dtmfPT atomic.Int32 // the negotiated telephone-event payload type, -1: none
	rmu    sync.Mutex   // the decoding below
	rpcm   []int16
	dtmf   dtmfState

	stopped  chan struct{}
	ended    atomic.Bool // stopped is closed: read by every frame written, without the channel's own memory
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

// newSharedMedia is a call's audio on the shared RTP port, routed from
// raddr (the offer's address) before the answer goes out, so the caller's
// first packets are heard; nil when another call's RTP comes from raddr
// (that call keeps a port of its own).
func newSharedMedia(mux *rtpmux.Mux, raddr *net.UDPAddr, ctl mediaSink, log *slog.Logger) *rtpMedia {
	m := &rtpMedia{
		ctl: ctl, log: log,
		stopped: make(chan struct{}), readDone: make(chan struct{}),
		marker: true, enc: make([]byte, 0, 4*frameSamples), rpcm: make([]int16, 0, 4*frameSamples),
	}
	m.dtmfPT.Store(-1)
	close(m.readDone)
	r, err := mux.Route(raddr, m)
	if err != nil {
		log.Debug("sip: the call gets an RTP port of its own", "reason", err)
		return nil
	}
	m.route = r
	return m
}

// attach gives shared media its negotiated dialog media: the agent's
// frames go out through the shared port from now on.
func (m *rtpMedia) attach(med *diago.DialogMedia) {
	m.wmu.Lock()
	m.med = med
	m.wmu.Unlock()
	m.updateCodec()
}

func (m *rtpMedia) dialogMedia() *diago.DialogMedia {
	if m.route == nil {
		return m.med
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	return m.med
}

// updateCodec follows the negotiated codec (initial answer, re-INVITE);
// on the shared port it also follows the peer's address and takes the
// packet writer back from the session diago made for the update.
func (m *rtpMedia) updateCodec() {
	med := m.dialogMedia()
	if med == nil {
		return
	}
	ms := med.MediaSession()
	if ms == nil {
		return
	}
	c := media.CodecAudioFromSession(ms)
	switch c.PayloadType {
	case ptPCMU, ptPCMA:
		m.sendPT.Store(uint32(c.PayloadType))
	}
	if pt, ok := telephoneEventOf(ms); ok {
		m.dtmfPT.Store(int32(pt))
	} else {
		m.dtmfPT.Store(-1)
	}
	if m.route == nil {
		return
	}
	m.wmu.Lock()
	med.RTPPacketWriter.UpdateWriter(m.route, c)
	m.wmu.Unlock()
	if ms.Raddr.IP != nil {
		if err := m.route.Move(&ms.Raddr); err != nil {
			m.log.Warn("sip: the caller's media moved to an address another call uses", "error", err)
		}
	}
}

// Batch is what the call's frames are queued in on the shared port
// (voice.Batcher); nil on a port of its own.
func (m *rtpMedia) Batch() pace.Flusher {
	if m.route == nil {
		return nil
	}
	return m.route.Batch()
}

// Packet is one RTP packet from the caller on the shared port (rtpmux.Sink),
// on the port's reader: decoded and handed to the controller as read does.
func (m *rtpMedia) Packet(b []byte) {
	var h rtp.Header
	n, err := h.Unmarshal(b)
	if err != nil {
		return // a malformed packet must not end the call
	}
	payload := b[n:]
	if h.Padding && len(payload) > 0 {
		if pad := int(payload[len(payload)-1]); pad <= len(payload) {
			payload = payload[:len(payload)-pad]
		}
	}
	m.received.Add(1)
	m.rmu.Lock()
	defer m.rmu.Unlock()
	switch h.PayloadType {
	case ptPCMU:
		m.rpcm = companding.AppendFromUlaw(m.rpcm[:0], payload)
		m.ctl.Hear(m.rpcm)
	case ptPCMA:
		m.rpcm = companding.AppendFromAlaw(m.rpcm[:0], payload)
		m.ctl.Hear(m.rpcm)
	default:
		if int32(h.PayloadType) == m.dtmfPT.Load() {
			if d, ok := m.dtmf.take(payload, h); ok {
				m.ctl.DTMF(d)
			}
		}
		m.ctl.Alive() // telephone-event, comfort noise
	}
}

// Control is RTCP from the caller (rtpmux.Sink).
func (m *rtpMedia) Control() { m.ctl.Alive() }

// dtmfState turns RFC 4733 telephone-event packets into digits: an event
// starts with a marked packet (or a new timestamp) and is a digit at its
// first end packet, however often the end is repeated.
type dtmfState struct {
	seen    bool   // a telephone-event packet came
	ts      uint32 // its timestamp
	started bool   // an event is sounding
	event   uint8
}

func (s *dtmfState) take(payload []byte, h rtp.Header) (rune, bool) {
	var ev media.DTMFEvent
	if media.DTMFDecode(payload, &ev) != nil {
		return 0, false
	}
	first := h.Marker || !s.seen || h.Timestamp != s.ts
	s.seen, s.ts = true, h.Timestamp
	if ev.EndOfEvent {
		if !s.started || ev.Event != s.event {
			return 0, false
		}
		s.started = false
		return media.DTMFToRune(ev.Event), true
	}
	if first {
		s.started, s.event = true, ev.Event
	}
	return 0, false
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
		m.ended.Store(true)
		close(m.stopped)
		if m.route != nil {
			m.route.Close()
		}
		if med := m.dialogMedia(); med != nil {
			if err := med.Close(); err != nil {
				m.log.Debug("sip: closing media", "error", err)
			}
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
			pcm = companding.AppendFromUlaw(pcm, buf[:n])
		case ptPCMA:
			pcm = companding.AppendFromAlaw(pcm, buf[:n])
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
	if m.ended.Load() || m.held.Load() || len(pcm) == 0 {
		return nil
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.med == nil {
		return nil // shared media before the answer
	}
	if sent, err := m.keyFrame(); sent {
		now := time.Now()
		if m.pacing != nil && !m.lastWrite.IsZero() {
			m.pacing(now.Sub(m.lastWrite) - voice.FrameDuration)
		}
		m.lastWrite = now
		return m.writeErr(err)
	}
	pt := uint8(m.sendPT.Load())
	if pt == ptPCMA {
		m.enc = companding.AppendAlaw(m.enc[:0], pcm)
	} else {
		m.enc = companding.AppendUlaw(m.enc[:0], pcm)
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
