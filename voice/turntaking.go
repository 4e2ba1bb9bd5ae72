package voice

import (
	"slices"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
)

// TurnTakingOf returns what resolves the turn-taking a call of an agent
// uses on a box whose VAD is tuned by vad (the zero value: the defaults):
// each setting the agent's voice leaves unset is filled with the default
// a call applies, and the delays the endpointing rules derive from the
// two endpoint delays are worked out the way a call does. Studio shows it
// (agent.ChainSettingsConfig.TurnTaking).
func TurnTakingOf(vad VADConfig) func(config.Agent) agent.TurnTaking {
	return func(ag config.Agent) agent.TurnTaking {
		e, in := newEndpointing(ag, vad), newInterruption(ag)
		v := config.AgentVoice{}
		if ag.Voice != nil {
			v = *ag.Voice
		}
		ms := func(d time.Duration) int64 { return d.Milliseconds() }
		t := agent.TurnTaking{VAD: orDefault(v.VAD, orDefault(vad.Detector, VADAuto)), EndpointingMode: e.mode,
			TurnDetection: orDefault(v.TurnDetection, config.TurnDetectionBox), Eagerness: orDefault(v.Eagerness, "auto"),
			STTMode: orDefault(v.STTMode, "http"), MinEndpointDelayMs: ms(e.min), MaxEndpointDelayMs: ms(e.max),
			ClosedClauseDelayMs: ms(e.closed), SentenceDelayMs: ms(e.sentence), SilenceDelayMs: ms(e.normal),
			InterruptionMode: config.InterruptionWords, MinWords: int64(in.minWords), MinVoicedMs: ms(in.minVoiced),
			ResumeAfterMs: ms(in.resumeAfter), ImmediateAfterMs: ms(in.immediateAfter), Backchannels: slices.Clone(defaultBackchannels)}
		if in.immediate {
			t.InterruptionMode = config.InterruptionImmediate
		}
		if i := v.Interruption; i != nil && len(i.Backchannels) > 0 {
			t.Backchannels = slices.Clone(i.Backchannels)
		}
		return t
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
