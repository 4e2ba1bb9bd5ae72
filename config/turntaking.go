package config

// TurnTakingProblems checks an agent's turn-taking settings (voice.vad,
// voice.endpointing, voice.turnDetection, voice.eagerness, the endpoint
// delays and voice.interruption) by the rules Load applies, for settings
// changed after the file was loaded (Studio's overrides); the speech
// chains and sttMode are checked with them, since turnDetection provider
// depends on the mode. Each problem names the agent and the setting
// ("agent support: voice.vad ..."); none: nil.
func TurnTakingProblems(name string, a Agent) []string {
	if a.Voice == nil {
		return nil
	}
	return append(validateSTT(name, a.Voice), delayProblems(name, a.Voice)...)
}
