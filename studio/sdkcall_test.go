package studio_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/voice"
)

// The SDK's browser call module (@stackbone/sdk/call, served to Studio
// as /studio/sdk/call.js) places a call from a page on its own: a real
// Chromium with a recorded voice as its microphone joins the box's
// embedded peer, the transcript event carries the agent's answer, the
// state and connection events follow the call, hangup ends it, and the
// end event and the call's record agree.
func TestSDKPlacesABrowserCall(t *testing.T) {
	b, p := callerOnABox(t)
	p.js(`(async () => {
		const { createClient } = await import("/studio/sdk/index.js");
		const { placeCall } = await import("/studio/sdk/call.js");
		const seen = window.seen = { states: [], connection: [], transcript: [], end: null };
		const call = window.call = placeCall(createClient({ baseURL: location.origin, apiKey: ` + strconv.Quote(adminKey) + ` }),
			{ agent: "support", identities: { customerId: "crm/77" } });
		call.on("state", (s) => seen.states.push(s));
		call.on("connection", (s) => seen.connection.push(s));
		call.on("transcript", (t) => { seen.transcript = t; });
		call.on("end", (e) => { seen.end = { state: e.state, outcome: e.outcome, reason: e.reason, callId: call.callId, error: e.error && e.error.message }; });
	})()`)

	type entry struct{ Role, Text string }
	var seen struct {
		States, Connection []string
		Transcript         []entry
		End                *struct{ State, Outcome, Reason, CallID, Error string }
	}
	read := func() { _ = p.br.Eval(p.ctx, `window.seen`, &seen) }
	poll.Until(t, "the agent's answer in the transcript event", 60*time.Second, func() bool {
		read()
		if seen.End != nil {
			t.Fatalf("the call ended before the agent answered: %+v", *seen.End)
		}
		return slices.Contains(seen.Transcript, entry{voice.RoleAssistant, agentSays})
	})
	p.js(`window.call.hangup().then((r) => { if (r.error) throw r.error; })`)
	poll.Until(t, "the end event after hangup", 30*time.Second, func() bool {
		read()
		return seen.End != nil
	})

	if seen.End.State != "ended" || seen.End.Error != "" {
		t.Fatalf("the end event: %+v", *seen.End)
	}
	for _, s := range []string{"opening", "joining", "joined", "active", "ending", "ended"} {
		if !slices.Contains(seen.States, s) {
			t.Fatalf("no %q among the state events %v", s, seen.States)
		}
	}
	if !slices.Contains(seen.Connection, "connected") {
		t.Fatalf("the connection events %v never say connected", seen.Connection)
	}
	var stopped bool
	p.js(`[...document.querySelectorAll("audio")].length === 0`, &stopped)
	if !stopped {
		t.Fatal("the agent's audio element is still on the page after hangup")
	}
	rec, err := b.calls.Get(context.Background(), seen.End.CallID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "ended" || rec.Outcome == nil || string(*rec.Outcome) != seen.End.Outcome {
		t.Fatalf("the call's record: status %q outcome %v; the end event's outcome %q", rec.Status, rec.Outcome, seen.End.Outcome)
	}
	if !slices.ContainsFunc(rec.Transcript, func(e voice.Entry) bool { return e.Role == voice.RoleUser && e.Text == callerSays }) {
		t.Fatalf("the caller's turn is not in the record: %+v", rec.Transcript)
	}
}

// A browser that cannot join (here its microphone is refused) ends the
// call with join_failed and the box's room is ended, not left waiting for
// its join timeout.
func TestSDKCallThatCannotJoin(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.js(`(async () => {
		navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException("Permission denied", "NotAllowedError"));
		const { createClient } = await import("/studio/sdk/index.js");
		const { placeCall } = await import("/studio/sdk/call.js");
		const call = placeCall(createClient({ baseURL: location.origin, apiKey: ` + strconv.Quote(adminKey) + ` }),
			{ agent: "support", identities: { customerId: "crm/78" } });
		const e = await call.ended;
		window.ended = { state: e.state, code: e.error && e.error.code, reason: e.reason, callId: call.callId };
	})()`)
	var ended struct{ State, Code, Reason, CallID string }
	p.js(`window.ended`, &ended)
	if ended.State != "failed" || ended.Code != "join_failed" || !strings.Contains(ended.Reason, "Permission denied") {
		t.Fatalf("the end of a call that could not join: %+v", ended)
	}
	poll.Until(t, "the room's call ended by the box", 15*time.Second, func() bool {
		rec, err := b.calls.Get(context.Background(), ended.CallID)
		return err == nil && rec.Status == "ended"
	})
}
