package studio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
)

// chat sends one turn over the OpenAI wire with a session key.
func (b *box) chat(agentName, sessionKey, user, text string) {
	b.t.Helper()
	body, _ := json.Marshal(map[string]any{"model": agentName, "user": user,
		"messages": []map[string]string{{"role": "user", "content": text}}})
	req, _ := http.NewRequest("POST", b.url+"/openai/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("x-stackbone-session", sessionKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.t.Fatalf("chat %s: %d", sessionKey, resp.StatusCode)
	}
}

// An operator filters the sessions by agent, opens the one waiting for a
// decision, reads its transcript and rejects the held tool; the session
// goes on and nothing was saved. What the model wrote shows as text, never
// as markup.
func TestSessionsScreen(t *testing.T) {
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Hello <img src=x onerror=window.pwned=1>, how can I help?"})
	b.chat("support", "s-support", "crm/1", "Hi <script>window.pwned=1</script>")
	b.model.Script(providertest.Reply{Content: "Let me note that.", ToolCalls: []providertest.Call{
		providertest.ToolCall("h1", "memory_save", map[string]string{"content": "Allergic to nuts."})}},
		providertest.Reply{Content: "Understood, I will not note it."})
	b.chat("guarded", "s-guarded", "crm/7", "I am allergic to nuts.")

	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/sessions")
	p.waitFor(`document.querySelectorAll("table.sessions tbody tr").length === 2`, "two sessions")
	if got := p.text("table.sessions tbody"); !strings.Contains(got, "Hi <script>window.pwned=1</script>") {
		t.Fatalf("the preview is not shown as typed: %q", got)
	}
	p.set("main select[name=agent]", "guarded")
	p.waitFor(`location.hash === "#/sessions?agent=guarded" && document.getElementById("root").dataset.state === "ready" &&
		document.querySelectorAll("table.sessions tbody tr").length === 1`, "the guarded agent's session alone")
	if got := p.text("table.sessions tbody tr"); !strings.Contains(got, "held") || !strings.Contains(got, "I am allergic to nuts.") {
		t.Fatalf("the held session's row: %q", got)
	}
	p.click("table.sessions tbody tr td")
	p.waitFor(`!!document.getElementById("held")`, "the held tool")
	if got := p.text("#held pre"); !strings.Contains(got, "Allergic to nuts.") {
		t.Fatalf("the held call's arguments: %q", got)
	}
	p.set("#held input[name=reason]", "Not without consent.")
	p.click("#reject")
	p.waitFor(`!document.getElementById("held") && document.querySelectorAll("#turns li.turn").length === 1`, "the session after the decision")

	list, err := b.rt.ListSessions(context.Background(), agent.SessionFilter{Agent: "guarded"})
	if err != nil || len(list) != 1 {
		t.Fatal(list, err)
	}
	d, err := b.rt.GetSession(context.Background(), list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != agent.StatusCompleted || d.Pending != nil || len(d.Transcript) != 1 {
		t.Fatalf("after reject: %+v", d)
	}
	if got, err := b.mem.Recall(context.Background(), memory.RecallRequest{AgentID: "guarded", UserID: "crm/7"}); err != nil || len(got.Facts) != 0 {
		t.Fatalf("the rejected save wrote facts: %+v %v", got, err)
	}
	if got := p.text("#turns"); !strings.Contains(got, "Understood, I will not note it.") {
		t.Fatalf("transcript after the decision: %q", got)
	}

	// The other session's reply, markup and all, is text.
	p.goTo("#/sessions/" + mustSession(t, b, "support"))
	p.waitFor(`document.querySelectorAll("#turns li.turn").length === 1`, "the support session's transcript")
	var pwned any
	var imgs int
	p.js(`window.pwned`, &pwned)
	p.js(`document.querySelectorAll("main img, main script").length`, &imgs)
	if pwned != nil || imgs != 0 || !strings.Contains(p.text("#turns"), "Hello <img src=x onerror=window.pwned=1>") {
		t.Fatalf("markup from the conversation ran: pwned %v, %d elements, text %q", pwned, imgs, p.text("#turns"))
	}
}

func mustSession(t *testing.T, b *box, agentName string) string {
	t.Helper()
	list, err := b.rt.ListSessions(context.Background(), agent.SessionFilter{Agent: agentName})
	if err != nil || len(list) == 0 {
		t.Fatalf("sessions of %s: %v %v", agentName, list, err)
	}
	return list[0].ID
}

// insertCall writes a finished call as the voice controller records one.
func (b *box) insertCall(id, direction, agentName, number, outcome string, started time.Time, transcript, mem, metrics string) {
	b.t.Helper()
	var num any
	if number != "" {
		num = number
	}
	_, err := b.pool.Exec(context.Background(), `INSERT INTO stackbone_platform.voice_calls
		(id, direction, agent_id, phone_number, status, started_at, answered_at, ended_at, outcome, duration_seconds, transcript, memory, metrics)
		VALUES ($1, $2, $3, $4, 'ended', $5::timestamptz, $5::timestamptz, $5::timestamptz + interval '42 seconds', $6, 42, $7, $8, $9)`,
		id, direction, agentName, num, started, outcome, transcript, mem, metrics)
	if err != nil {
		b.t.Fatal(err)
	}
}

// An operator pages through the calls, filters by number, and opens one:
// the heard transcript (a caller's markup shown as text), what memory did,
// and a latency bar per turn.
func TestCallsScreen(t *testing.T) {
	b := newBox(t)
	t0 := time.Now().Add(-time.Hour)
	for i := range 60 {
		b.insertCall(fmt.Sprintf("call_%03d", i), "inbound", "receptionist", fmt.Sprintf("+3460000%04d", i), "caller_hangup",
			t0.Add(time.Duration(i)*time.Second), `[]`, `{"read":true,"save":true,"saved":true}`, `[]`)
	}
	b.insertCall("call_hostile", "outbound", "receptionist", "+34600111222", "completed", t0.Add(-time.Minute),
		`[{"turn":1,"role":"user","text":"<script>window.pwned=1</script> call me back","at":"2026-11-30T10:00:00Z"},
		  {"turn":1,"role":"assistant","text":"Sure, after 16:00.","at":"2026-11-30T10:00:02Z"}]`,
		`{"read":true,"save":true,"identityKey":"phoneNumber","identity":"+34600111222","recalledFacts":2,"recalledCalls":1,"saved":false,"saveError":"memory_model_failed"}`,
		`[{"turn":1,"endOfUtteranceMs":300,"speechToTextMs":120,"timeToFirstTokenMs":400,"textToSpeechFirstByteMs":90,"wireToWireMs":930,
		   "endpoint":"complete","interruptions":[{"outcome":"resumed","pausedMs":640,"words":0},{"outcome":"yielded","words":4}]}]`)
	if _, err := b.pool.Exec(context.Background(), `UPDATE stackbone_platform.voice_calls SET answered_by = 'voicemail', answer_decision_ms = 2240
		WHERE id = 'call_hostile'`); err != nil {
		t.Fatal(err)
	}

	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls")
	p.waitFor(`document.querySelector("table.calls").dataset.rows === "50"`, "the first page of 50 calls")
	if first := p.text("table.calls tbody tr"); !strings.Contains(first, "+34600000059") {
		t.Fatalf("newest call first: %q", first)
	}
	p.click(".pager button.more")
	p.waitFor(`document.querySelector("table.calls").dataset.rows === "61"`, "every call after Load more")
	var ids []string
	p.js(`[...document.querySelectorAll("table.calls tbody tr")].map(r => r.dataset.id)`, &ids)
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	if len(seen) != 61 || ids[60] != "call_hostile" {
		t.Fatalf("pages overlap or skip: %d distinct, last %s", len(seen), ids[len(ids)-1])
	}

	p.set("#call-filters input[name=number]", "+34600111222")
	p.js(`document.getElementById("call-filters").requestSubmit()`)
	p.waitFor(`location.hash.includes("number=%2B34600111222") && document.getElementById("root").dataset.state === "ready" &&
		document.querySelector("table.calls").dataset.rows === "1"`, "the call to +34600111222 alone")
	p.click("table.calls tbody tr td")
	p.waitFor(`document.querySelectorAll("#heard li").length === 2`, "the heard transcript")
	if got := p.text("#heard"); !strings.Contains(got, "<script>window.pwned=1</script> call me back") {
		t.Fatalf("heard transcript %q", got)
	}
	var pwned any
	p.js(`window.pwned`, &pwned)
	if pwned != nil {
		t.Fatal("the caller's words ran as script")
	}
	if got := p.text("#answered-by"); got != "a voicemail greeting (known after 2.2 s)" {
		t.Fatalf("answered by %q", got)
	}
	if got := p.text("#memory-report"); !strings.Contains(got, "save failed: memory_model_failed") || !strings.Contains(got, "2 facts, 1 call") || strings.Contains(got, "1 calls") ||
		!strings.Contains(got, "phoneNumber = +34600111222") {
		t.Fatalf("memory report %q", got)
	}
	var widths []string
	p.js(`[...document.querySelectorAll("#latency .bar span")].map(s => s.style.width)`, &widths)
	if strings.Join(widths, " ") != "32.26% 12.9% 43.01% 9.68%" {
		t.Fatalf("latency segments %v", widths)
	}
	// Each turn says how the caller's turn ended and what the caller's
	// sound over the agent did.
	if got := p.text("#latency tr[data-turn='1']"); !strings.Contains(got, "ended by a question") ||
		!strings.Contains(got, "paused 640 ms, resumed") || !strings.Contains(got, "yielded to the caller") {
		t.Fatalf("turn row %q", got)
	}
}

// A call in progress updates by itself: the heard transcript grows and,
// once the call ends, the memory report says what was saved, without a
// reload.
func TestCallDetailUpdatesLive(t *testing.T) {
	b := newBox(t)
	_, err := b.pool.Exec(context.Background(), `INSERT INTO stackbone_platform.voice_calls
		(id, direction, agent_id, phone_number, status, started_at, answered_at, transcript, memory)
		VALUES ('call_live', 'inbound', 'receptionist', '+34600111222', 'active', now(), now(),
		'[{"turn":1,"role":"user","text":"Hello?","at":"2026-11-30T10:00:00Z"}]', '{"read":true,"save":true}')`)
	if err != nil {
		t.Fatal(err)
	}
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls/call_live")
	p.waitFor(`document.querySelectorAll("#heard li.msg").length === 1`, "the first heard line")
	if got := p.text("#saved"); got != "saves when the call ends" {
		t.Fatalf("memory while active: %q", got)
	}
	_, err = b.pool.Exec(context.Background(), `UPDATE stackbone_platform.voice_calls SET
		transcript = transcript || '[{"turn":1,"role":"assistant","text":"Hi, how can I help?","at":"2026-11-30T10:00:02Z"}]'
		WHERE id = 'call_live'`)
	if err != nil {
		t.Fatal(err)
	}
	p.waitFor(`document.querySelectorAll("#heard li.msg").length === 2`, "the agent's line to appear by itself")
	_, err = b.pool.Exec(context.Background(), `UPDATE stackbone_platform.voice_calls SET status = 'ended', ended_at = now(),
		outcome = 'caller_hangup', duration_seconds = 12, memory = '{"read":true,"save":true,"saved":true}' WHERE id = 'call_live'`)
	if err != nil {
		t.Fatal(err)
	}
	p.waitFor(`document.getElementById("main").dataset.callStatus === "ended" && document.getElementById("saved").textContent === "saved"`, "the end and the save, by themselves")
}
