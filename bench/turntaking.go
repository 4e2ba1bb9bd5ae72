package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/voice"
)

// TurnTakingConfig sets up the turn-taking run.
type TurnTakingConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	// Required.
	AdminURL string
	// Transports (sip, room), VADs (energy, silero) and endpointing modes
	// (words, cautious, silence) to run, each combination an agent of its
	// own whose calls run side by side (default: both transports, both
	// VADs, words and cautious).
	Transports, VADs, Modes []string
	// Classes limits the behaviours to these classes (default all).
	Classes []string
	// Scheduling is the box's media.scheduling.
	Scheduling string
	Logger     *slog.Logger
}

// TurnTakingRow is one behaviour class under one transport, VAD and
// endpointing mode.
type TurnTakingRow struct {
	Transport, VAD, Mode, Class string
	// Behaviours run; Turns the caller's turns among them.
	Behaviours, Turns int
	// FalseCutOffs: the agent answered before the caller finished a turn
	// (heard on the caller's side, or a fragment committed as the turn).
	// Stuck: no answer within 5 s of the caller's last word.
	FalseCutOffs, Stuck int
	// Overlaps said over the agent: backchannels and sounds (Ignorable)
	// and barge-ins; FalseInterruptions: an ignorable one cut the answer
	// or became a turn; MissedBargeIns: a barge-in that did not stop the
	// agent for good or was not taken as the caller's turn.
	Ignorable, FalseInterruptions, BargeIns, MissedBargeIns int
	// Yield: from the barge-in's first sound to the last agent audio the
	// caller heard before the agent went quiet for it. FirstAudio: from
	// the caller's last word to the first agent audio (turns not cut off).
	// Decided: the box's yield decision, as the caller's voiced time
	// past the barge-in's first word.
	Yield, Decided, FirstAudio []time.Duration
	// Ends counts the turns' recorded end reasons.
	Ends map[string]int
}

// TurnTakingReport is the run's figures.
type TurnTakingReport struct {
	Setup []string
	Rows  []TurnTakingRow
}

// ttSlot is one agent of the run: a transport, a VAD and a mode, with a
// scripted provider of its own, and the words its current caller said
// when (the transcriber hears by that timeline).
type ttSlot struct {
	transport, vad, mode string
	agent, number        string
	model                *providertest.Server

	log *slog.Logger

	mu    sync.Mutex
	words []ttTimed
	cur   *ttBehaviour
}

// name is the current behaviour's.
func (s *ttSlot) name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return ""
	}
	return s.cur.Name
}

// ttTimed is a word the caller said and when it was sent.
type ttTimed struct {
	text       string
	start, end time.Time
}

// heard is what a transcriber makes of audio that ends now: the words
// said inside it. The audio's end is now (the box sends it as it has it,
// the speculation's silence included), its start its length before.
func (s *ttSlot) heard(wav []byte) string {
	now := time.Now()
	from := now.Add(-time.Duration(wavSeconds(wav)*float64(time.Second)) - 150*time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, w := range s.words {
		// A word's end is where its rendering fell below a quiet line's
		// level: its last tens of ms may still be on the way.
		if !w.start.Before(from) && !w.end.After(now.Add(30*time.Millisecond)) {
			out = append(out, w.text)
		}
	}
	return strings.Join(out, " ")
}

// said records words of a for audio whose first sample goes out at t0.
func (s *ttSlot) said(a ttAudio, t0 time.Time) {
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second / 8000) }
	s.mu.Lock()
	for _, w := range a.words {
		s.words = append(s.words, ttTimed{text: w.text, start: at(w.start), end: at(w.end)})
	}
	s.mu.Unlock()
}

// The agent's answers: long enough to talk over (about 6 s of the
// scripted voice) after the question the overlap behaviours ask, short
// otherwise.
const (
	ttLongAnswer  = "Our opening hours are nine to five on weekdays. On Saturdays we open at ten and close at two. On Sundays we are closed all day."
	ttShortAnswer = "Sure, I can help with that."
	ttNextAnswer  = "Of course."
)

// ttRendered is a behaviour's audio.
type ttRendered struct {
	turn, overlap, follow ttAudio
}

// TurnTaking plays scripted caller behaviours (espeak-ng speech with
// pauses, hesitations, backchannels, sounds, barge-ins and line noise)
// into real calls, SIP (a diago caller, G.711) and a browser room (a Go
// WebRTC caller), to agents that differ only in their VAD and
// endpointing mode, side by side in one box, with instant scripted
// providers; and measures, per behaviour class, false cut-offs, false
// interruptions, missed barge-ins, time to yield and time to first audio.
func TurnTaking(ctx context.Context, cfg TurnTakingConfig) (TurnTakingReport, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Transports) == 0 {
		cfg.Transports = []string{"sip", "room"}
	}
	if len(cfg.VADs) == 0 {
		cfg.VADs = []string{config.VADAuto, config.VADEnergy, config.VADSilero}
	}
	if len(cfg.Modes) == 0 {
		cfg.Modes = []string{config.EndpointingWords, config.EndpointingCautious}
	}
	var behaviours []ttBehaviour
	for _, b := range ttBehaviours() {
		if len(cfg.Classes) == 0 || slices.Contains(cfg.Classes, b.Class) {
			behaviours = append(behaviours, b)
		}
	}
	if len(behaviours) == 0 {
		return TurnTakingReport{}, fmt.Errorf("bench turntaking: no behaviour in classes %v (classes: %s)", cfg.Classes, strings.Join(ttClasses, ", "))
	}
	r, err := newTTRenderer(ctx)
	if err != nil {
		return TurnTakingReport{}, err
	}
	defer r.close()
	rendered := make([]ttRendered, len(behaviours))
	for i, b := range behaviours {
		x := &rendered[i]
		if x.turn, err = r.render(ctx, b.Turn); err != nil {
			return TurnTakingReport{}, err
		}
		if b.Noise != "" {
			// The line's noise for 2.5 s before the words (a noisy line
			// is noisy from the call's start, while the agent greets), and
			// more after them, under the agent's answer.
			x.turn = x.turn.shift(20000)
			x.turn.pcm = append(x.turn.pcm, make([]int16, int(ttNoiseTail/time.Millisecond)*8)...)
			x.turn.pcm = r.withNoise(x.turn.pcm, b.Noise, b.SNR, 0)
		}
		if b.Overlap != nil {
			if x.overlap, err = r.render(ctx, []ttPart{*b.Overlap}); err != nil {
				return TurnTakingReport{}, err
			}
		}
		if len(b.Follow) > 0 {
			if x.follow, err = r.render(ctx, b.Follow); err != nil {
				return TurnTakingReport{}, err
			}
		}
	}
	cfg.Logger.Info("bench turntaking: callers rendered", "behaviours", len(behaviours))

	pool, drop, err := Database(ctx, cfg.AdminURL, 0)
	if err != nil {
		return TurnTakingReport{}, err
	}
	defer drop()
	var slots []*ttSlot
	var yaml strings.Builder
	yaml.WriteString("agents:\n")
	providers := map[string]config.Provider{}
	var routes []config.Route
	for _, tr := range cfg.Transports {
		for _, vad := range cfg.VADs {
			for _, mode := range cfg.Modes {
				n := len(slots)
				s := &ttSlot{transport: tr, vad: vad, mode: mode, agent: fmt.Sprintf("tt%d", n), number: fmt.Sprint(200 + n),
					model: providertest.Start(), log: cfg.Logger}
				defer s.model.Close()
				s.model.RespondTranscripts(s.heard)
				s.model.Respond(s.answer)
				p := fmt.Sprintf("p%d", n)
				providers[p] = config.Provider{BaseURL: s.model.URL()}
				fmt.Fprintf(&yaml, "  %s:\n    model: %s/chat\n    instructions: You answer the phone for a restaurant.\n"+
					"    memory: {identityKey: phoneNumber, read: false, save: false}\n"+
					"    voice: {stt: %s/whisper-1, tts: %s/tts-1, vad: %s, endpointing: {mode: %s}}\n", s.agent, p, p, p, vad, mode)
				routes = append(routes, config.Route{Number: s.number, Agent: s.agent})
				slots = append(slots, s)
			}
		}
	}
	c, err := config.Parse([]byte(yaml.String()))
	if err != nil {
		return TurnTakingReport{}, err
	}
	c.Providers = providers
	c.SIP = config.SIP{Addr: "127.0.0.1:0", MaxCalls: 2 * len(slots),
		Trunks: config.Trunks{Inbound: []config.InboundTrunk{{Name: "bench", Sources: []string{"127.0.0.1"}, Routes: routes}}}}
	c.Rooms = config.Rooms{MaxRooms: 2 * len(slots)}
	c.Media.Scheduling = cfg.Scheduling
	served, stopBox, err := StartBox(ctx, pool, c, "bench-key", box.Options{})
	if err != nil {
		return TurnTakingReport{}, err
	}
	defer stopBox()
	gen, err := newGenerator(ctx)
	if err != nil {
		return TurnTakingReport{}, err
	}
	defer gen.close()

	rep := TurnTakingReport{Setup: []string{
		fmt.Sprintf("box and callers in one process on loopback, GOMAXPROCS=%d, load average %s; PostgreSQL %s", runtimeProcs(), loadAverage(), serverVersion(ctx, pool)),
		fmt.Sprintf("%d behaviours (espeak-ng en-us at 165 wpm, sox sounds and noise), one call each, per agent; %d agents (transport × VAD × endpointing mode) called side by side", len(behaviours), len(slots)),
		"providers answer at once (scripted, HTTP transcription): the transcriber hears the words whose audio the request covers, without a closing mark on a part cut off mid-sentence",
		"false cut-off: the agent's voice reached the caller before their last word, or a fragment was committed as the turn; stuck: no answer 5 s after the last word",
		"false interruption: a backchannel or a sound cut the answer or became a turn; missed barge-in: the agent did not stop for good, or the words were not the caller's turn",
		"stopped: the barge-in's first sound to the last agent audio heard before the agent went quiet for it (it pauses at the first sound); yield after 1st word: the caller's voiced time when the box decided to yield, less the first word; first audio: the caller's last word to the agent's first audio",
		schedulingNote(c.Media),
	}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(slots))
	for i, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows := map[string]*TurnTakingRow{}
			for j, b := range behaviours {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				row := rows[b.Class]
				if row == nil {
					row = &TurnTakingRow{Transport: s.transport, VAD: s.vad, Mode: s.mode, Class: b.Class, Ends: map[string]int{}}
					rows[b.Class] = row
				}
				caller := fmt.Sprintf("+1556%03d%04d", i, j)
				if err := s.run(ctx, served.URL, served.Key, served.Phones.Addr(), gen, served.Calls, caller, b, rendered[j], row, cfg.Logger); err != nil {
					errs[i] = fmt.Errorf("%s %s/%s/%s %q: %w", "bench turntaking:", s.transport, s.vad, s.mode, b.Name, err)
					return
				}
			}
			mu.Lock()
			for _, class := range ttClasses {
				if row := rows[class]; row != nil {
					rep.Rows = append(rep.Rows, *row)
				}
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return rep, err
	}
	slices.SortStableFunc(rep.Rows, func(a, b TurnTakingRow) int {
		if c := strings.Compare(a.Transport+a.VAD, b.Transport+b.VAD); c != 0 {
			return c
		}
		if c := slices.Index(ttClasses, a.Class) - slices.Index(ttClasses, b.Class); c != 0 {
			return c
		}
		return slices.Index(cfg.Modes, a.Mode) - slices.Index(cfg.Modes, b.Mode)
	})
	return rep, nil
}

// answer is the slot's scripted model: the first answer long when the
// behaviour talks over it, short otherwise; later ones short.
func (s *ttSlot) answer(req *openai.ChatCompletionRequest) providertest.Reply {
	s.mu.Lock()
	b := s.cur
	s.mu.Unlock()
	users := 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			users++
		}
	}
	if users == 1 && b != nil && b.Overlap != nil {
		return providertest.Reply{Content: ttLongAnswer}
	}
	if users == 1 {
		return providertest.Reply{Content: ttShortAnswer}
	}
	return providertest.Reply{Content: ttNextAnswer}
}

// ttLead is the quiet before the caller speaks, once the call is up.
const ttLead = 700 * time.Millisecond

// ttNoiseTail is how long a noisy line's noise goes on after the words.
const ttNoiseTail = 6 * time.Second

// run places one call for behaviour b and adds what it measured to row.
func (s *ttSlot) run(ctx context.Context, base, key, sipAddr string, gen *generator, mgr *voice.Manager, number string,
	b ttBehaviour, a ttRendered, row *TurnTakingRow, log *slog.Logger) error {
	s.mu.Lock()
	s.words, s.cur = nil, &b
	s.mu.Unlock()
	var caller latencyCaller
	var callID string
	var err error
	if s.transport == "sip" {
		caller, err = gen.latencyCall(ctx, sipAddr, s.number, number)
	} else {
		caller, callID, err = joinRoom(ctx, base, key, s.agent)
	}
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			caller.Close()
		}
	}()
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(ttLead); err != nil {
		return err
	}
	row.Behaviours++
	stuckBefore := row.Stuck
	t0, err := sayAt(ctx, caller, a.turn.pcm)
	if err != nil {
		return err
	}
	s.said(a.turn, t0)
	answerAt, earCut, err := s.turnOutcome(ctx, caller, a.turn.at(t0, a.turn.speechStart()), a.turn.at(t0, a.turn.speechEnd), row)
	if err != nil {
		return err
	}
	// quiet waits until the agent has been quiet for d (and d passed
	// since the caller's last sound), at most deadline.
	var callerDone time.Time
	quiet := func(d, deadline time.Duration) error {
		for until := time.Now().Add(deadline); time.Now().Before(until); {
			last := lastVoiced(caller)
			if time.Since(last) >= d && time.Since(answerAt) >= d && time.Since(callerDone) >= d {
				return nil
			}
			if err := sleep(20 * time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	}
	var ovOnset, ovEnd time.Time
	switch {
	case b.Overlap != nil && !answerAt.IsZero():
		if err := sleep(time.Until(answerAt.Add(1500 * time.Millisecond))); err != nil {
			return err
		}
		if ovOnset, err = sayAt(ctx, caller, a.overlap.pcm); err != nil {
			return err
		}
		s.said(a.overlap, ovOnset)
		ovEnd = ovOnset.Add(time.Duration(a.overlap.speechEnd) * time.Second / 8000)
		callerDone = ovEnd
		if err := quiet(1500*time.Millisecond, 15*time.Second); err != nil {
			return err
		}
	case len(b.Follow) > 0 && !answerAt.IsZero():
		// As soon as the answer ended: 150 ms after its last audio.
		if err := quiet(150*time.Millisecond, 10*time.Second); err != nil {
			return err
		}
		t1, err := sayAt(ctx, caller, a.follow.pcm)
		if err != nil {
			return err
		}
		s.said(a.follow, t1)
		_, followCut, err := s.turnOutcome(ctx, caller, t1, a.follow.at(t1, a.follow.speechEnd), row)
		if err != nil {
			return err
		}
		earCut = earCut || followCut
		if err := quiet(time.Second, 10*time.Second); err != nil {
			return err
		}
	default:
		if err := quiet(time.Second, 10*time.Second); err != nil {
			return err
		}
	}
	arrivals := arrivalsOf(caller)
	caller.Close()
	closed = true
	if callID == "" {
		calls, err := mgr.ListCalls(ctx, voice.CallFilter{Number: number, Limit: 1})
		if err != nil || len(calls) == 0 {
			return fmt.Errorf("no call from %s (%v)", number, err)
		}
		callID = calls[0].ID
	}
	rec, err := waitRecord(ctx, mgr, callID)
	if err != nil {
		return err
	}
	var users []string
	for _, e := range rec.Transcript {
		if e.Role == voice.RoleUser {
			users = append(users, e.Text)
		}
	}
	// The agent's answer is cut when an overlap made it yield (its heard
	// part may be empty: a voice without word timings is known heard by
	// the sentence).
	var overlaps []any
	cut := false
	for _, m := range rec.Metrics {
		if r, ok := m["endpoint"].(string); ok {
			row.Ends[r]++
		}
		if x, ok := m["interruptions"].([]any); ok {
			overlaps = append(overlaps, x...)
			for _, o := range x {
				if om, _ := o.(map[string]any); om["outcome"] == "yielded" {
					cut = true
				}
			}
		}
	}
	want := []string{partsText(b.Turn)}
	if len(b.Follow) > 0 {
		want = append(want, partsText(b.Follow))
	}
	if b.Kind == ttBargeIn {
		want = append(want, b.Overlap.Text)
	}
	// A fragment committed as a turn is a cut-off the ear may have missed
	// (the answer to it was cut at once by the rest of the turn).
	if b.Overlap == nil && !slices.Equal(users, want) && !earCut && row.Stuck == stuckBefore {
		log.Debug("bench turntaking: fragment", "slot", s.agent, "behaviour", b.Name, "users", users)
		row.FalseCutOffs++
	}
	switch b.Kind {
	case ttBackchannel, ttSound:
		row.Ignorable++
		if cut || len(users) > 1 {
			row.FalseInterruptions++
			log.Debug("bench turntaking: false interruption", "slot", s.agent, "behaviour", b.Name, "users", users, "cut", cut, "overlaps", overlaps)
		}
	case ttBargeIn:
		row.BargeIns++
		if !cut || len(users) < 2 || users[len(users)-1] != b.Overlap.Text {
			row.MissedBargeIns++
			log.Debug("bench turntaking: missed barge-in", "slot", s.agent, "behaviour", b.Name, "users", users, "cut", cut, "overlaps", overlaps, "transcript", rec.Transcript, "outcome", rec.Outcome)
		} else {
			var stop time.Time
			for _, x := range arrivals {
				if x.voiced && !x.at.After(ovEnd.Add(150*time.Millisecond)) {
					stop = x.at
				}
			}
			row.Yield = append(row.Yield, max(stop.Sub(ovOnset), 0))
			// The box's decision: the caller's voiced time when it yielded,
			// past the first word.
			for _, o := range overlaps {
				om, _ := o.(map[string]any)
				if v, ok := num(om["voicedMs"]); ok && om["outcome"] == "yielded" && len(a.overlap.words) > 0 {
					first := time.Duration(a.overlap.words[0].end-a.overlap.words[0].start) * time.Second / 8000
					row.Decided = append(row.Decided, max(time.Duration(v)*time.Millisecond-first, 0))
				}
			}
		}
	}
	return nil
}

// shift is a with n samples of silence before it.
func (a ttAudio) shift(n int) ttAudio {
	out := ttAudio{pcm: append(make([]int16, n), a.pcm...), speechEnd: a.speechEnd + n}
	for _, w := range a.words {
		out.words = append(out.words, ttWord{text: w.text, start: w.start + n, end: w.end + n})
	}
	return out
}

// speechStart is the first sample of the first word (0 without words).
func (a ttAudio) speechStart() int {
	if len(a.words) == 0 {
		return 0
	}
	return a.words[0].start
}

// at is when sample n of audio said from t0 goes out.
func (a ttAudio) at(t0 time.Time, n int) time.Time {
	return t0.Add(time.Duration(n) * time.Second / 8000)
}

// ttArrival is an agent packet the caller received.
type ttArrival struct {
	at     time.Time
	voiced bool
}

func arrivalsOf(c latencyCaller) []ttArrival {
	var out []ttArrival
	switch c := c.(type) {
	case *sipCaller:
		c.mu.Lock()
		for _, a := range c.arrivals {
			out = append(out, ttArrival{at: a.At, voiced: a.Voiced})
		}
		c.mu.Unlock()
	case roomCaller:
		for _, a := range c.Arrivals() {
			out = append(out, ttArrival{at: a.At, voiced: a.Voiced})
		}
	}
	return out
}

// lastVoiced is when the caller last received agent audio.
func lastVoiced(c latencyCaller) time.Time { return c.LastVoicedArrival() }

// turnOutcome waits for the answer to a turn whose words run from first
// to end: the agent's first audio after first. Before end it is a false
// cut-off (cut); after it, the time to first audio; none within 5 s of
// end, stuck. answerAt is the first audio (zero when stuck).
func (s *ttSlot) turnOutcome(ctx context.Context, c latencyCaller, first, end time.Time, row *TurnTakingRow) (answerAt time.Time, cut bool, err error) {
	row.Turns++
	for deadline := end.Add(5 * time.Second); time.Now().Before(deadline); {
		if at, ok := c.FirstVoicedAfter(first); ok {
			if at.Before(end) {
				row.FalseCutOffs++
				s.log.Debug("bench turntaking: cut off", "slot", s.agent, "behaviour", s.name(), "early", end.Sub(at))
				return at, true, nil
			}
			if time.Now().After(end) {
				row.FirstAudio = append(row.FirstAudio, at.Sub(end))
				return at, false, nil
			}
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return time.Time{}, false, ctx.Err()
		}
	}
	row.Stuck++
	s.log.Debug("bench turntaking: stuck", "slot", s.agent, "behaviour", s.name())
	return time.Time{}, false, nil
}

// Print writes the report: a table per behaviour class, then each
// agent's totals.
func (r TurnTakingReport) Print(w io.Writer) {
	fmt.Fprintln(w, "Turn-taking: scripted callers against each VAD and endpointing mode, side by side")
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transport\tvad\tmode\tclass\tbehaviours\tturns\tfalse cut-offs\tstuck\tfalse interruptions\tmissed barge-ins\tstopped p50 ms\tyield after 1st word p50 ms\tfirst audio p50 ms\tp90 ms\tturn ends\t")
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.Transport, x.VAD, x.Mode, x.Class,
			x.Behaviours, x.Turns, x.FalseCutOffs, x.Stuck, ofN(x.FalseInterruptions, x.Ignorable), ofN(x.MissedBargeIns, x.BargeIns),
			msAt(x.Yield, 50), msAt(x.Decided, 50), msAt(x.FirstAudio, 50), msAt(x.FirstAudio, 90), ends(x.Ends))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Totals per agent")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transport\tvad\tmode\tturns\tfalse cut-offs\tstuck\tfalse interruptions\tmissed barge-ins\tstopped p50 ms\tyield after 1st word p50 ms\tfirst audio, complete p50 ms\tfirst audio, all p50 ms\tp90 ms\t")
	for _, t := range r.Totals() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d (%.1f%%)\t%d\t%d of %d (%.1f%%)\t%d of %d\t%s\t%s\t%s\t%s\t%s\t\n", t.Transport, t.VAD, t.Mode, t.Turns,
			t.FalseCutOffs, 100*float64(t.FalseCutOffs)/float64(max(t.Turns, 1)), t.Stuck,
			t.FalseInterruptions, t.Ignorable, 100*float64(t.FalseInterruptions)/float64(max(t.Ignorable, 1)),
			t.MissedBargeIns, t.BargeIns, msAt(t.Yield, 50), msAt(t.Decided, 50), msAt(t.Complete, 50), msAt(t.FirstAudio, 50), msAt(t.FirstAudio, 90))
	}
	tw.Flush()
}

// TurnTakingTotal is one agent's figures over every class.
type TurnTakingTotal struct {
	TurnTakingRow
	// Complete is the time to first audio of the complete class's turns.
	Complete []time.Duration
}

// Totals sums each agent's rows.
func (r TurnTakingReport) Totals() []TurnTakingTotal {
	var out []TurnTakingTotal
	for _, x := range r.Rows {
		i := slices.IndexFunc(out, func(t TurnTakingTotal) bool {
			return t.Transport == x.Transport && t.VAD == x.VAD && t.Mode == x.Mode
		})
		if i < 0 {
			out = append(out, TurnTakingTotal{TurnTakingRow: TurnTakingRow{Transport: x.Transport, VAD: x.VAD, Mode: x.Mode}})
			i = len(out) - 1
		}
		t := &out[i]
		t.Behaviours += x.Behaviours
		t.Turns += x.Turns
		t.FalseCutOffs += x.FalseCutOffs
		t.Stuck += x.Stuck
		t.Ignorable += x.Ignorable
		t.FalseInterruptions += x.FalseInterruptions
		t.BargeIns += x.BargeIns
		t.MissedBargeIns += x.MissedBargeIns
		t.Yield = append(t.Yield, x.Yield...)
		t.Decided = append(t.Decided, x.Decided...)
		t.FirstAudio = append(t.FirstAudio, x.FirstAudio...)
		if x.Class == "complete" {
			t.Complete = append(t.Complete, x.FirstAudio...)
		}
	}
	return out
}

func ofN(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%d of %d", n, of)
}

// msAt is the nearest-rank p-th percentile of ds in ms ("-" for none).
func msAt(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.0f", ms(pct(s, p)))
}

func ends(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

// sayAt queues pcm and returns when its first sample went out: the
// transports queue and pace frames, so the time of its first voiced frame
// on the wire, less where that frame is in pcm.
func sayAt(ctx context.Context, c latencyCaller, pcm []int16) (time.Time, error) {
	first := 0
	for first+160 <= len(pcm) && voice.Level(pcm[first:first+160]) <= -40 {
		first += 160
	}
	before := c.LastVoice()
	c.Say(pcm)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if at := c.LastVoice(); at.After(before) {
			return at.Add(-time.Duration(first) * time.Second / 8000), nil
		}
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
	return time.Time{}, errors.New("the caller's audio did not go out")
}
