package voice

// autoVoicing is the energy detector on a quiet line and the Silero
// detector on a noisy one (VADAuto, the default). Energy is right and
// nearly free where speech stands well clear of the line's noise; under
// noise within about 20 dB of the caller's voice it hears a sentence as
// fragments (a cut-off) or noise as speech. So the energy detector always
// runs and tracks the line's noise floor, and once that floor has stayed
// above autoNoisyFloorDB for a second, the Silero model starts on the
// line's frames and, after autoWarmFrames of them, decides instead, for
// the rest of the call. Quiet calls spend nothing on the model.
//
// A caller who talks for two seconds without a pause lifts the energy
// detector's floor (its quietest tenth of frames are then speech), but
// not for a second more, while a noisy line holds it up. And the floor is
// watched in speech too: on a noisy line the energy detector may never
// see the end of an utterance.
type autoVoicing struct {
	e      energyVoicing
	s      *sileroVoicing // once the line turned noisy
	rate   int
	start  float64
	end    float64
	loud   int  // frames in a row the floor was above autoNoisyFloorDB
	warm   int  // frames the model has taken
	silero bool // the model can run at rate
}

const (
	// autoNoisyFloorDB is the noise floor (dBFS) from which a line is
	// noisy: a caller at a usual -20 dBFS is then less than 22 dB above
	// it, where the energy detector starts to break sentences up.
	autoNoisyFloorDB = -42
	// autoNoisyFrames is how long (a second) the floor stays above
	// autoNoisyFloorDB before the line is noisy.
	autoNoisyFrames = 50
	// autoWarmFrames is how long (200 ms) the model listens before it
	// decides: its recurrent state starts from nothing.
	autoWarmFrames = 10
)

func newAutoVoicing(cfg VADConfig, rate int) *autoVoicing {
	return &autoVoicing{
		e:      energyVoicing{margin: cfg.MarginDB, minLevel: cfg.MinLevelDB, floor: -60},
		rate:   rate,
		start:  cfg.SpeechStart,
		end:    cfg.SpeechEnd,
		silero: sileroRate(rate),
	}
}

func (a *autoVoicing) voiced(pcm []int16, lvl float64, speaking bool) bool {
	voiced := a.e.voiced(pcm, lvl, speaking)
	if a.s == nil && a.silero && a.noisy() {
		// The rate was checked, so the model starts.
		a.s, _ = newSileroVoicing(a.rate, a.start, a.end)
	}
	if a.s == nil {
		return voiced
	}
	byModel := a.s.voiced(pcm, lvl, speaking)
	if a.warm < autoWarmFrames {
		a.warm++
		return voiced
	}
	return byModel
}

// noisy follows the floor the energy detector keeps and reports whether
// it stayed loud for autoNoisyFrames.
func (a *autoVoicing) noisy() bool {
	if a.e.floor > autoNoisyFloorDB {
		a.loud++
	} else {
		a.loud = 0
	}
	return a.loud >= autoNoisyFrames
}

func (a *autoVoicing) heard(lvl float64, voiced bool) bool {
	if a.modelOn() {
		return a.s.heard(lvl, voiced)
	}
	return a.e.heard(lvl, voiced)
}

// modelOn reports whether the line turned noisy and the model decides.
func (a *autoVoicing) modelOn() bool { return a.s != nil && a.warm >= autoWarmFrames }
