package sip

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media/sdp"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// offerPeer is where an offer's audio comes from and goes to, when a call
// with that offer can use the shared RTP port: plain RTP over IPv4 (not
// SRTP, whose keys belong to a port of the call's own).
func offerPeer(offer []byte) (*net.UDPAddr, bool) {
	sd := sdp.SessionDescription{}
	if err := sdp.Unmarshal(offer, &sd); err != nil {
		return nil, false
	}
	md, err := sd.MediaDescription("audio")
	if err != nil || md.Proto != "RTP/AVP" || md.Port <= 0 || md.Port > 65535 {
		return nil, false
	}
	for _, a := range sd.Values("a") {
		if strings.HasPrefix(a, "crypto:") {
			return nil, false
		}
	}
	ci, err := sd.ConnectionInformation()
	if err != nil || ci.NetworkType != "IN" || ci.IP == nil {
		return nil, false
	}
	ip := ci.IP.To4()
	if ip == nil || ip.IsUnspecified() {
		return nil, false
	}
	return &net.UDPAddr{IP: ip, Port: md.Port}, true
}

// withRTPPort rewrites the box's SDP (diago's, naming the port it opened
// for the call) to name the shared RTP port, and RTCP on the next.
func withRTPPort(body []byte, port int) []byte {
	lines := bytes.Split(body, []byte("\r\n"))
	audio := false
	for i, l := range lines {
		s := string(l)
		switch {
		case strings.HasPrefix(s, "m="):
			audio = false
			if f := strings.Fields(s); len(f) >= 3 && f[0] == "m=audio" && f[1] != "0" {
				f[1] = strconv.Itoa(port)
				lines[i] = []byte(strings.Join(f, " "))
				audio = true
			}
		case audio && strings.HasPrefix(s, "a=rtcp:"):
			rest := strings.TrimPrefix(s, "a=rtcp:")
			if sp := strings.IndexByte(rest, ' '); sp >= 0 {
				rest = rest[sp:]
			} else {
				rest = ""
			}
			lines[i] = []byte("a=rtcp:" + strconv.Itoa(port+1) + rest)
		}
	}
	return bytes.Join(lines, []byte("\r\n"))
}

// reinviteOffering refreshes the session of a call on the shared RTP port
// with a re-INVITE whose offer names that port. diago's ReInvite offers
// the port it opened for the call, which nothing reads: the caller would
// move its audio there and the call would go silent. The answer is
// acknowledged and otherwise left as it is: a refresh changes nothing.
func reinviteOffering(ctx context.Context, d *diago.DialogServerSession, med *diago.DialogMedia, port int) error {
	ms := med.MediaSession()
	if ms == nil {
		return d.ReInvite(ctx)
	}
	contact := d.RemoteContact()
	if contact == nil {
		return errors.New("sip: the dialog has no remote contact to refresh")
	}
	req := sip.NewRequest(sip.INVITE, contact.Address)
	req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	req.SetBody(withRTPPort(ms.LocalSDP(false), port))
	res, err := d.Do(ctx, req)
	if err != nil {
		return err
	}
	if !res.IsSuccess() {
		return sipgo.ErrDialogResponse{Res: res}
	}
	target := contact.Address
	if c := res.Contact(); c != nil {
		target = c.Address
	}
	return d.WriteRequest(sip.NewRequest(sip.ACK, target))
}
