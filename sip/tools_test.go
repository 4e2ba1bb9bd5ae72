package sip_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/tools/toolstest"
)

// A real softphone asks for an order; the scripted model calls the
// agent's http tool, whose service takes 2 s: the caller hears the filler
// (after 700 ms), then the answer built from the tool's result. The heard
// transcript and the call record show both, the call record shows the
// tool call with its duration, and the memory save holds what was heard.
func TestBaresipHearsTheFillerWhileAToolRuns(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	orders := toolstest.NewOrders(t)
	orders.SetDelay(2 * time.Second)
	const (
		filler = "One moment, please." // short enough to end well before the tool does
		answer = "Your order A-1001 has shipped and arrives tomorrow."
		number = "+34600333444"
	)
	agents := `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone for a shop.
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
` + orders.ToolYAML("        filler: "+filler+"\n")
	cfg := config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
		Name: "local", Sources: []string{"127.0.0.1"}, Routes: []config.Route{{Number: "*", Agent: "receptionist"}},
	}}}}
	b := startBox(t, cfg, agents, nil)
	b.model.ScriptTranscripts("Where is my order A-1001?")
	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_o", "order_status", map[string]string{"orderId": "A-1001"})}},
		providertest.Reply{Content: answer},
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Waiting for order A-1001."}],"summary":"Asked where order A-1001 is."}`},
	)
	mic := siptest.SpeechFile(t, t.TempDir(), "Where is my order A-1001?", 2.5, 10)
	ph := siptest.StartBaresip(t, number, mic, "sip:100@"+b.sip.Addr())
	c := <-b.opened
	ph.CallEnded(t, 60*time.Second)
	rec := b.ended(t, c)

	var heard []string
	for _, e := range rec.Transcript {
		heard = append(heard, e.Role+": "+e.Text)
	}
	want := []string{"assistant: Hello, this is the front desk.", "user: Where is my order A-1001?", "assistant: " + filler + " " + answer}
	if strings.Join(heard, "|") != strings.Join(want, "|") {
		t.Fatalf("heard transcript %q, want %q", heard, want)
	}
	var tools []any
	for _, m := range rec.Metrics {
		if ts, ok := m["tools"].([]any); ok {
			tools = append(tools, ts...)
		}
	}
	if len(tools) != 1 {
		t.Fatalf("call record metrics %+v, want one tool call", rec.Metrics)
	}
	tc := tools[0].(map[string]any)
	if tc["name"] != "order_status" || tc["outcome"] != "ok" || tc["durationMs"].(float64) < 2000 {
		t.Fatalf("the call record's tool call %+v, want order_status ok in 2 s or more", tc)
	}

	// The caller's recording: the greeting, the filler, then the answer,
	// each a burst of the scripted voice's 40 ms a character.
	bursts := bursts(t, ph)
	if len(bursts) < 3 {
		t.Fatalf("baresip heard %d bursts of speech %v, want the greeting, the filler and the answer", len(bursts), bursts)
	}
	n := len(bursts)
	fillerWin, answerWin := len(filler)*providertest.SpeechMsPerChar/20, len(answer)*providertest.SpeechMsPerChar/20
	if f, a := bursts[n-2], bursts[n-1]; f < fillerWin*3/4 || f > fillerWin*5/4 || a < answerWin*3/4 || a > answerWin*5/4 {
		t.Fatalf("the last two bursts were %d and %d windows of 20 ms, want the filler's %d then the answer's %d", f, a, fillerWin, answerWin)
	}

	// The memory save got what was heard: the filler and the answer.
	poll.Until(t, "the memory save", 30*time.Second, func() bool {
		r, err := b.mem.Recall(context.Background(), memory.RecallRequest{AgentID: "receptionist", UserID: number})
		return err == nil && len(r.Calls) == 1
	})
	chats := b.model.ChatRequests()
	extraction := chats[len(chats)-1].Messages
	got := extraction[len(extraction)-1].Content
	if i, j := strings.Index(got, filler), strings.Index(got, answer); i < 0 || j < i {
		t.Fatalf("the extraction did not get the filler then the answer: %q", got)
	}
}

// bursts are the runs of voiced 20 ms windows in what the phone recorded,
// split at 100 ms of silence, shorter than 200 ms left out.
func bursts(t *testing.T, p *siptest.Baresip) []int {
	t.Helper()
	pcm := p.Recording(t)
	var out []int
	run, quiet := 0, 0
	flush := func() {
		if run >= 10 {
			out = append(out, run)
		}
		run = 0
	}
	for i := 0; i+160 <= len(pcm); i += 160 {
		if rms(pcm[i:i+160]) > 500 {
			run, quiet = run+1, 0
			continue
		}
		if quiet++; quiet == 5 {
			flush()
		}
	}
	flush()
	return out
}

// toolAgents is the receptionist with the order tool of orders and a filler.
func toolAgents(orders *toolstest.Orders) string {
	return `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone for a shop.
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: false}
` + orders.ToolYAML("        timeout: 60s\n        filler: One moment, I'm checking that.\n")
}

func localTrunk() config.SIP {
	return config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
		Name: "local", Sources: []string{"127.0.0.1"}, Routes: []config.Route{{Number: "*", Agent: "receptionist"}},
	}}}}
}

// The caller talks over a slow tool: the turn and its request to the
// service are cancelled, the filler that played is kept as heard, and the
// caller's new turn is answered.
func TestBaresipTalksOverASlowTool(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	orders := toolstest.NewOrders(t)
	orders.SetDelay(time.Minute)
	b := startBox(t, localTrunk(), toolAgents(orders), nil)
	b.model.ScriptTranscripts("Where is my order A-1001?", "Never mind, thanks.")
	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_o", "order_status", map[string]string{"orderId": "A-1001"})}},
		providertest.Reply{Content: "Okay, goodbye."})
	dir := t.TempDir()
	first := siptest.SpeechFile(t, filepath.Join(dir), "Where is my order A-1001?", 2.5, 4)
	if err := os.Rename(first, filepath.Join(dir, "first.wav")); err != nil {
		t.Fatal(err)
	}
	second := siptest.SpeechFile(t, dir, "Never mind, thanks.", 0, 5)
	mic := filepath.Join(dir, "mic.wav")
	if out, err := exec.Command("sox", filepath.Join(dir, "first.wav"), second, mic).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
	ph := siptest.StartBaresip(t, "+34600555666", mic, "sip:100@"+b.sip.Addr())
	c := <-b.opened
	ph.CallEnded(t, 60*time.Second)
	rec := b.ended(t, c)
	if orders.Cancelled() != 1 {
		t.Fatalf("the service saw %d cancelled requests, want the one the caller talked over", orders.Cancelled())
	}
	var heard []string
	for _, e := range rec.Transcript {
		heard = append(heard, e.Role+": "+e.Text)
	}
	want := []string{"assistant: Hello, this is the front desk.", "user: Where is my order A-1001?", "assistant: One moment, I'm checking that.",
		"user: Never mind, thanks.", "assistant: Okay, goodbye."}
	if strings.Join(heard, "|") != strings.Join(want, "|") {
		t.Fatalf("heard transcript %q, want %q", heard, want)
	}
}

// The caller hangs up while a tool runs: the tool's request is cancelled
// and the turn's run records the call as cancelled.
func TestBaresipHangsUpDuringATool(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	orders := toolstest.NewOrders(t)
	orders.SetDelay(time.Minute)
	b := startBox(t, localTrunk(), toolAgents(orders), nil)
	b.model.ScriptTranscripts("Where is my order A-1001?")
	b.model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_o", "order_status", map[string]string{"orderId": "A-1001"})}})
	mic := siptest.SpeechFile(t, t.TempDir(), "Where is my order A-1001?", 2.5, 4)
	ph := siptest.StartBaresip(t, "+34600777888", mic, "sip:100@"+b.sip.Addr())
	c := <-b.opened
	ph.CallEnded(t, 60*time.Second)
	b.ended(t, c)
	poll.Until(t, "the tool's request to be cancelled", 10*time.Second, func() bool { return orders.Cancelled() == 1 })
	var meta string
	poll.Until(t, "the turn's run", 10*time.Second, func() bool {
		err := b.pool.QueryRow(context.Background(), `SELECT metadata::text FROM stackbone_platform.runs WHERE status = 'cancelled' AND agent_id = 'receptionist'`).Scan(&meta)
		return err == nil
	})
	if !strings.Contains(meta, `"name": "order_status"`) || !strings.Contains(meta, `"outcome": "cancelled"`) {
		t.Fatalf("the run's tool calls: %s", meta)
	}
}
