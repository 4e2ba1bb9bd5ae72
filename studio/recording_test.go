package studio_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/recordings"
)

// An operator opens a recorded call: the player loads the recording (the
// key in a header), its length is the recording's, and the heard
// transcript follows it: an entry clicked plays from its start and is
// marked as playing. A call without a recording shows no player.
func TestCallDetailPlaysTheRecording(t *testing.T) {
	bb := boxtest.New(t, agentsYAML)
	if err := bb.Keys.Ensure(t.Context(), "admin", adminKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	b := &box{t: t, url: bb.URL, model: bb.Model, pool: bb.Pool, keys: bb.Keys}
	started := time.Now().Add(-time.Minute)
	b.insertCall("call_rec", "inbound", "frontdesk", "+34600111333", "caller_hangup", started,
		`[{"turn":1,"role":"assistant","text":"Hello, this is the front desk.","at":"2026-12-05T10:00:01Z"},
		  {"turn":2,"role":"user","text":"When do you open?","at":"2026-12-05T10:00:03Z"}]`, `{"read":true,"save":true,"saved":true}`, `[]`)
	b.insertCall("call_plain", "inbound", "frontdesk", "+34600111444", "caller_hangup", started, `[]`, `{"read":true,"save":true,"saved":true}`, `[]`)
	// Two seconds: the agent speaks for the first 0.8 s, the caller from 1 s to 1.8 s.
	take, err := bb.Recordings.Begin("call_rec", 8000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		agent, caller := make([]int16, 160), make([]int16, 160)
		for j := range 160 {
			s := int16(8000 * math.Sin(2*math.Pi*440*float64(i*160+j)/8000))
			if i < 40 {
				agent[j] = s
			}
			if i >= 50 && i < 90 {
				caller[j] = s
			}
		}
		take.Agent(agent)
		take.Caller(caller)
	}
	if _, err := take.Keep(context.Background(), recordings.Meta{AgentID: "frontdesk", UserID: "+34600111333", Retention: time.Hour,
		Marks: []recordings.Mark{{Turn: 1, Role: "assistant", StartMs: 0, EndMs: 800}, {Turn: 2, Role: "user", StartMs: 1000, EndMs: 1800}}}); err != nil {
		t.Fatal(err)
	}
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls/call_rec")
	p.waitFor(`document.getElementById("recording-audio") && document.getElementById("recording-audio").readyState >= 1`, "the recording to load")
	var duration float64
	p.js(`document.getElementById("recording-audio").duration`, &duration)
	if math.Abs(duration-2) > 0.1 {
		t.Fatalf("the player's recording lasts %.2f s, want 2", duration)
	}
	if p.text("#recording-status") != "" {
		t.Fatalf("status: %q", p.text("#recording-status"))
	}
	p.waitFor(`!document.getElementById("recording-download").hidden`, "the download link")
	p.click(`#heard li[data-turn="2"]`)
	p.waitFor(`document.querySelector('#heard li[data-turn="2"]').classList.contains("playing")`, "the caller's entry to be marked as playing")
	var at float64
	p.js(`document.getElementById("recording-audio").currentTime`, &at)
	if math.Abs(at-1) > 0.05 {
		t.Fatalf("the player jumped to %.2f s, want 1.0 (where the caller's words start)", at)
	}
	var both bool
	p.js(`document.querySelectorAll("#heard li.playing").length === 1`, &both)
	if !both {
		t.Fatal("more than one entry is marked as playing")
	}

	p.goTo("#/calls/call_plain")
	var has bool
	p.js(`!!document.getElementById("recording")`, &has)
	if has {
		t.Fatal("a call without a recording shows a player")
	}
}
