package sip

import (
	"bytes"
	"strings"
)

// Offers with several media streams. diago's SDP handling reads exactly one
// "m=" line and refuses any other SDP, while phones that can do video offer
// audio and video. RFC 3264 section 6 wants an answer with as many "m="
// lines as the offer, in the same order, a refused stream keeping its line
// with port 0. The box answers one audio stream, so it hands diago the
// offer cut to the audio stream it takes and puts the refused streams back
// into diago's answer.

// mediaSection is one "m=" line of an SDP and the lines under it.
type mediaSection struct {
	mline string
	lines []string
}

func (m mediaSection) field(i int) string {
	f := strings.Fields(strings.TrimPrefix(m.mline, "m="))
	if i < len(f) {
		return f[i]
	}
	return ""
}

// usableAudio reports whether the box can take the stream: audio over plain
// RTP, not refused, with PCMU or PCMA.
func (m mediaSection) usableAudio() bool {
	if m.field(0) != "audio" || m.field(1) == "0" || m.field(2) != "RTP/AVP" {
		return false
	}
	for _, f := range strings.Fields(strings.TrimPrefix(m.mline, "m="))[3:] {
		if f == "0" || f == "8" {
			return true
		}
	}
	for _, l := range m.lines {
		l = strings.ToLower(l)
		if strings.HasPrefix(l, "a=rtpmap:") && (strings.Contains(l, " pcmu/8000") || strings.Contains(l, " pcma/8000")) {
			return true
		}
	}
	return false
}

// splitSDP cuts an SDP into its session lines and media sections.
func splitSDP(body []byte) (session []string, media []mediaSection) {
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	for _, l := range strings.Split(text, "\n") {
		if l == "" {
			continue
		}
		switch {
		case strings.HasPrefix(l, "m="):
			media = append(media, mediaSection{mline: l})
		case len(media) == 0:
			session = append(session, l)
		default:
			media[len(media)-1].lines = append(media[len(media)-1].lines, l)
		}
	}
	return session, media
}

func joinSDP(session []string, media []mediaSection) []byte {
	var b bytes.Buffer
	for _, l := range session {
		b.WriteString(l + "\r\n")
	}
	for _, m := range media {
		b.WriteString(m.mline + "\r\n")
		for _, l := range m.lines {
			b.WriteString(l + "\r\n")
		}
	}
	return b.Bytes()
}

// offerStreams remembers an offer's streams to answer all of them.
type offerStreams struct {
	media []mediaSection
	kept  int // the stream the box answers
}

// splitOffer cuts an offer with several streams to the one the box
// answers: the first usable audio stream, else the first audio stream (so
// the refusal names the right reason). It returns nil for an offer with one
// stream or none, which diago reads as it is.
func splitOffer(body []byte) ([]byte, *offerStreams) {
	session, media := splitSDP(body)
	if len(media) < 2 {
		return body, nil
	}
	kept := -1
	for i, m := range media {
		if m.usableAudio() {
			kept = i
			break
		}
	}
	if kept < 0 {
		for i, m := range media {
			if m.field(0) == "audio" {
				kept = i
				break
			}
		}
	}
	if kept < 0 {
		// No audio at all: diago refuses it; keep one stream so the reason
		// given is the missing audio, not the number of streams.
		kept = 0
	}
	return joinSDP(session, media[kept:kept+1]), &offerStreams{media: media, kept: kept}
}

// answer puts the refused streams back into diago's one-stream answer, in
// the offer's order, each with port 0 and the offer's formats. An answer
// that already has them all is returned as it is (a 2xx may be sent again).
func (o *offerStreams) answer(body []byte) []byte {
	session, media := splitSDP(body)
	if len(media) != 1 {
		return body
	}
	out := make([]mediaSection, len(o.media))
	for i, m := range o.media {
		if i == o.kept {
			out[i] = media[0]
			continue
		}
		f := strings.Fields(strings.TrimPrefix(m.mline, "m="))
		if len(f) < 4 {
			f = append(f, make([]string, 4-len(f))...)
			f[3] = "0"
		}
		f[1] = "0"
		out[i] = mediaSection{mline: "m=" + strings.Join(f, " ")}
	}
	return joinSDP(session, out)
}
