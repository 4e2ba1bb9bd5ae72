package studio_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Wrong and hostile input on the form that places an outbound call: each
// gets a clear message on the screen, typed markup stays text, and no call
// is placed or recorded. The box refuses what the form lets through, and
// what a client that skips the form sends.
func TestDialFormRefusesHostileInput(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls")
	p.waitFor(`!!document.querySelector("#dial select[name=agent] option[value=frontdesk]")`, "the dial form's agents")

	dial := func(agent, to, trunk, identities, want string) {
		t.Helper()
		p.js(`document.getElementById("dial-result").textContent = "…"`)
		p.set("#dial select[name=agent]", agent)
		p.set("#dial input[name=to]", to)
		p.set("#dial input[name=trunk]", trunk)
		p.set("#dial input[name=identities]", identities)
		p.js(`document.getElementById("dial").requestSubmit()`)
		p.waitFor(`!["", "…"].includes(document.getElementById("dial-result").textContent)`, "the dial form's answer to "+to)
		if got := p.text("#dial-result"); !strings.Contains(got, want) {
			t.Errorf("agent %q to %q trunk %q identities %q: the form says %q, want %q", agent, to, trunk, identities, got, want)
		}
		var hash string
		p.js(`location.hash`, &hash)
		if !strings.HasPrefix(hash, "#/calls") || strings.HasPrefix(hash, "#/calls/") {
			t.Fatalf("the form left the calls screen: %s", hash)
		}
	}
	script := `<script>window.pwned=1</script>`
	img := `<img src=x onerror=window.pwned=1>`
	dial("", "", "", "", "Pick an agent.")
	dial("frontdesk", "", "", "", "Enter the number to call.")
	dial("frontdesk", script, "", "", "The number must be 1 to 32 digits")
	dial("frontdesk", strings.Repeat("5", 33), "", "", "The number must be 1 to 32 digits")
	dial("frontdesk", "+34 600-111-222", "", "{not json", "Identities must be a JSON object")
	dial("frontdesk", "+34 600-111-222", "", `["crm/1"]`, "Identities must be a JSON object")
	dial("frontdesk", "+34 600-111-222", "", `{"customerId": {"a": 1}}`, `Each identity must be a string; "customerId" is not.`)
	// What only the box can check comes back from it, as text.
	dial("frontdesk", "+34 600-111-222", img, "", `unknown trunk: "`+img+`"`)
	dial("frontdesk", "+34 600-111-222", strings.Repeat("t", 129), "", "trunk is too long (129 bytes; at most 128)")
	dial("frontdesk", "+34 600-111-222", "", `{"customerId": "`+script+strings.Repeat("x", 2000)+`"}`, "(voice_invalid_request)")

	// This call's own voicemail policy: a message is needed to leave one,
	// and the box bounds it.
	p.set("#dial select[name=voicemail]", "message")
	dial("frontdesk", "+34 600-111-222", "", "", "Write the message to leave after the beep.")
	p.js(`document.querySelector("#dial input[name=message]").removeAttribute("maxlength")`)
	p.set("#dial input[name=message]", strings.Repeat("m", 1001))
	dial("frontdesk", "+34 600-111-222", "", "", "answeringMachine.message is longer than 1000 characters")
	p.set("#dial select[name=voicemail]", "")

	var pwned any
	var markup int
	p.js(`window.pwned`, &pwned)
	p.js(`document.querySelectorAll("#dial-result *, main script, main img").length`, &markup)
	if pwned != nil || markup != 0 {
		t.Fatalf("typed markup ran or was rendered: pwned %v, %d elements", pwned, markup)
	}

	// A client that skips the form gets the same clear refusals, bounded.
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"agent": strings.Repeat("a", 5000), "to": "+34600111222"}, "agent is too long (5000 bytes; at most 128)"},
		{map[string]any{"agent": "frontdesk", "to": strings.Repeat("1", 65)}, "to is too long (65 bytes; at most 64)"},
		{map[string]any{"agent": "frontdesk", "to": "+34600" + script}, "a number is 1 to 32 digits"},
		{map[string]any{"agent": "nobody", "to": "+34600111222"}, ""},
	} {
		raw, _ := json.Marshal(c.body)
		req, _ := http.NewRequest("POST", b.url+"/api/voice/calls", bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status, body := resp.StatusCode, string(answer)
		if status/100 != 4 || !strings.Contains(body, c.want) || len(body) > 1024 {
			t.Errorf("POST %v: %d %s", c.body["to"], status, body)
		}
	}
	if n := b.count(`SELECT count(*) FROM stackbone_platform.voice_calls`); n != 0 {
		t.Fatalf("%d calls recorded by refused dials", n)
	}
}

// An operator places a call to a trunk that never answers (it would ring
// for 32 s) and ends it from the call's page: the Hang up button ends the
// ringing call, which shows as ended by the operator; an ended call has no
// button.
func TestHangUpARingingCall(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls")
	p.waitFor(`!!document.querySelector("#dial select[name=agent] option[value=frontdesk]")`, "the dial form's agents")
	p.set("#dial select[name=agent]", "frontdesk")
	p.set("#dial input[name=to]", "+34 600 555 666")
	p.js(`document.getElementById("dial").requestSubmit()`)
	p.waitFor(`location.hash.startsWith("#/calls/call_") && !!document.getElementById("hangup")`, "the ringing call's page with its Hang up button")
	p.click("#hangup")
	p.waitFor(`document.getElementById("main").dataset.callStatus === "ended"`, "the call to end")
	if got := p.text("h1"); !strings.Contains(got, "operator_hangup") {
		t.Fatalf("the call's heading says %q", got)
	}
	var buttons int
	p.js(`document.querySelectorAll("#hangup").length`, &buttons)
	if buttons != 0 {
		t.Fatal("an ended call still offers Hang up")
	}
}
