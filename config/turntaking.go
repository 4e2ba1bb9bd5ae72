package config

// TurnTakingProblems checks an agent's turn-taking settings (voice.vad,
// voice.endpointing, voice.turnDetection, voice.eagerness, the endpoint
// delays and voice.interruption) by the rules Load applies, for settings
// changed after the file was loaded (Studio's overrides). The rest of the
// agent is checked as well, so a caller passes an agent whose other
// fields came from a loaded config. Each problem names the agent and the
// setting ("agent support: voice.vad ..."); none: nil.
func TurnTakingProblems(name string, a Agent) []string {
	return append(validateSTT(name, a.Voice), validateToolLimits(name, a)...)
}
