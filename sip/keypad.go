package sip

import (
	"context"
	"strings"

	"github.com/emiago/diago/media"

	"github.com/stackbone/box/voice"
)

// Keypad tones out (RFC 4733): while digits are queued, each of the
// agent's 20 ms frames is replaced by a telephone-event packet on the same
// SSRC and schedule, so the tones keep the call's pacing and never race
// its audio. A key sounds for keyToneFrames frames (each packet carries
// the event's growing duration, all stamped with the event's start), its
// end packet goes out three times (keyEndPackets), then keyGapFrames of
// the agent's audio separate it from the next key; w holds pauseFrames of
// audio. The audio after an event is stamped as if it had played through
// the event, so the stream's clock never stops.
const (
	keyToneFrames = 5  // 100 ms of tone
	keyEndPackets = 3  // the end packet, sent three times
	keyGapFrames  = 3  // 60 ms before the next key
	pauseFrames   = 25 // w: 500 ms
	keyVolume     = 10 // -10 dBm0
)

// keyEvents are the RFC 4733 event codes of the keypad.
var keyEvents = map[rune]uint8{
	'0': 0, '1': 1, '2': 2, '3': 3, '4': 4, '5': 5, '6': 6, '7': 7, '8': 8, '9': 9,
	'*': 10, '#': 11, 'A': 12, 'B': 13, 'C': 14, 'D': 15,
}

// keypress is one SendDigits waiting for its digits to go out.
type keypress struct {
	digits []rune
	pt     uint8 // the peer's telephone-event payload type
	done   chan struct{}
}

// keypad is the digits queued on a call's media, owned under rtpMedia.wmu.
type keypad struct {
	queue []*keypress
	pos   int // the digit of queue[0] sounding
	slot  int // the frame within it
}

// telephoneEvent is the payload type the peer accepts telephone-event
// on, and whether it does at all.
func (m *rtpMedia) telephoneEvent() (uint8, bool) {
	med := m.dialogMedia()
	if med == nil {
		return 0, false
	}
	return telephoneEventOf(med.MediaSession())
}

// telephoneEventOf is the telephone-event payload type a media session
// negotiated.
func telephoneEventOf(ms *media.MediaSession) (uint8, bool) {
	if ms == nil {
		return 0, false
	}
	for _, c := range ms.CommonCodecs() {
		if strings.EqualFold(c.Name, "telephone-event") && c.SampleRate == sampleRate {
			return c.PayloadType, true
		}
	}
	return 0, false
}

// SendDigits queues digits and returns once the last went out
// (voice.Keypad).
func (m *rtpMedia) SendDigits(ctx context.Context, digits string) error {
	if err := voice.ValidDigits(digits); err != nil {
		return err
	}
	pt, ok := m.telephoneEvent()
	if !ok {
		return voice.ErrNoKeypad
	}
	kp := &keypress{digits: []rune(digits), pt: pt, done: make(chan struct{})}
	m.wmu.Lock()
	m.keys.queue = append(m.keys.queue, kp)
	m.wmu.Unlock()
	select {
	case <-kp.done:
		return nil
	case <-m.stopped:
		return voice.ErrCallEnded
	case <-ctx.Done():
		m.wmu.Lock()
		for i, q := range m.keys.queue {
			if q == kp && i > 0 { // the one sounding finishes its key
				m.keys.queue = append(m.keys.queue[:i], m.keys.queue[i+1:]...)
				break
			}
		}
		m.wmu.Unlock()
		return ctx.Err()
	}
}

// keyFrame sends the frame's telephone-event packet in place of the
// audio frame when a key is sounding; false lets the audio frame go (no
// key, a gap or a pause). Called under wmu on the frame's schedule.
func (m *rtpMedia) keyFrame() (sent bool, err error) {
	k := &m.keys
	if len(k.queue) == 0 {
		return false, nil
	}
	kp := k.queue[0]
	d := kp.digits[k.pos]
	slot := k.slot
	k.slot++
	var last int // the digit's last slot
	if d == 'w' {
		last = pauseFrames - 1
	} else {
		last = keyToneFrames + keyEndPackets + keyGapFrames - 1
	}
	if slot == last {
		k.pos, k.slot = k.pos+1, 0
		if k.pos == len(kp.digits) {
			k.queue, k.pos = k.queue[1:], 0
			close(kp.done)
		}
	}
	if d == 'w' || slot >= keyToneFrames+keyEndPackets {
		return false, nil
	}
	ev := media.DTMFEvent{Event: keyEvents[d], Volume: keyVolume, Duration: uint16(min(slot+1, keyToneFrames) * frameSamples)}
	ev.EndOfEvent = slot >= keyToneFrames
	w := m.med.RTPPacketWriter
	_, err = w.WriteSamples(media.DTMFEncode(ev), 0, slot == 0, kp.pt)
	if slot == keyToneFrames+keyEndPackets-1 {
		// The event is over: the stream's clock moves on by the frames it
		// took, and the audio after it starts a talkspurt.
		w.DelayTimestamp(uint32((keyToneFrames + keyEndPackets) * frameSamples))
		m.marker = true
	}
	return true, err
}

// SendDigits presses keys on the call's line (voice.Keypad); before the
// answer there is no line.
func (c *call) SendDigits(ctx context.Context, digits string) error {
	if m := c.getMedia(); m != nil {
		return m.SendDigits(ctx, digits)
	}
	return voice.ErrNoKeypad
}
