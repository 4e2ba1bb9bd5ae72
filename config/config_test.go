package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/configs"
)

func TestDevConfigDeclaresSupport(t *testing.T) {
	c, err := config.Parse(configs.Dev)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := c.Agents["support"]
	if !ok || a.Model.Primary() == "" || a.Instructions == "" || a.Memory == nil || a.Memory.IdentityKey == "" ||
		a.Memory.Read == nil || a.Memory.Save == nil || a.Memory.Instructions == nil {
		t.Fatalf("support agent: %+v", a)
	}
}

func TestParseRefusesBadConfig(t *testing.T) {
	for name, y := range map[string]string{
		"unknown key":               "agents:\n  support:\n    modle: openai/x\n",
		"bad agent name":            "agents:\n  Support Agent:\n    model: openai/x\n",
		"model without slash":       "agents:\n  support:\n    model: gpt-4o\n",
		"chain entry without slash": "agents:\n  support:\n    model: [openai/a, gpt-4o]\n",
		"chain entry twice":         "agents:\n  support:\n    model: [openai/a, openai/a]\n",
		"model map":                 "agents:\n  support:\n    model: {a: b}\n",
		"empty instructions":        "agents:\n  support:\n    memory: {instructions: \"\"}\n",
		"long identity key":         "agents:\n  support:\n    memory: {identityKey: " + strings.Repeat("k", 101) + "}\n",
		"bad effort":                "memory: {reasoningEffort: extreme}\n",
		"bad memory model":          "memory: {model: nope}\n",
		"not yaml":                  "agents: [",
		"tiny keep-alive":           "http: {streamKeepAlive: 10ms}\n",
		"bad scheduling":            "media: {scheduling: fifo}\n",
	} {
		if _, err := config.Parse([]byte(y)); !errors.Is(err, config.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestApplyEnv(t *testing.T) {
	c, _ := config.Parse([]byte("providers:\n  local:\n    baseURL: http://127.0.0.1:9/v1\n    apiKeyEnv: LOCAL_KEY\n"))
	env := map[string]string{
		"STACKBONE_HTTP_ADDR": "127.0.0.1:5000", "STACKBONE_DATABASE_URL": "postgres://x/y",
		"OPENAI_BASE_URL": "http://127.0.0.1:8/v1", "OPENAI_API_KEY": "sk", "LOCAL_KEY": "lk",
		"STACKBONE_MEMORY_MODEL": "local/m", "STACKBONE_MEMORY_REASONING_EFFORT": "low",
	}
	if err := c.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != "127.0.0.1:5000" || c.Database.URL != "postgres://x/y" || c.Providers["openai"].BaseURL != "http://127.0.0.1:8/v1" ||
		c.Providers["openai"].APIKey != "sk" || c.Providers["local"].APIKey != "lk" || c.Memory.Model != "local/m" || c.Memory.ReasoningEffort != "low" {
		t.Fatalf("%+v", c)
	}
	empty, _ := config.Parse(nil)
	empty.ApplyEnv(func(string) string { return "" })
	if empty.HTTP.Addr != config.DefaultHTTPAddr {
		t.Fatalf("default addr %q", empty.HTTP.Addr)
	}
	bad, _ := config.Parse(nil)
	if err := bad.ApplyEnv(func(k string) string {
		if k == "STACKBONE_MEMORY_REASONING_EFFORT" {
			return "max"
		}
		return ""
	}); !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("bad env effort: %v", err)
	}
}

// The shipped configurations run calls at real-time priority; a config
// that says nothing leaves the scheduler alone; the environment overrides
// either way and refuses a value it does not know.
func TestMediaScheduling(t *testing.T) {
	dev, _ := config.Parse(configs.Dev)
	prod, err := config.Load("../configs/production.example.yaml")
	if err != nil || !dev.Media.Realtime() || !prod.Media.Realtime() {
		t.Fatalf("shipped configs: dev %+v, production %+v (%v); want realtime", dev.Media, prod.Media, err)
	}
	empty, _ := config.Parse(nil)
	if empty.Media.Realtime() {
		t.Fatal("an empty config runs calls at real-time priority")
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "STACKBONE_MEDIA_SCHEDULING" {
				return v
			}
			return ""
		}
	}
	if err := dev.ApplyEnv(env("normal")); err != nil || dev.Media.Realtime() {
		t.Fatalf("STACKBONE_MEDIA_SCHEDULING=normal: %v, %+v", err, dev.Media)
	}
	if err := empty.ApplyEnv(env("realtime")); err != nil || !empty.Media.Realtime() {
		t.Fatalf("STACKBONE_MEDIA_SCHEDULING=realtime: %v, %+v", err, empty.Media)
	}
	if err := empty.ApplyEnv(env("rt")); !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("STACKBONE_MEDIA_SCHEDULING=rt: %v, want ErrInvalid", err)
	}
}

func TestProductionExampleParses(t *testing.T) {
	if _, err := config.Load("../configs/production.example.yaml"); err != nil {
		t.Fatal(err)
	}
}

func TestVoiceSTTMode(t *testing.T) {
	for _, mode := range []string{"", "http", "realtime", "deepgram"} {
		y := "agents:\n  support:\n    voice: {stt: openai/gpt-4o-transcribe, sttMode: \"" + mode + "\"}\n"
		c, err := config.Parse([]byte(y))
		if err != nil {
			t.Fatalf("sttMode %q: %v", mode, err)
		}
		if got := c.Agents["support"].Voice.STTMode; got != mode {
			t.Fatalf("sttMode %q parsed as %q", mode, got)
		}
	}
	for name, tc := range map[string]struct{ yaml, says string }{
		"unknown mode":    {"voice: {sttMode: websocket}", `voice.sttMode "websocket" is not one of http, realtime, deepgram`},
		"mode case":       {"voice: {sttMode: Realtime}", `voice.sttMode "Realtime"`},
		"stt not a pair":  {"voice: {stt: nova-3, sttMode: deepgram}", "agent support: voice.stt:"},
		"turns over http": {"voice: {turnDetection: provider}", "voice.turnDetection provider needs a live sttMode"},
		"unknown turns":   {"voice: {sttMode: realtime, turnDetection: model}", `voice.turnDetection "model" is not box or provider`},
		"eagerness":       {"voice: {sttMode: realtime, turnDetection: provider, eagerness: eager}", `voice.eagerness "eager" is not one of low, medium, high, auto`},
	} {
		_, err := config.Parse([]byte("agents:\n  support:\n    " + tc.yaml + "\n"))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want ErrInvalid saying %q", name, err, tc.says)
		}
	}
}

func TestVoiceTurnDetection(t *testing.T) {
	c, err := config.Parse([]byte("agents:\n  support:\n    voice: {sttMode: deepgram, turnDetection: provider, eagerness: high}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Agents["support"].Voice; v.TurnDetection != config.TurnDetectionProvider || v.Eagerness != "high" {
		t.Fatalf("parsed as %q, %q", v.TurnDetection, v.Eagerness)
	}
}

func TestVoiceEndpointDelays(t *testing.T) {
	c, err := config.Parse([]byte("agents:\n  support:\n    voice: {minEndpointDelay: 300ms, maxEndpointDelay: 2s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Agents["support"].Voice; v.MinEndpointDelay != 300*time.Millisecond || v.MaxEndpointDelay != 2*time.Second {
		t.Fatalf("delays parsed as %v and %v", v.MinEndpointDelay, v.MaxEndpointDelay)
	}
	for name, y := range map[string]string{
		"negative":      "voice: {minEndpointDelay: -1s}",
		"too long":      "voice: {maxEndpointDelay: 10s}",
		"min above max": "voice: {minEndpointDelay: 900ms, maxEndpointDelay: 500ms}",
	} {
		_, err := config.Parse([]byte("agents:\n  support:\n    " + y + "\n"))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "EndpointDelay") {
			t.Errorf("%s: got %v, want ErrInvalid about the endpoint delays", name, err)
		}
	}
}
