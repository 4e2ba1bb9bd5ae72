package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/postgres/notify"
	"github.com/stackbone/box/postgres/pgtest"
)

// Two boxes share one database: each serves the effective agent from its
// cache (a row written behind its back, with no notification, is not
// read on the next lookup), and a change saved by one box reaches the
// other through the notification. The config's agents are never changed.
func TestChainOverridesAreCachedAndReachEveryBox(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pool := pgtest.Pool(t)
	agents := map[string]config.Agent{"support": {Model: config.ModelChain{"openai/chat"}}}
	cfg := agent.ChainSettingsConfig{Pool: pool, Agents: agents, Providers: []string{"openai", "backup"}, Logger: pgtest.Logger(t)}
	one, other := agent.NewChainSettings(cfg), agent.NewChainSettings(cfg)
	l := notify.New(pool, pgtest.Logger(t))
	var listening atomic.Bool
	l.Subscribe("probe", func(string) { listening.Store(true) }) // called once the listener is connected
	l.Subscribe(agent.NotifyChains, other.Invalidate)
	go l.Run(ctx)
	poll.Until(t, "the listener", 10*time.Second, listening.Load)

	chainOf := func(s *agent.ChainSettings) string {
		t.Helper()
		ag, err := s.Agent(ctx, "support")
		if err != nil {
			t.Fatal(err)
		}
		stt := ""
		if ag.Voice != nil {
			stt = strings.Join(ag.Voice.STT, ",")
		}
		return strings.Join(ag.Model, ",") + "|" + stt
	}
	if got := chainOf(other); got != "openai/chat|" {
		t.Fatalf("before any override: %s", got)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.agent_model_chains (agent_id, model, updated_by)
		VALUES ('support', '{backup/unseen}', 'test')`); err != nil {
		t.Fatal(err)
	}
	if got := chainOf(other); got != "openai/chat|" {
		t.Fatalf("a cached lookup read the database: %s", got)
	}
	v, err := one.Put(ctx, "key:ops", "support", agent.ChainsPatch{Model: []string{"backup/chat", "openai/chat"}, STT: []string{"backup/whisper-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Origins.Model != agent.OriginStudio || v.Origins.STT != agent.OriginStudio || v.Origins.TTS != agent.OriginDefault {
		t.Fatalf("origins after the save: %+v", v.Origins)
	}
	if got := chainOf(one); got != "backup/chat,openai/chat|backup/whisper-1" {
		t.Fatalf("the box that saved sees %s", got)
	}
	poll.Until(t, "the other box to see the change", 10*time.Second, func() bool {
		return chainOf(other) == "backup/chat,openai/chat|backup/whisper-1"
	})
	if ag := agents["support"]; strings.Join(ag.Model, ",") != "openai/chat" || ag.Voice != nil {
		t.Fatalf("the config's agent changed: %+v", ag)
	}

	if _, err := one.Reset(ctx, "key:ops", "support", agent.ChainModel); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the other box to see the reset", 10*time.Second, func() bool {
		return chainOf(other) == "openai/chat|backup/whisper-1"
	})
	v, err = one.Reset(ctx, "key:ops", "support", agent.ChainSTT)
	if err != nil || v.Origins.STT != agent.OriginDefault || v.UpdatedBy != nil {
		t.Fatalf("after the last reset: %+v %v", v, err)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.agent_model_chains`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows left with no override (%v)", rows, err)
	}
	if _, err := one.Agent(ctx, "nobody"); !errors.Is(err, agent.ErrUnknownAgent) {
		t.Fatalf("an unknown agent: %v", err)
	}
}

// An override saved while a provider was configured outlives it only as
// far as it can: a box whose config no longer has the provider leaves its
// entries out, and uses the config's chain when none is left.
func TestChainOverridesSkipProvidersNoLongerConfigured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	agents := map[string]config.Agent{"support": {Model: config.ModelChain{"openai/chat"}}}
	before := agent.NewChainSettings(agent.ChainSettingsConfig{Pool: pool, Agents: agents, Providers: []string{"openai", "backup"}, Logger: pgtest.Logger(t)})
	if _, err := before.Put(ctx, "key:ops", "support", agent.ChainsPatch{Model: []string{"backup/chat", "openai/chat"},
		STT: []string{"backup/whisper-1"}, TTS: []string{"backup/tts-1", "espeak"}}); err != nil {
		t.Fatal(err)
	}
	after := agent.NewChainSettings(agent.ChainSettingsConfig{Pool: pool, Agents: agents, Providers: []string{"openai"}, Logger: pgtest.Logger(t)})
	ag, err := after.Agent(ctx, "support")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ag.Model, ",") + "|" + strings.Join(ag.Voice.STT, ",") + "|" + strings.Join(ag.Voice.TTS, ","); got != "openai/chat||espeak" {
		t.Fatalf("chains in force %s", got)
	}
}
