package config

// The speech models of an agent whose voice names none.
const (
	DefaultSTT = "openai/whisper-1"
	DefaultTTS = "openai/tts-1"
)

// Espeak names the offline text-to-speech engine in a voice.tts chain.
const Espeak = "espeak"
