package rooms_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pion/rtcp"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/rooms/roomstest"
	"github.com/stackbone/box/voice"
)

// Requests the rooms routes refuse, each with its status and code, and the
// call page's files.
func TestRoomsAPIRefusalsAndPage(t *testing.T) {
	t.Parallel()
	b := newBox(t, config.Rooms{})
	missing := "/api/voice/rooms/room_" + uuid.NewString()
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"POST", "/api/voice/rooms", `{}`, 400, "rooms_invalid_request"},
		{"POST", "/api/voice/rooms", `{"agent":"frontdesk","extra":1}`, 400, "rooms_invalid_request"},
		{"POST", "/api/voice/rooms", `{"agent":"frontdesk","identities":["+1555"]}`, 400, "rooms_invalid_request"},
		{"POST", "/api/voice/rooms", `{"agent":"frontdesk","identities":{"phoneNumber":7}}`, 400, "rooms_invalid_request"},
		{"POST", "/api/voice/rooms", `{"agent":"nobody"}`, 404, "agent_not_found"},
		{"GET", missing, nil, 404, "room_not_found"},
		{"GET", "/api/voice/rooms/not-a-room", nil, 404, "room_not_found"},
		{"DELETE", missing, nil, 404, "room_not_found"},
		{"POST", missing + "/offer", `{"type":"offer","sdp":"v=0"}`, 404, "room_not_found"},
		{"POST", missing + "/offer", `{"type":"answer","sdp":"v=0"}`, 400, "rooms_invalid_request"},
	} {
		if st, code := b.do(c.method, c.path, c.body, nil); st != c.status || code != c.code {
			t.Errorf("%s %s %v: %d %q, want %d %q", c.method, c.path, c.body, st, code, c.status, c.code)
		}
	}
	// The routes need a key with the voice scope.
	resp, err := http.Post(b.url+"/api/voice/rooms", "application/json", strings.NewReader(`{"agent":"frontdesk"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("without a key: %d", resp.StatusCode)
	}
	// An offer without audio, or without a codec in common, is refused and
	// the room still takes a good one.
	var room rooms.View
	if st, code := b.do("POST", "/api/voice/rooms", `{"agent":"frontdesk"}`, &room); st != 201 {
		t.Fatalf("open: %d %s", st, code)
	}
	if st, code := b.do("POST", room.Join.OfferURL, `{"type":"offer","sdp":"v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"}`, nil); st != 400 || code != "rooms_invalid_request" {
		t.Fatalf("offer without audio: %d %s", st, code)
	}
	for path, want := range map[string]string{"/call": "<title>Stackbone: test call</title>", "/call/call.js": "window.stackboneCall",
		"/call/livekit-client.umd.js": "LivekitClient"} {
		resp, err := http.Get(b.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
	}
}

// A Go WebRTC caller on the embedded peer: the room is waiting until the
// caller joins, the agent answers aloud, the API shows the live heard
// transcript, and DELETE ends the call, which saves once.
func TestGoCallerEmbeddedEndedByAPI(t *testing.T) {
	t.Parallel()
	goCallerEmbedded(t, false, config.Rooms{})
}

// The same call from the load runs' direct caller (ICE, DTLS and SRTP
// without a PeerConnection): the box takes it as any other peer.
func TestDirectCallerEmbedded(t *testing.T) {
	t.Parallel()
	goCallerEmbedded(t, true, config.Rooms{})
}

// And with every room's media on one UDP port, where the box tells the
// callers' packets apart by their address.
func TestDirectCallerEmbeddedOnOnePort(t *testing.T) {
	t.Parallel()
	goCallerEmbedded(t, true, config.Rooms{Embedded: config.EmbeddedRooms{IPs: []string{"127.0.0.1"}, UDPPort: freeport.Get(t, freeport.UDP)}})
}

func goCallerEmbedded(t *testing.T, direct bool, cfg config.Rooms) {
	b := newBox(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	number := "+34600333444"
	b.model.ScriptTranscripts(callerSays)
	b.model.RespondTranscripts(func([]byte) string { return "" })

	var room rooms.View
	if st, code := b.do("POST", "/api/voice/rooms", map[string]any{"agent": "frontdesk", "identities": map[string]string{"phoneNumber": number}}, &room); st != 201 {
		t.Fatalf("open: %d %s", st, code)
	}
	if room.Status != rooms.StatusWaiting || room.Backend != rooms.BackendEmbedded || room.Join == nil ||
		room.Join.OfferURL != "/api/voice/rooms/"+room.ID+"/offer" || room.Join.ExpiresAt.Before(time.Now()) {
		t.Fatalf("room: %+v", room)
	}
	if room.Memory == nil || room.Memory.Off != "" || room.Memory.Identity != number {
		t.Fatalf("memory at open: %+v", room.Memory)
	}
	c, err := roomstest.Join(ctx, roomstest.Options{BaseURL: b.url, Key: devKey, OfferURL: room.Join.OfferURL, Direct: direct})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, code := b.do("POST", room.Join.OfferURL, map[string]string{"type": "offer", "sdp": "v=0\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"}, nil); st != 409 || code != "rooms_already_joined" {
		t.Fatalf("second offer: %d %s", st, code)
	}
	poll.Until(t, "the room to be active", 5*time.Second, func() bool {
		var v rooms.View
		b.do("GET", "/api/voice/rooms/"+room.ID, nil, &v)
		return v.Status == rooms.StatusActive
	})

	c.Say(roomstest.Speech(1200))
	if err := c.WaitVoiced(ctx, 60); err != nil {
		t.Fatal(err)
	}
	var live rooms.View
	poll.Until(t, "the heard transcript", 20*time.Second, func() bool {
		b.do("GET", "/api/voice/rooms/"+room.ID, nil, &live)
		return len(live.Transcript) == 2
	})

	if live.Transcript[0].Role != voice.RoleUser || live.Transcript[0].Text != callerSays || live.Transcript[1].Text != agentSays {
		t.Fatalf("live transcript: %+v", live.Transcript)
	}
	checkTalkspurts(t, c.Arrivals())
	if direct {
		// The box's peer reports on RTCP: its packets sent so far, and the
		// caller's stream received.
		var sr *rtcp.SenderReport
		poll.Until(t, "an RTCP sender report with a reception report", 15*time.Second, func() bool {
			sr = c.SenderReport()
			return sr != nil && len(sr.Reports) == 1
		})
		ntpSecs := int64(sr.NTPTime>>32) - 2208988800 // NTP era 0 to Unix time
		if d := time.Now().Unix() - ntpSecs; d < 0 || d > 60 {
			t.Fatalf("sender report NTP time %d s off the clock", d)
		}
		if sr.PacketCount == 0 || int(sr.PacketCount) > len(c.Arrivals())+100 || sr.Reports[0].TotalLost != 0 || sr.Reports[0].LastSequenceNumber == 0 {
			t.Fatalf("sender report %+v (the caller received %d packets)", sr, len(c.Arrivals()))
		}
	}
	// The box counted its own pacing of those packets (bench rooms reads it).
	if n, got := b.rooms.Pacing().N(), int64(len(c.Arrivals())); n < got/2 {
		t.Fatalf("the embedded peer's pacing histogram counted %d packets, the caller received %d", n, got)
	}
	// On the one UDP port the agent's packets went out in the pacer's
	// batches; on a port per room through the call's ICE connection.
	if sent := b.rooms.SharedSends(); cfg.Embedded.UDPPort != 0 && (sent.Sent < int64(len(c.Arrivals()))/2 || sent.SendCalls == 0) ||
		cfg.Embedded.UDPPort == 0 && sent.Sent != 0 {
		t.Fatalf("shared port sends %+v, the caller received %d packets", sent, len(c.Arrivals()))
	}
	if st, code := b.do("DELETE", "/api/voice/rooms/"+room.ID, nil, nil); st != 202 {
		t.Fatalf("end: %d %s", st, code)
	}
	var rec voice.CallRecord
	poll.Until(t, "the call to complete", 20*time.Second, func() bool {
		b.do("GET", "/api/voice/calls/"+room.CallID, nil, &rec)
		return rec.Status == "ended"
	})

	if *rec.Outcome != voice.OutcomeCompleted || !rec.Memory.Saved || rec.Direction != voice.Browser || len(rec.Metrics) != 1 {
		t.Fatalf("call: %+v %+v", rec, rec.Memory)
	}
	poll.Until(t, "the box to close the caller's connection", 10*time.Second, c.Ended)
	if st, code := b.do("DELETE", "/api/voice/rooms/"+room.ID, nil, nil); st != 409 || code != "room_ended" {
		t.Fatalf("end twice: %d %s", st, code)
	}
	got, _ := b.mem.Recall(ctx, memory.RecallRequest{AgentID: "frontdesk", UserID: number})
	if len(got.Facts) != 2 || len(got.Calls) != 1 {
		t.Fatalf("memory: %+v", got)
	}
}

// Only the explicit identity the agent's key names selects a person: no
// identity, a phone-shaped customerId, or a phone number for an agent
// keyed on email run the call without memory and record why. A room
// nobody joins ends on its own; one ended while waiting is cancelled.
func TestIdentityRulesAndRoomsNobodyJoins(t *testing.T) {
	t.Parallel()
	b := newBox(t, config.Rooms{JoinTimeout: 500 * time.Millisecond})
	cases := []struct {
		body string
		off  string
	}{
		{`{"agent":"frontdesk"}`, "the call has no phoneNumber identity"},
		{`{"agent":"frontdesk","identities":{"customerId":"+34600111222"}}`, "the call has no phoneNumber identity"},
		{`{"agent":"mailer","identities":{"phoneNumber":"+34600111222"}}`, "the call has no email identity"},
	}
	var ids []rooms.View
	for _, c := range cases {
		var v rooms.View
		if st, code := b.do("POST", "/api/voice/rooms", c.body, &v); st != 201 {
			t.Fatalf("%s: %d %s", c.body, st, code)
		}
		if v.Memory == nil || v.Memory.Off != c.off || v.Memory.Identity != "" {
			t.Fatalf("%s: memory %+v, want off %q", c.body, v.Memory, c.off)
		}
		ids = append(ids, v)
	}
	// The last one is ended by the operator before anyone joined.
	if st, code := b.do("DELETE", "/api/voice/rooms/"+ids[2].ID, nil, nil); st != 202 {
		t.Fatalf("end waiting room: %d %s", st, code)
	}
	for i, v := range ids {
		want := voice.OutcomeNoAnswer
		if i == 2 {
			want = voice.OutcomeCancelled
		}
		var got rooms.View
		poll.Until(t, "the room to end", 10*time.Second, func() bool {
			b.do("GET", "/api/voice/rooms/"+v.ID, nil, &got)
			return got.Status == rooms.StatusEnded
		})

		if got.Outcome == nil || *got.Outcome != want || got.Memory.Saved || got.Memory.NotSavedReason != cases[i].off {
			t.Fatalf("room %d: outcome %v, memory %+v", i, got.Outcome, got.Memory)
		}
	}
	// Every slot was freed.
	var open []rooms.View
	b.do("GET", "/api/voice/rooms", nil, &open)
	if len(open) != 0 || b.calls.Active() != 0 {
		t.Fatalf("%d rooms and %d calls still open", len(open), b.calls.Active())
	}
}

// A caller whose packets stop ends by media timeout; the box's own limit on
// rooms refuses more; shutting the service down ends a running call with
// outcome shutdown after its completion.
func TestMediaTimeoutCapacityAndShutdown(t *testing.T) {
	t.Parallel()
	b := newBox(t, config.Rooms{MaxRooms: 1, MediaTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	open := func() rooms.View {
		var v rooms.View
		if st, code := b.do("POST", "/api/voice/rooms", `{"agent":"frontdesk","identities":{"phoneNumber":"+1555"}}`, &v); st != 201 {
			t.Fatalf("open: %d %s", st, code)
		}
		return v
	}
	r1 := open()
	if st, code := b.do("POST", "/api/voice/rooms", `{"agent":"frontdesk"}`, nil); st != 503 || code != "rooms_at_capacity" {
		t.Fatalf("over capacity: %d %s", st, code)
	}
	c1, err := roomstest.Join(ctx, roomstest.Options{BaseURL: b.url, Key: devKey, OfferURL: r1.Join.OfferURL})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c1.Mute()
	var rec voice.CallRecord
	poll.Until(t, "a media timeout", 10*time.Second, func() bool {
		rec, _ = b.calls.Get(ctx, r1.CallID)
		return rec.Status == "ended"
	})

	if *rec.Outcome != voice.OutcomeMediaTimeout {
		t.Fatalf("outcome %s", *rec.Outcome)
	}

	poll.Until(t, "the slot to free", 5*time.Second, func() bool {
		var l []rooms.View
		b.do("GET", "/api/voice/rooms", nil, &l)
		return len(l) == 0
	})

	r2 := open()
	c2, err := roomstest.Join(ctx, roomstest.Options{BaseURL: b.url, Key: devKey, OfferURL: r2.Join.OfferURL})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	poll.Until(t, "the call to run", 5*time.Second, func() bool {
		rec, _ = b.calls.Get(ctx, r2.CallID)
		return rec.Status == "active"
	})

	if err := b.rooms.Close(); err != nil {
		t.Fatal(err)
	}
	rec, _ = b.calls.Get(ctx, r2.CallID)
	if rec.Status != "ended" || *rec.Outcome != voice.OutcomeShutdown {
		t.Fatalf("after Close: %s %v", rec.Status, rec.Outcome)
	}
	if st, code := b.do("POST", "/api/voice/rooms", `{"agent":"frontdesk"}`, nil); st != 503 || code != "unavailable" {
		t.Fatalf("after Close: %d %s", st, code)
	}
}

// A call that cannot run says why, on its record and on the room the call
// page polls: here the agent's voice is the offline engine, which this
// test box does not have.
func TestFailedCallSaysWhy(t *testing.T) {
	t.Parallel()
	b := newBox(t, config.Rooms{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var room rooms.View
	if st, code := b.do("POST", "/api/voice/rooms", map[string]any{"agent": "mute"}, &room); st != 201 {
		t.Fatalf("open: %d %s", st, code)
	}
	// The box hangs up as soon as the browser's audio path is up, so the
	// caller may not see its side connected: that is not the point here.
	if c, err := roomstest.Join(ctx, roomstest.Options{BaseURL: b.url, Key: devKey, OfferURL: room.Join.OfferURL}); err == nil {
		defer c.Close()
	} else {
		t.Logf("join: %v", err)
	}
	var v rooms.View
	poll.Until(t, "the room to end", 20*time.Second, func() bool {
		b.do("GET", "/api/voice/rooms/"+room.ID, nil, &v)
		return v.Status == rooms.StatusEnded
	})

	if v.Outcome == nil || *v.Outcome != voice.OutcomeFailed || v.EndReason == nil || !strings.Contains(*v.EndReason, "speech") {
		t.Fatalf("ended room: outcome %v reason %v", v.Outcome, v.EndReason)
	}
	var rec voice.CallRecord
	b.do("GET", "/api/voice/calls/"+room.CallID, nil, &rec)
	if rec.EndReason == nil || *rec.EndReason != *v.EndReason {
		t.Fatalf("call record reason %v", rec.EndReason)
	}
}

// checkTalkspurts checks the agent's RTP time: a frame (160 samples) per
// packet, except at the start of a talkspurt (the answer starts as soon as
// it is playable, not at the next 20 ms step), whose packet carries the
// marker bit and advances by the time that passed since the one before.
func checkTalkspurts(t *testing.T, got []roomstest.Arrival) {
	t.Helper()
	marked := 0
	for i := 1; i < len(got); i++ {
		prev, a := got[i-1], got[i]
		if a.Seq != prev.Seq+1 {
			continue // lost or reordered on loopback: no step to check
		}
		step := a.Timestamp - prev.Timestamp
		if !a.Marker {
			if step != 160 {
				t.Fatalf("packet %d: RTP time advanced %d samples without a talkspurt, want 160", a.Seq, step)
			}
			continue
		}
		marked++
		if step > 160 {
			t.Fatalf("talkspurt packet %d: RTP time advanced %d samples, more than a frame", a.Seq, step)
		}
		if !a.Voiced {
			t.Fatalf("talkspurt packet %d is silent", a.Seq)
		}
	}
	if marked == 0 {
		t.Fatalf("no packet of %d began a talkspurt (marker bit), though the agent answered", len(got))
	}
}

// A browser call ends at the rooms' own maximum length
// (rooms.maxCallDuration), not at the phone calls' (sip.maxCallDuration,
// an hour here).
func TestRoomCallEndsAtItsOwnMaximumLength(t *testing.T) {
	t.Parallel()
	b := newBox(t, config.Rooms{MaxCallDuration: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var room rooms.View
	if st, code := b.do("POST", "/api/voice/rooms", map[string]any{"agent": "frontdesk"}, &room); st != 201 {
		t.Fatalf("open: %d %s", st, code)
	}
	c, err := roomstest.Join(ctx, roomstest.Options{BaseURL: b.url, Key: devKey, OfferURL: room.Join.OfferURL, Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	var rec voice.CallRecord
	poll.Until(t, "the call to reach its maximum length", 40*time.Second, func() bool {
		b.do("GET", "/api/voice/calls/"+room.CallID, nil, &rec)
		return rec.Status == "ended"
	})
	if took := time.Since(began); rec.Outcome == nil || *rec.Outcome != voice.OutcomeMaxDuration || took > 30*time.Second {
		t.Fatalf("the call ended %v after %s", rec.Outcome, took)
	}
}
