// Package sip carries phone calls over SIP trunks: it answers INVITEs on
// the inbound trunks and places calls through the outbound trunks, and hands
// each call's audio to the call controller (package voice) as a voice.Media
// of 20 ms PCM frames. Signalling is github.com/emiago/sipgo; RTP, SDP and
// the offer/answer are github.com/emiago/diago.
//
//	srv, err := sip.New(sip.Config{Config: cfg.SIP, Manager: sip.Voice(voiceManager), Logger: log})
//	if err := srv.Start(ctx); err != nil { ... } // UDP and TCP on cfg.SIP.Addr
//	voiceManager.SetDialer(srv)                   // POST /api/voice/calls dials through the trunks
//	defer srv.Close()                             // BYE to every call, outcome shutdown
//
// An inbound INVITE is checked (a malformed one gets a 4xx), matched to the
// first trunk whose sources accept its address (403 otherwise; digest
// credentials are challenged with 401), routed by the dialled number to an
// agent (404 without a route), admitted under the call limit (503 with
// Retry-After beyond it, so a proxy in front of several boxes tries
// another), rung (100, 180), opened on the controller before the answer
// (the memory recall happens then, so the greeting plays at once) and
// answered with PCMU, PCMA and telephone-event (an INVITE must carry the
// SDP offer; a late offer is refused with 488). CANCEL before the answer
// closes the call as cancelled. Re-INVITEs put the call on hold (no media
// timeout, nothing sent) or change the codec without dropping it. Session
// timers (RFC 4028) are negotiated and enforced, the box refreshing with
// re-INVITE when it is the refresher. No RTP for the media timeout makes
// ReadFrame return voice.ErrMediaTimeout; the maximum call length ends the
// call with max_duration. Keypad digits (RFC 4733) reach Call.DTMF;
// Controls.Transfer sends REFER and the call ends as transferred once the
// other side reports success.
//
// The controller records the outcome: sip calls Close(outcome) itself only
// for what it alone knows (cancelled, max_duration, transferred, failed on
// session expiry or refresh failure, shutdown), always before it ends the
// media, so the controller's own close paths that follow do not win.
package sip
