package studio_test

import (
	"context"
	"net"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
)

// The Agents screen shows each agent's chains in the order tried, each
// entry with the circuit of its provider's endpoint: after a text turn
// whose primary model refused the connection (its circuit opens at the
// first failure), the model chain shows the primary open and the backup
// that answered closed, while the speech chains, on endpoints that did not
// fail, show closed; the open circuit's title names its latest failure.
func TestAgentChainsShowTheirCircuits(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String() + "/v1"
	l.Close()
	b := newBox(t, boxtest.Tune(func(cfg *config.Config) {
		cfg.Providers["gone"] = config.Provider{BaseURL: gone, Circuit: config.Circuit{Failures: 1}}
		a := cfg.Agents["receptionist"]
		a.Model = config.ModelChain{"gone/chat", "openai/chat"}
		cfg.Agents["receptionist"] = a
	}))
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: "We open at nine."}
	})
	res, err := b.rt.Turn(context.Background(), agent.TurnRequest{Agent: "receptionist",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "When are you open?"}}}, func(agent.Event) error { return nil })
	if err != nil || res.Model != "openai/chat" {
		t.Fatalf("the turn: %v, served by %s", err, res.Model)
	}

	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/agents")
	p.waitFor(`!!document.querySelector('#agent-receptionist [data-chain=model] ol.chain li[data-circuit]')`, "the receptionist's chains")
	var model, stt, tts []string
	entries := func(chain string, out *[]string) {
		p.js(`[...document.querySelectorAll("#agent-receptionist [data-chain=`+chain+`] ol.chain li")].map(li => li.querySelector("code").textContent + " " + li.dataset.circuit)`, out)
	}
	entries("model", &model)
	entries("stt", &stt)
	entries("tts", &tts)
	if strings.Join(model, ",") != "gone/chat open,openai/chat closed" || strings.Join(stt, ",") != "openai/whisper-1 closed" ||
		strings.Join(tts, ",") != "openai/tts-1 closed" {
		t.Fatalf("the chains shown: model %q, stt %q, tts %q", model, stt, tts)
	}
	var title, badge string
	p.js(`document.querySelector("#agent-receptionist [data-chain=model] ol.chain li .badge").title`, &title)
	p.js(`document.querySelector("#agent-receptionist [data-chain=model] ol.chain li .badge").textContent`, &badge)
	if badge != "open" || !strings.Contains(title, "gone chat: circuit open; latest failure") {
		t.Fatalf("the open circuit's badge %q, title %q", badge, title)
	}
}
