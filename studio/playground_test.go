package studio_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/provider/providertest"
)

// An operator talks to an agent in the Playground over the AG-UI wire: the
// reply streams in, the memory tool's call and result are blocks that
// unfold, the second message goes on the same thread (the model sees each
// message once), the conversation appears in Sessions with its turns, and
// New conversation starts another session. Markup in a reply is text.
func TestPlaygroundScreen(t *testing.T) {
	b := newBox(t)
	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "memory_read", map[string]string{})}},
		providertest.Reply{Content: "Order A-1001 ships <b>today</b>. Anything else?", ChunkDelay: 20 * time.Millisecond},
		providertest.Reply{Content: "You are welcome."},
		providertest.Reply{Content: "Hello again."})
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/playground")
	p.set("main select[name=agent]", "support")
	p.set("main input[name=customerId]", "crm/5")
	p.set("#composer textarea", "Where is order A-1001?")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the first run")
	if got := p.text("#chat-status"); got != "" {
		t.Fatalf("run status %q", got)
	}
	var blocks []string
	p.js(`[...document.querySelectorAll("#chat details.tool summary")].map(s => s.textContent)`, &blocks)
	if strings.Join(blocks, "|") != "tool_use memory_read|tool_result memory_read" {
		t.Fatalf("tool blocks %q", blocks)
	}
	if got := p.text("#chat"); !strings.Contains(got, "Order A-1001 ships <b>today</b>. Anything else?") {
		t.Fatalf("chat %q", got)
	}
	var bolds int
	p.js(`document.querySelectorAll("#chat b").length - document.querySelectorAll("#chat .msg > b").length`, &bolds)
	if bolds != 0 {
		t.Fatal("the reply's markup became elements")
	}
	var thread1 string
	p.js(`document.getElementById("chat").dataset.thread`, &thread1)

	p.set("#composer textarea", "Thanks!")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "2"`, "the second run")
	reqs := b.model.ChatRequests()
	last := reqs[len(reqs)-1]
	var users []string
	for _, m := range last.Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, "|") != "Where is order A-1001?|Thanks!" {
		t.Fatalf("the model saw the users' messages %q", users)
	}

	id := mustSession(t, b, "support")
	d, err := b.rt.GetSession(context.Background(), id)
	if err != nil || d.Turns != 2 || d.Transcript[0].User != "Where is order A-1001?" || d.Transcript[1].Reply != "You are welcome." {
		t.Fatalf("the playground's session: %+v %v", d, err)
	}
	p.goTo("#/sessions/" + id)
	p.waitFor(`document.querySelectorAll("#turns li.turn").length === 2`, "the session's two turns in Sessions")

	p.goTo("#/playground?agent=support")
	p.waitFor(`document.querySelectorAll("#chat .msg").length >= 3`, "the conversation kept in the tab")
	p.click("#new-conversation")
	var thread2 string
	p.js(`document.getElementById("chat").dataset.thread`, &thread2)
	if thread2 == thread1 || thread2 == "" {
		t.Fatalf("New conversation kept the thread %q", thread2)
	}
	p.set("#composer textarea", "Hi")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the new conversation's run")
	list, err := b.rt.ListSessions(context.Background(), agent.SessionFilter{Agent: "support"})
	if err != nil || len(list) != 2 {
		t.Fatalf("sessions after New conversation: %d %v", len(list), err)
	}
}

// A conversation kept over the OpenAI wire is continued in the Playground:
// a wrong key is refused with nothing sent; the right key and identity
// reopen it, show its turns, and the next message lands on the same
// session with the earlier turn in the model's context once.
func TestContinueInPlayground(t *testing.T) {
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Order A-1001 ships today."}, providertest.Reply{Content: "Tomorrow by noon."})
	b.chat("support", "customer-4711", "crm/42", "Where is order A-1001?")
	id := mustSession(t, b, "support")
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/sessions/" + id)
	p.js(`document.querySelector("details.continue").open = true`)
	p.set("#continue input[name=key]", "customer-4711")
	p.set("#continue input[name=customerId]", "crm/43")
	p.js(`document.getElementById("continue").requestSubmit()`)
	p.waitFor(`document.querySelector("#continue .error").textContent.includes("do not name this session")`, "the refusal of a wrong identity")
	requests := len(b.model.ChatRequests())

	p.set("#continue input[name=customerId]", "crm/42")
	p.js(`document.getElementById("continue").requestSubmit()`)
	p.waitFor(`location.hash === "#/playground?agent=support" && document.getElementById("root").dataset.state === "ready" &&
		document.querySelectorAll("#chat .msg").length === 2`, "the session's turn in the Playground")
	if len(b.model.ChatRequests()) != requests {
		t.Fatal("a refused or opened continuation sent something to the model")
	}
	p.set("#composer textarea", "And when does it arrive?")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the continued run")
	if got := p.text("#chat-status"); got != "" {
		t.Fatalf("run status %q", got)
	}
	reqs := b.model.ChatRequests()
	var sent []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role != "system" {
			sent = append(sent, m.Role+": "+m.Content)
		}
	}
	if strings.Join(sent, "|") != "user: Where is order A-1001?|assistant: Order A-1001 ships today.|user: And when does it arrive?" {
		t.Fatalf("the model was sent %q", sent)
	}
	d, err := b.rt.GetSession(context.Background(), id)
	if err != nil || d.Turns != 2 || d.Transcript[1].Reply != "Tomorrow by noon." {
		t.Fatalf("the continued session: %+v %v", d, err)
	}
	list, _ := b.rt.ListSessions(context.Background(), agent.SessionFilter{Agent: "support"})
	if len(list) != 1 {
		t.Fatalf("%d sessions: the continuation opened another", len(list))
	}
}

// A message the agent could not answer leaves the conversation (its text
// goes back to the composer to send again) and is not sent with the next
// one.
func TestPlaygroundFailedMessageIsNotSentAgain(t *testing.T) {
	b := newBox(t)
	b.model.Script(providertest.Reply{Status: 400, Message: "bad request"}, providertest.Reply{Content: "Ships today."})
	p := b.openAt(t, "#/playground")
	p.set("main select[name=agent]", "support")
	p.set("#composer textarea", "First try")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the failed run")
	if got := p.text("#chat-status"); got == "" {
		t.Fatal("the failure is not said")
	}
	var left struct {
		Messages []string
		Composer string
	}
	p.js(`({Messages: [...document.querySelectorAll("#chat .msg")].map(m => m.textContent), Composer: document.querySelector("#composer textarea").value})`, &left)
	if len(left.Messages) != 0 || left.Composer != "First try" {
		t.Fatalf("after the failure the conversation shows %q and the composer holds %q", left.Messages, left.Composer)
	}
	p.set("#composer textarea", "Where is my order?")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "2"`, "the second run")
	reqs := b.model.ChatRequests()
	var users []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, "|") != "Where is my order?" {
		t.Fatalf("the model was sent the users' messages %q", users)
	}
}

// The Playground shows its conversation's session key, so the session it
// made can be continued from Sessions like any other.
func TestPlaygroundSessionContinues(t *testing.T) {
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Ships today."}, providertest.Reply{Content: "By noon."})
	p := b.openAt(t, "#/playground")
	p.set("main select[name=agent]", "support")
	p.set("main input[name=customerId]", "crm/9")
	p.set("#composer textarea", "Where is my order?")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the first run")
	var key, thread string
	p.js(`(document.querySelector("#session-key input") || {}).value || ""`, &key)
	p.js(`document.getElementById("chat").dataset.thread`, &thread)
	if key == "" || key != thread {
		t.Fatalf("the Playground shows the session key %q (its thread is %q)", key, thread)
	}
	p.click("#new-conversation")
	p.goTo("#/sessions/" + mustSession(t, b, "support"))
	p.js(`document.querySelector("details.continue").open = true`)
	p.set("#continue input[name=key]", key)
	p.set("#continue input[name=customerId]", "crm/9")
	p.js(`document.getElementById("continue").requestSubmit()`)
	p.waitFor(`location.hash === "#/playground?agent=support" && document.getElementById("root").dataset.state === "ready" &&
		document.querySelectorAll("#chat .msg").length === 2`, "the Playground's session continued")
	p.set("#composer textarea", "And when?")
	p.js(`document.getElementById("composer").requestSubmit()`)
	p.waitFor(`document.getElementById("chat").dataset.runs === "1"`, "the continued run")
	d, err := b.rt.GetSession(context.Background(), mustSession(t, b, "support"))
	if err != nil || d.Turns != 2 {
		t.Fatalf("the continued session: %+v %v", d, err)
	}
}
