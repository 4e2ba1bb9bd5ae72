// Package sip carries phone calls over SIP trunks: it answers INVITEs on
// the inbound trunks and places calls through the outbound trunks, and hands
// each call's audio to the call controller (package voice) as a voice.Media
// of 20 ms PCM frames. Signalling is github.com/emiago/sipgo; RTP, SDP and
// the offer/answer are github.com/emiago/diago.
//
//	srv, err := sip.New(sip.Config{Config: cfg.SIP, Manager: voiceManager, Logger: log})
//	if err := srv.Start(ctx); err != nil { ... } // UDP and TCP on cfg.SIP.Addr
//	srv.Register(apiServer)                       // POST /api/voice/calls dials through the trunks
//	defer srv.Close()                             // every call ends as shutdown, BYE
//
// An inbound INVITE is checked (a malformed one gets a 4xx), matched to the
// first trunk whose sources accept its address (403 otherwise; digest
// credentials are challenged with 401), routed by the dialled number to an
// agent (404 without a route), admitted under the call limit (503 with
// Retry-After beyond it and while the box drains, so a proxy in front of
// several boxes tries another; a draining box also answers out-of-dialog
// OPTIONS 503, so a proxy's probes leave it out), rung (100, 180), opened on the controller before the answer
// (the memory recall happens then, so the greeting plays at once) and
// answered with PCMU, PCMA and telephone-event (the first usable audio
// stream of the offer; other streams are refused with port 0; an INVITE
// without an offer gets the box's offer in the 200 and the answer is taken
// from the ACK). CANCEL before the answer closes the call as cancelled,
// recorded like any other. Malformed requests get 400 over UDP and TCP, a
// method the box does not serve 405 or 501 with Allow. Re-INVITEs put the
// call on hold (no media timeout, nothing sent) or change the codec
// without dropping it. Session
// timers (RFC 4028) are negotiated and enforced, the box refreshing with
// re-INVITE when it is the refresher. Keypad digits (RFC 4733) reach
// Call.DTMF; Transfer sends REFER and returns once the other side reports
// success.
//
// This package translates SIP and RTP, nothing more: decoded audio goes to
// voice.Call.Hear, and what happens on the SIP side is only reported to
// the controller (voice.Call.End: caller_hangup on BYE, cancelled on
// CANCEL, failed with a reason on session expiry, shutdown on Close). The
// controller decides the outcome, enforces the media timeout and the
// maximum length (passed in voice.CallInfo from this package's config),
// completes the call, and hangs up through the call's Hangup (BYE).
// How many calls the SIP side carries at once (sip.maxCalls) is this
// package's own limit.
package sip
