package voice

// autoVoicing is the energy detector on a quiet line and the Silero
// detector on a noisy one (VADAuto, the default). Energy is right and
// nearly free where speech stands well clear of the line's noise; under
// noise within about 20 dB of the caller's voice it hears a sentence as
// fragments (a cut-off) or noise as speech. So the energy detector always
// runs and tracks the line's noise floor, and once that floor has stayed
// above autoNoisyFloorDB for autoNoisyFrames the Silero model decides
// instead, for the rest of the call.
//
// The model also runs through the call's first autoProbeFrames while the
// floor is near noisy, so that on a line noisy from the start it decides
// warm (its recurrent state and its level gate know the line) as soon as
// the floor says so; a quiet line never feeds it, and stops it then. A line that turns noisy
// later starts it again, and it decides after autoWarmFrames.
//
// A caller who talks for a second without a pause lifts the energy
// detector's floor (its quietest tenth of frames are then speech), but
// not for long, while a noisy line holds it up. And the floor is watched
// in speech too: on a noisy line the energy detector may never see the end
// of an utterance.
type autoVoicing struct {
	e      energyVoicing
	s      *sileroVoicing // while probing, and once the line turned noisy
	rate   int
	start  float64
	end    float64
	frames int    // frames taken
	loud   int    // frames in a row the floor was above autoNoisyFloorDB
	ran    int    // frames the model has taken since it (re)started
	recent uint16 // the model's last 16 decisions, the latest in bit 0
	on     bool   // the model decides
	took   bool   // it decided first with the frame last taken
	silero bool   // the model can run at rate
}

const (
	// autoNoisyFloorDB is the noise floor (dBFS) from which a line is
	// noisy: a caller at a usual -20 dBFS is then less than 22 dB above
	// it, where the energy detector starts to break sentences up.
	autoNoisyFloorDB = -42
	// autoNoisyFrames is how long (500 ms) the floor stays above
	// autoNoisyFloorDB before the line is noisy, counted once a second of
	// the line is known.
	autoNoisyFrames = 25
	// autoProbeFrames is how long (2 s) the model runs from the call's
	// start whatever the line.
	autoProbeFrames = 100
	// autoProbeBelowDB: the probe feeds the model only while the floor
	// is within this of autoNoisyFloorDB, so a quiet line costs nothing.
	autoProbeBelowDB = 8
	// autoWarmFrames is how long (200 ms) the model listens before it
	// decides when it starts later: its recurrent state starts from
	// nothing.
	autoWarmFrames = 10
)

func newAutoVoicing(cfg VADConfig, rate int) *autoVoicing {
	a := &autoVoicing{
		e:      energyVoicing{margin: cfg.MarginDB, minLevel: cfg.MinLevelDB, floor: -60},
		rate:   rate,
		start:  cfg.SpeechStart,
		end:    cfg.SpeechEnd,
		silero: sileroRate(rate),
	}
	a.startModel()
	return a
}

// startModel starts the model (the rate was checked, so it starts).
func (a *autoVoicing) startModel() {
	if a.silero {
		a.s, _ = newSileroVoicing(a.rate, a.start, a.end)
		a.ran, a.recent = 0, 0
	}
}

func (a *autoVoicing) voiced(pcm []int16, lvl float64, speaking bool) bool {
	voiced := a.e.voiced(pcm, lvl, speaking)
	a.frames++
	if a.e.floor > autoNoisyFloorDB && a.frames > floorWindow/2 {
		a.loud++
	} else {
		a.loud = 0
	}
	noisy := a.loud >= autoNoisyFrames
	switch {
	case a.s == nil && noisy:
		a.startModel()
	case a.s != nil && !a.on && !noisy && a.frames >= autoProbeFrames && a.loud == 0:
		a.s = nil // a quiet line: the probe ends
	}
	a.took = false
	if a.s == nil || (!a.on && a.e.floor <= autoNoisyFloorDB-autoProbeBelowDB) {
		// No model, or a probe on a line well under noisy: the model
		// would only cost.
		return voiced
	}
	byModel := a.s.voiced(pcm, lvl, speaking)
	a.ran++
	a.recent <<= 1
	if byModel {
		a.recent |= 1
	}
	if !a.on && noisy && a.ran >= autoWarmFrames {
		a.on, a.took = true, true
	}
	if a.on {
		return byModel
	}
	return voiced
}

// tookOver reports whether the model, warm, decided its first frame with
// the last, and heard no speech in the frames before (autoWarmFrames): an
// utterance the energy detector has in progress then is the line's noise
// (brown noise drifts past its floor as the call starts), and is let go
// of at once rather than held open while the model counts out its silence.
func (a *autoVoicing) tookOver() bool {
	// A model started from nothing a moment ago may not hear the speech
	// of a caller already talking: only a warm one judges.
	return a.took && a.ran >= autoNoisyFrames && a.recent&(1<<autoWarmFrames-1) == 0
}

func (a *autoVoicing) heard(lvl float64, voiced bool) bool {
	if a.on {
		return a.s.heard(lvl, voiced)
	}
	return a.e.heard(lvl, voiced)
}

// modelOn reports whether the line turned noisy and the model decides.
func (a *autoVoicing) modelOn() bool { return a.on }
