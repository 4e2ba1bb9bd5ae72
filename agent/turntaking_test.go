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

func ptr[T any](v T) *T { return &v }

// turnAgents: support sets some turn-taking in its config, plain none;
// live streams its speech-to-text, so it may leave turns to the provider.
func turnAgents() map[string]config.Agent {
	return map[string]config.Agent{
		"support": {Model: config.ModelChain{"openai/chat"}, Voice: &config.AgentVoice{VAD: config.VADSilero,
			MinEndpointDelay: 300 * time.Millisecond, Interruption: &config.Interruption{MinWords: 3, ResumeAfter: 2 * time.Second}}},
		"plain": {Model: config.ModelChain{"openai/chat"}},
		"live":  {Model: config.ModelChain{"openai/chat"}, Voice: &config.AgentVoice{STTMode: "realtime"}},
	}
}

// Overrides replace the config's settings one by one in the agent a call
// takes (the config's other settings stay), the origins say studio, code
// or default for each, and a reset of one setting, then of all, goes back
// to the config. A save on one box reaches another through the
// notification. The config's agents are never changed.
func TestTurnTakingOverridesResolveOverTheConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pool := pgtest.Pool(t)
	agents := turnAgents()
	resolved := func(ag config.Agent) agent.TurnTaking {
		// What a call would use, in short: the minimum delay and words.
		tt := agent.TurnTaking{MinEndpointDelayMs: 200, MinWords: 2, VAD: "energy"}
		if v := ag.Voice; v != nil {
			if v.MinEndpointDelay > 0 {
				tt.MinEndpointDelayMs = v.MinEndpointDelay.Milliseconds()
			}
			if v.VAD != "" {
				tt.VAD = v.VAD
			}
			if v.Interruption != nil && v.Interruption.MinWords > 0 {
				tt.MinWords = int64(v.Interruption.MinWords)
			}
		}
		return tt
	}
	cfg := agent.ChainSettingsConfig{Pool: pool, Agents: agents, Providers: []string{"openai"}, TurnTaking: resolved, Logger: pgtest.Logger(t)}
	one, other := agent.NewChainSettings(cfg), agent.NewChainSettings(cfg)
	l := notify.New(pool, pgtest.Logger(t))
	var listening atomic.Bool
	l.Subscribe("probe", func(string) { listening.Store(true) })
	l.Subscribe(agent.NotifyChains, other.Invalidate)
	go l.Run(ctx)
	poll.Until(t, "the listener", 10*time.Second, listening.Load)

	v, err := one.TurnTaking(ctx, "support")
	if err != nil {
		t.Fatal(err)
	}
	if v.Origins.VAD != agent.OriginCode || v.Origins.MinWords != agent.OriginCode || v.Origins.EndpointingMode != agent.OriginDefault ||
		v.Origins.MaxEndpointDelayMs != agent.OriginDefault || v.Value.MinWords != 3 || v.Value.VAD != "silero" || v.UpdatedBy != nil {
		t.Fatalf("before any override: %+v", v)
	}
	v, err = one.PutTurnTaking(ctx, "key:ops", "support", agent.TurnOverrides{EndpointingMode: ptr(config.EndpointingSilence),
		MinWords: ptr[int64](4), ResumeAfterMs: ptr[int64](1500), MinEndpointDelayMs: ptr[int64](250)})
	if err != nil {
		t.Fatal(err)
	}
	if v.Origins.EndpointingMode != agent.OriginStudio || v.Origins.MinWords != agent.OriginStudio || v.Origins.VAD != agent.OriginCode ||
		v.Origins.Backchannels != agent.OriginDefault || v.Value.MinWords != 4 || v.Value.MinEndpointDelayMs != 250 ||
		v.UpdatedBy == nil || *v.UpdatedBy != "key:ops" {
		t.Fatalf("after the save: %+v", v)
	}
	voiceOf := func(s *agent.ChainSettings) config.AgentVoice {
		t.Helper()
		ag, err := s.Agent(ctx, "support")
		if err != nil {
			t.Fatal(err)
		}
		return *ag.Voice
	}
	vc := voiceOf(one)
	if vc.Endpointing == nil || vc.Endpointing.Mode != "silence" || vc.Interruption.MinWords != 4 || vc.Interruption.ResumeAfter != 1500*time.Millisecond ||
		vc.MinEndpointDelay != 250*time.Millisecond || vc.VAD != "silero" {
		t.Fatalf("the agent a call takes: %+v %+v", vc, vc.Interruption)
	}
	poll.Until(t, "the other box to see the change", 10*time.Second, func() bool {
		vc := voiceOf(other)
		return vc.Endpointing != nil && vc.Endpointing.Mode == "silence" && vc.Interruption.MinWords == 4
	})
	if v := agents["support"].Voice; v.Endpointing != nil || v.Interruption.MinWords != 3 || v.MinEndpointDelay != 300*time.Millisecond {
		t.Fatalf("the config's agent changed: %+v", v)
	}
	// A second save patches: the settings it does not name stay.
	if v, err = one.PutTurnTaking(ctx, "key:ops", "support", agent.TurnOverrides{VAD: ptr("energy")}); err != nil ||
		v.Origins.VAD != agent.OriginStudio || v.Origins.MinWords != agent.OriginStudio || v.Value.VAD != "energy" {
		t.Fatalf("after a second save: %+v %v", v, err)
	}

	if v, err = one.ResetTurnTaking(ctx, "key:ops", "support", agent.TurnMinWords); err != nil ||
		v.Origins.MinWords != agent.OriginCode || v.Value.MinWords != 3 || v.Origins.EndpointingMode != agent.OriginStudio {
		t.Fatalf("after resetting minWords: %+v %v", v, err)
	}
	poll.Until(t, "the other box to see the reset", 10*time.Second, func() bool {
		return voiceOf(other).Interruption.MinWords == 3
	})
	if _, err := one.ResetTurnTaking(ctx, "key:ops", "support", "voice"); !errors.Is(err, agent.ErrInvalidRequest) {
		t.Fatalf("a reset of no setting: %v", err)
	}
	if v, err = one.ResetTurnTaking(ctx, "key:ops", "support", ""); err != nil || v.Origins.EndpointingMode != agent.OriginDefault ||
		v.Origins.VAD != agent.OriginCode || v.UpdatedBy != nil {
		t.Fatalf("after resetting all: %+v %v", v, err)
	}
	// Resetting the settings one by one removes the row with the last.
	if _, err := one.PutTurnTaking(ctx, "key:ops", "plain", agent.TurnOverrides{MinWords: ptr[int64](5), VAD: ptr("silero")}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{agent.TurnMinWords, agent.TurnVAD} {
		if _, err := one.ResetTurnTaking(ctx, "key:ops", "plain", f); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.agent_turn_taking`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows left with no override (%v)", rows, err)
	}
	if _, err := one.TurnTaking(ctx, "nobody"); !errors.Is(err, agent.ErrUnknownAgent) {
		t.Fatalf("an unknown agent: %v", err)
	}
	if _, err := one.PutTurnTaking(ctx, "key:ops", "nobody", agent.TurnOverrides{VAD: ptr("energy")}); !errors.Is(err, agent.ErrUnknownAgent) {
		t.Fatalf("a save for an unknown agent: %v", err)
	}
}

// Every setting is checked by the config's rules, with the one at fault
// named, and nothing of a refused save is kept.
func TestTurnTakingOverridesAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := agent.NewChainSettings(agent.ChainSettingsConfig{Pool: pool, Agents: turnAgents(), Providers: []string{"openai"}, Logger: pgtest.Logger(t)})
	if _, err := s.PutTurnTaking(ctx, "key:ops", "support", agent.TurnOverrides{MaxEndpointDelayMs: ptr[int64](900)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		agent string
		o     agent.TurnOverrides
		want  string
	}{
		{"support", agent.TurnOverrides{VAD: ptr("loud")}, `vad: voice.vad "loud" is not auto, energy or silero`},
		{"support", agent.TurnOverrides{EndpointingMode: ptr("eager")}, `endpointingMode: voice.endpointing.mode "eager" is not one of words, cautious, silence`},
		{"support", agent.TurnOverrides{TurnDetection: ptr("provider")}, `turnDetection: voice.turnDetection provider needs a live sttMode`},
		{"support", agent.TurnOverrides{TurnDetection: ptr("caller")}, `turnDetection: voice.turnDetection "caller" is not box or provider`},
		{"support", agent.TurnOverrides{Eagerness: ptr("eager")}, `eagerness: voice.eagerness "eager" is not one of low, medium, high, auto`},
		{"support", agent.TurnOverrides{MinEndpointDelayMs: ptr[int64](6000)}, `minEndpointDelayMs: voice.minEndpointDelay and voice.maxEndpointDelay must be 0 to 5s`},
		// Above the stored maximum (900 ms): the new setting is named.
		{"support", agent.TurnOverrides{MinEndpointDelayMs: ptr[int64](1000)}, `minEndpointDelayMs: voice.minEndpointDelay must not exceed voice.maxEndpointDelay`},
		{"support", agent.TurnOverrides{MaxEndpointDelayMs: ptr[int64](-5)}, `maxEndpointDelayMs: voice.minEndpointDelay and voice.maxEndpointDelay must be 0 to 5s`},
		{"support", agent.TurnOverrides{InterruptionMode: ptr("never")}, `interruptionMode: voice.interruption.mode must be words or immediate`},
		{"support", agent.TurnOverrides{MinWords: ptr[int64](21)}, `minWords: voice.interruption.minWords must be 1 to 20`},
		{"support", agent.TurnOverrides{MinWords: ptr[int64](1 << 40)}, `minWords: voice.interruption.minWords must be 1 to 20`},
		{"support", agent.TurnOverrides{MinWords: ptr[int64](0)}, `minWords: an empty or zero value is no setting`},
		{"support", agent.TurnOverrides{ResumeAfterMs: ptr[int64](11000)}, `resumeAfterMs: voice.interruption.minVoiced, resumeAfter and immediateAfter must be 0 to 10s`},
		{"support", agent.TurnOverrides{ImmediateAfterMs: ptr[int64](1 << 62)}, `immediateAfterMs: voice.interruption.minVoiced, resumeAfter and immediateAfter must be 0 to 10s`},
		{"support", agent.TurnOverrides{MinVoicedMs: ptr[int64](-1)}, `minVoicedMs: voice.interruption.minVoiced`},
		{"support", agent.TurnOverrides{Backchannels: []string{"mm", " "}}, `backchannels: voice.interruption.backchannels: " " must be 1 to 40 characters`},
		{"support", agent.TurnOverrides{Backchannels: []string{}}, `backchannels: an empty or zero value is no setting`},
		{"support", agent.TurnOverrides{VAD: ptr("")}, `vad: an empty or zero value is no setting`},
		{"support", agent.TurnOverrides{}, `nothing to save`},
		// Two at fault, one good: each named, the good one not saved.
		{"support", agent.TurnOverrides{VAD: ptr("loud"), MinWords: ptr[int64](40), Eagerness: ptr("low")}, `vad: voice.vad "loud"`},
	} {
		_, err := s.PutTurnTaking(ctx, "key:ops", tc.agent, tc.o)
		if !errors.Is(err, agent.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want it to say %s", tc.o, err, tc.want)
		}
	}
	v, err := s.TurnTaking(ctx, "support")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fieldsOf(v.Origins), ","); got != "maxEndpointDelayMs" {
		t.Fatalf("refused saves were kept: studio sets %s", got)
	}
	// A live agent may leave its turns to the provider.
	if v, err := s.PutTurnTaking(ctx, "key:ops", "live", agent.TurnOverrides{TurnDetection: ptr("provider"), Eagerness: ptr("high")}); err != nil ||
		v.Origins.TurnDetection != agent.OriginStudio {
		t.Fatalf("turnDetection provider on a live agent: %+v %v", v, err)
	}
}

// An override the config's rules no longer allow (the config changed
// since it was saved: sttMode is not live any more) is left out: the agent
// a call takes has the config's settings, and the origins say so.
func TestTurnTakingOverridesTheConfigNoLongerAllowsAreLeftOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	before := agent.NewChainSettings(agent.ChainSettingsConfig{Pool: pool, Agents: turnAgents(), Logger: pgtest.Logger(t)})
	if _, err := before.PutTurnTaking(ctx, "key:ops", "live", agent.TurnOverrides{TurnDetection: ptr("provider")}); err != nil {
		t.Fatal(err)
	}
	agents := turnAgents()
	agents["live"] = config.Agent{Model: config.ModelChain{"openai/chat"}}
	after := agent.NewChainSettings(agent.ChainSettingsConfig{Pool: pool, Agents: agents, Logger: pgtest.Logger(t)})
	ag, err := after.Agent(ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	if ag.Voice != nil {
		t.Fatalf("the agent a call takes: %+v", ag.Voice)
	}
	if v, err := after.TurnTaking(ctx, "live"); err != nil || v.Origins.TurnDetection != agent.OriginDefault {
		t.Fatalf("the origins: %+v %v", v, err)
	}
}

// fieldsOf are the settings whose origin is studio.
func fieldsOf(o agent.TurnOrigins) []string {
	var out []string
	for name, origin := range map[string]string{"vad": o.VAD, "endpointingMode": o.EndpointingMode, "turnDetection": o.TurnDetection,
		"eagerness": o.Eagerness, "minEndpointDelayMs": o.MinEndpointDelayMs, "maxEndpointDelayMs": o.MaxEndpointDelayMs,
		"interruptionMode": o.InterruptionMode, "minWords": o.MinWords, "minVoicedMs": o.MinVoicedMs, "resumeAfterMs": o.ResumeAfterMs,
		"immediateAfterMs": o.ImmediateAfterMs, "backchannels": o.Backchannels} {
		if origin == agent.OriginStudio {
			out = append(out, name)
		}
	}
	return out
}
