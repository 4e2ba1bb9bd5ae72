// Package silero runs the Silero VAD v5 voice-activity model in pure Go,
// at 8 and 16 kHz, with its weights embedded (see README.md for where they
// come from and how they were converted).
//
// A Model follows one audio stream: each call to Prob takes the next
// window (256 samples at 8 kHz, 512 at 16 kHz, 32 ms) and returns the
// probability that it holds speech. A window costs no allocation and well
// under a millisecond, so a model per call adds about 1 % of one core to
// it; the 2 MB of weights are shared by every model.
//
//	m, err := silero.New(8000)
//	if err != nil {
//		return err
//	}
//	for window := range windows { // []float32 of m.WindowSize() samples
//		if m.Prob(window) >= 0.5 {
//			// speech
//		}
//	}
package silero
