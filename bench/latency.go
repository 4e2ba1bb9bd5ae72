package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/companding"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/rooms/roomstest"
	"github.com/stackbone/box/voice"
)

// LatencyConfig sets up the conversation-speed run.
type LatencyConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	// Required.
	AdminURL string
	// Calls per transport and profile (default 3); each speaks every
	// utterance of the script once, one turn each.
	Calls int
	// Profiles to run, by name (default all: http, streaming, zero).
	Profiles []string
	// Scheduling is the box's media.scheduling ("realtime" as the shipped
	// configurations, or "normal"; empty: normal).
	Scheduling string
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// LatencyProfile is how fast the providers answer.
type LatencyProfile struct {
	Name string
	// Transcription is the HTTP speech-to-text answer time. Streaming,
	// when set, is the agent's voice.sttMode instead (realtime or
	// deepgram): the box's own live transcription client over the
	// protocol's WebSocket, to the scripted provider, which sends interims
	// while audio arrives and, detecting the end of speech itself, the
	// final StreamingFinal after it.
	Transcription  time.Duration
	Streaming      string
	StreamingFinal time.Duration
	// FirstToken is the model's time to its first token, SpeechFirstByte
	// the speech endpoint's to its first audio bytes.
	FirstToken, SpeechFirstByte time.Duration
}

// LatencyProfiles are issue 16's provider profiles: published medians of
// hosted providers (HTTP transcription), a streaming transcription (on
// each live protocol), and providers that answer at once.
var LatencyProfiles = []LatencyProfile{
	{Name: "http", Transcription: 360 * time.Millisecond, FirstToken: 420 * time.Millisecond, SpeechFirstByte: 140 * time.Millisecond},
	{Name: "streaming", Streaming: "realtime", StreamingFinal: 150 * time.Millisecond, FirstToken: 420 * time.Millisecond, SpeechFirstByte: 140 * time.Millisecond},
	{Name: "streaming-deepgram", Streaming: "deepgram", StreamingFinal: 150 * time.Millisecond, FirstToken: 420 * time.Millisecond, SpeechFirstByte: 140 * time.Millisecond},
	{Name: "zero"},
}

// The streaming profiles' recogniser: an interim each interimEvery of
// speech, interimLag behind the audio it covers.
const (
	interimEvery = 100 * time.Millisecond
	interimLag   = 100 * time.Millisecond
)

// LatencyRow is one transport under one profile.
type LatencyRow struct {
	Profile, Transport string
	// WireToWire is the caller's last voiced frame sent to the first voiced
	// agent packet received, per turn.
	WireToWire Figures
	// Stages are the controller's per-turn medians (ms): end of utterance
	// (the endpointing silence), the wait from the endpoint for the first
	// playable audio, and the providers' own times.
	EndOfUtterance, AudioReady, SpeechToText, FirstToken, SpeechFirstByte float64
	// Box is the controller's wire-to-wire (the last voiced caller frame
	// it took to the first agent frame it wrote) less the endpointing
	// silence and the wait for the first playable audio: the box's own
	// share after the providers answered, p50 and p95, to the millisecond
	// of the controller's metrics.
	Box Figures
	// Turns spoken, turns cut while the caller was still speaking (a
	// fragment committed as the caller's turn), turns unanswered.
	Turns, FalseEndpoints, Unanswered int
	// Preemptive turns answered by a generation started before the
	// endpoint; wasted speculative work: transcriptions and generations
	// cancelled, and their provider time.
	Preemptive, WastedTranscriptions, WastedGenerations int
	WastedMs                                            int64
}

// LatencyReport is the run's figures.
type LatencyReport struct {
	Setup []string
	Rows  []LatencyRow
}

// Print writes the report as a table.
func (r LatencyReport) Print(w io.Writer) {
	fmt.Fprintln(w, "Conversation speed: time to first agent audio after the caller stops, on the wire")
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\ttransport\tturns\tp50 ms\tp90 ms\tp99 ms\tend of utterance ms\taudio ready ms\tstt ms\tfirst token ms\ttts first byte ms\tbox p50 ms\tbox p95 ms\tfalse endpoints\tunanswered\tpreemptive\twasted stt\twasted gen\twasted ms\t")
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%d (%.1f%%)\t%d\t%d\t%d\t%d\t%d\t\n",
			x.Profile, x.Transport, x.Turns, ms(x.WireToWire.P50), ms(x.WireToWire.P90), ms(x.WireToWire.P99),
			x.EndOfUtterance, x.AudioReady, x.SpeechToText, x.FirstToken, x.SpeechFirstByte, ms(x.Box.P50), ms(x.Box.P95),
			x.FalseEndpoints, 100*float64(x.FalseEndpoints)/float64(max(x.Turns, 1)), x.Unanswered, x.Preemptive,
			x.WastedTranscriptions, x.WastedGenerations, x.WastedMs)
	}
	tw.Flush()
}

// latencyPart is a stretch of an utterance spoken without a pause, and
// what a transcriber makes of it.
type latencyPart struct {
	ms   int
	text string
}

// latencyUtterance is one caller turn: parts with pauses between them
// (mid-sentence pauses of 300-700 ms that must not end the turn).
type latencyUtterance struct {
	parts  []latencyPart
	pauses []int
}

func (u latencyUtterance) text() string {
	var out []string
	for _, p := range u.parts {
		out = append(out, p.text)
	}
	return strings.Join(out, " ")
}

// latencyScript is what each call says, in order.
var latencyScript = []latencyUtterance{
	{parts: []latencyPart{{1400, "What time do you open tomorrow?"}}},
	{parts: []latencyPart{{1000, "I would like to book a table for"}, {1200, "four people on Friday evening."}}, pauses: []int{500}},
	{parts: []latencyPart{{800, "Can you tell me"}, {1200, "whether there is parking nearby?"}}, pauses: []int{350}},
	{parts: []latencyPart{{1200, "My name is Ana Lopez, and"}, {1000, "my number is the one I am calling from."}}, pauses: []int{700}},
	{parts: []latencyPart{{1000, "I need to move my booking"}, {400, "um"}, {800, "to Saturday instead."}}, pauses: []int{300, 450}},
	{parts: []latencyPart{{1600, "Do you have a vegetarian menu for children?"}}},
}

// Each part of an utterance is spoken as a tone of its own frequency, so
// the scripted transcribers tell which parts they hear (and how much of
// each) from the audio alone, over G.711 or Opus, whether they get the
// whole utterance or a stretch of it (a provider's own endpointing cuts
// it at the pauses).
const (
	latencyBaseHz = 300
	latencyStepHz = 100
	latencyRate   = 8000
	latencyFrame  = latencyRate / 50
)

// partTone is the tone number of utterance id's part k.
func partTone(id, k int) int {
	n := 0
	for _, u := range latencyScript[:id] {
		n += len(u.parts)
	}
	return n + k
}

// pcm is the utterance as caller audio at 8 kHz: syllables of 160 ms of
// its parts' tones with 40 ms quiet gaps, the pauses as line noise.
func (u latencyUtterance) pcm(id int) []int16 {
	var out []int16
	n := 0
	for i, p := range u.parts {
		if i > 0 {
			for range u.pauses[i-1] / 20 {
				out = append(out, roomstest.Noise(latencyFrame, 30)...)
			}
		}
		hz := float64(latencyBaseHz + latencyStepHz*partTone(id, i))
		for f := 0; f < p.ms/20; f++ {
			if f%10 >= 8 {
				out = append(out, roomstest.Noise(latencyFrame, 30)...)
				continue
			}
			for j := 0; j < latencyFrame; j++ {
				out = append(out, int16(10000*math.Sin(2*math.Pi*hz*float64(n)/latencyRate)))
				n++
			}
		}
	}
	return out
}

// voicedMs is how much of a part is tone (the syllables, not their gaps).
func voicedMs(ms int) int { return ms / 20 / 10 * 8 * 20 }

// heard is what a transcriber makes of audio at rate: the text of the
// parts it covers, of the utterance it hears most of (a fragment when the
// audio stops at a pause, the rest when it starts there).
func heard(pcm []int16, rate int) string {
	tones := hearTones(pcm, rate)
	best, most := -1, 0
	for id, u := range latencyScript {
		ms := 0
		for k := range u.parts {
			ms += tones[partTone(id, k)]
		}
		if ms > most {
			best, most = id, ms
		}
	}
	if best < 0 {
		return ""
	}
	var out []string
	for k, p := range latencyScript[best].parts {
		if tones[partTone(best, k)]+60 >= voicedMs(p.ms) {
			out = append(out, p.text)
		}
	}
	return strings.Join(out, " ")
}

// hearTones measures how many ms of each tone the audio holds: each
// stretch of voiced frames is one syllable, whose frequency its zero
// crossings give (counted with hysteresis, so line noise adds none, and
// timed from the first to the last, so quiet audio in its frames neither).
func hearTones(pcm []int16, rate int) map[int]int {
	frame := rate / 50
	out := map[int]int{}
	var run []int16
	flush := func() {
		if len(run) == 0 {
			return
		}
		flips, first, last, pos := 0, 0, 0, run[0] >= 0
		for i, v := range run {
			if (pos && v < -2000) || (!pos && v > 2000) {
				pos = !pos
				if flips == 0 {
					first = i
				}
				flips, last = flips+1, i
			}
		}
		if flips > 2 {
			// Half periods between the first flip and the last.
			hz := float64(flips-1) / 2 / (float64(last-first) / float64(rate))
			out[int(math.Round((hz-latencyBaseHz)/latencyStepHz))] += len(run) / frame * 20
		}
		run = run[:0]
	}
	for i := 0; i+frame <= len(pcm); i += frame {
		f := pcm[i : i+frame]
		if voice.Level(f) < -35 {
			flush()
			continue
		}
		run = append(run, f...)
	}
	flush()
	return out
}

func wavPCM(wav []byte) ([]int16, int) {
	if len(wav) < 44 {
		return nil, 0
	}
	rate := int(binary.LittleEndian.Uint32(wav[24:]))
	data := wav[44:]
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
	}
	return pcm, rate
}

const latencyAgents = `
agents:
  host:
    model: openai/bench
    instructions: You answer the phone for a restaurant.
    memory: {identityKey: phoneNumber, read: false, save: false}
`

// latencyAnswer is the agent's spoken answer (about a second of speech).
const latencyAnswer = "Sure, I can help with that."

// Latency measures time to first agent audio on the wire: calls over SIP
// (RTP both ways, a diago caller) and over a browser room (a Go WebRTC
// caller), one at a time, each speaking the script's utterances with
// their mid-sentence pauses, under each provider profile. The box is the
// whole box in this process; the providers are the scripted provider with
// the profile's latencies (for the streaming profiles, at its live
// transcription WebSocket, to the box's own live client).
func Latency(ctx context.Context, cfg LatencyConfig) (LatencyReport, error) {
	if cfg.Calls <= 0 {
		cfg.Calls = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var profiles []LatencyProfile
	for _, p := range LatencyProfiles {
		if len(cfg.Profiles) == 0 || slices.Contains(cfg.Profiles, p.Name) {
			profiles = append(profiles, p)
		}
	}
	pool, drop, err := Database(ctx, cfg.AdminURL, 0)
	if err != nil {
		return LatencyReport{}, err
	}
	defer drop()

	var profile atomic.Pointer[LatencyProfile]
	model := providertest.Start()
	defer model.Close()
	model.DiscardRequests()
	model.RespondTranscripts(func(wav []byte) string { return heard(wavPCM(wav)) })
	model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if req.Model == "extractor" {
			return providertest.Reply{Content: `{"operations":[],"summary":"Asked about a booking."}`}
		}
		return providertest.Reply{Content: latencyAnswer, Delay: profile.Load().FirstToken}
	})
	c, err := config.Parse([]byte(latencyAgents))
	if err != nil {
		return LatencyReport{}, err
	}
	c.Providers = map[string]config.Provider{"openai": {BaseURL: model.URL()}}
	c.Memory.Model = "openai/extractor"
	c.SIP = config.SIP{Addr: "127.0.0.1:0", MaxCalls: 4,
		Trunks: config.Trunks{Inbound: []config.InboundTrunk{{Name: "bench", Sources: []string{"127.0.0.1"},
			Routes: []config.Route{{Number: "*", Agent: "host"}}}}}}
	c.Rooms = config.Rooms{MaxRooms: 4}
	c.Media.Scheduling = cfg.Scheduling
	opened := make(chan string, 16)
	served, stopBox, err := StartBox(ctx, pool, c, "bench-key", box.Options{
		// The providers' speech, the agent's voice.sttMode set by the
		// profile: a streaming profile's calls open the box's own live
		// transcription client.
		Speech: func(models voice.Models) voice.SpeechFactory {
			speech := voice.ProviderSpeech(models, nil)
			return func(name string, ag config.Agent, rate int) (voice.Transcriber, voice.Synthesizer, error) {
				v := config.AgentVoice{}
				if ag.Voice != nil {
					v = *ag.Voice
				}
				v.STTMode = profile.Load().Streaming
				ag.Voice = &v
				return speech(name, ag, rate)
			}
		},
		TuneCalls: func(vc *voice.Config) {
			vc.OnOpen = func(call *voice.Call) {
				select {
				case opened <- call.ID():
				default:
				}
			}
		},
	})
	if err != nil {
		return LatencyReport{}, err
	}
	defer stopBox()
	mgr, sipSrv, key := served.Calls, served.Phones, served.Key
	base := served.URL
	gen, err := newGenerator(ctx)
	if err != nil {
		return LatencyReport{}, err
	}
	defer gen.close()

	rep := LatencyReport{Setup: []string{
		fmt.Sprintf("box and callers in one process on loopback, GOMAXPROCS=%d, load average %s; PostgreSQL %s", runtimeProcs(), loadAverage(), serverVersion(ctx, pool)),
		fmt.Sprintf("%d calls per transport and profile, one at a time, each speaking %d utterances (mid-sentence pauses of 300-700 ms) and hearing each answer", cfg.Calls, len(latencyScript)),
		"profiles: http = transcription 360 ms, first token 420 ms, speech first byte 140 ms; streaming = the box's live transcription client (voice.sttMode realtime; streaming-deepgram: deepgram) over WebSocket to the scripted provider, interims of the words heard so far every 100 ms of audio once speech began, 100 ms behind it, its own end-of-speech detection sending the final 150 ms after the end of speech, 420, 140; zero = all at once",
		"box: the controller's wire-to-wire less the endpointing silence and the wait for the first playable audio (controller metrics, 1 ms steps)",
		"false endpoint: a turn committed with only part of what the caller said (the caller was still speaking)",
		schedulingNote(c.Media),
	}}
	for i := range profiles {
		p := &profiles[i]
		profile.Store(p)
		model.SetAudioLatency(providertest.AudioLatency{Transcription: p.Transcription, SpeechFirstByte: p.SpeechFirstByte})
		model.SetLive(providertest.Live{EndOfSpeech: p.StreamingFinal, HeardInterims: true, InterimEvery: interimEvery, InterimLag: interimLag})
		for _, transport := range []string{"sip", "room"} {
			cfg.Logger.Info("bench latency", "profile", p.Name, "transport", transport)
			row := LatencyRow{Profile: p.Name, Transport: transport}
			var w2w, box []time.Duration
			stages := map[string][]float64{}
			for n := range cfg.Calls {
				var caller latencyCaller
				var callID string
				var err error
				for len(opened) > 0 {
					<-opened
				}
				if transport == "sip" {
					caller, err = gen.latencyCall(ctx, sipSrv.Addr(), "100", fmt.Sprintf("+1555%07d", n))
				} else {
					caller, callID, err = joinRoom(ctx, base, key, "host")
				}
				if err != nil {
					return rep, err
				}
				if callID == "" {
					select {
					case callID = <-opened:
					case <-time.After(5 * time.Second):
						caller.Close()
						return rep, errors.New("bench: the SIP call did not open")
					}
				}
				answered, err := speakScript(ctx, caller)
				caller.Close()
				if err != nil {
					return rep, err
				}
				rec, err := waitRecord(ctx, mgr, callID)
				if err != nil {
					return rep, err
				}
				row.Turns += len(latencyScript)
				want := map[string]bool{}
				for _, u := range latencyScript {
					want[u.text()] = true
				}
				for _, e := range rec.Transcript {
					if e.Role == voice.RoleUser && !want[e.Text] {
						row.FalseEndpoints++
						cfg.Logger.Debug("bench latency: false endpoint", "profile", p.Name, "transport", transport, "turn", e.Turn, "text", e.Text)
					}
				}
				var heardTurns []time.Duration // the answered utterances, in order, as the metrics list them
				for _, d := range answered {
					if d > 0 {
						heardTurns = append(heardTurns, d)
					}
				}
				for i, m := range rec.Metrics {
					for key, name := range map[string]string{"endOfUtteranceMs": "eou", "audioReadyMs": "ready", "speechToTextMs": "stt",
						"timeToFirstTokenMs": "ttft", "textToSpeechFirstByteMs": "ttfb"} {
						if v, ok := num(m[key]); ok {
							stages[name] = append(stages[name], v)
						}
					}
					if m["preemptive"] == true {
						row.Preemptive++
					}
					if ws, ok := m["wasted"].([]any); ok {
						for _, w := range ws {
							wm, _ := w.(map[string]any)
							if wm["kind"] == "generation" {
								row.WastedGenerations++
							} else {
								row.WastedTranscriptions++
							}
							if v, ok := num(wm["ms"]); ok {
								row.WastedMs += int64(v)
							}
						}
					}
					cfg.Logger.Debug("bench latency: turn", "profile", p.Name, "transport", transport, "turn", i,
						"wireToWireMs", func() int64 {
							if i < len(heardTurns) {
								return heardTurns[i].Milliseconds()
							}
							return -1
						}(), "endpoint", m["endpoint"], "eou", m["endOfUtteranceMs"], "ready", m["audioReadyMs"],
						"transcription", m["transcription"], "preemptive", m["preemptive"], "boxW2W", m["wireToWireMs"])
					if d, ok := boxShare(m); ok {
						box = append(box, d)
					}
				}
				for _, d := range answered {
					if d > 0 {
						w2w = append(w2w, d)
					} else {
						row.Unanswered++
					}
				}
			}
			wr := &recorder{}
			for _, d := range w2w {
				wr.add(d, nil)
			}
			br := &recorder{}
			for _, d := range box {
				br.add(d, nil)
			}
			row.WireToWire, row.Box = wr.figures("wire to wire", false), br.figures("box", false)
			row.EndOfUtterance, row.AudioReady, row.SpeechToText = median(stages["eou"]), median(stages["ready"]), median(stages["stt"])
			row.FirstToken, row.SpeechFirstByte = median(stages["ttft"]), median(stages["ttfb"])
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// waitRecord waits for the call's completion and returns its record.
func waitRecord(ctx context.Context, mgr *voice.Manager, id string) (voice.CallRecord, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, err := mgr.Get(ctx, id)
		if err == nil && rec.Status == "ended" {
			return rec, nil
		}
		if time.Now().After(deadline) {
			return rec, fmt.Errorf("bench: call %s did not complete (%v)", id, err)
		}
		select {
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// latencyCaller is a caller on either transport.
type latencyCaller interface {
	Say(pcm []int16)
	Saying() bool
	LastVoice() time.Time
	FirstVoicedAfter(t time.Time) (time.Time, bool)
	LastVoicedArrival() time.Time
	Close()
}

// speakScript says each utterance, waits for the answer to start and to
// finish, and returns per utterance how long the first agent audio took
// after the caller's last voiced frame (0: none within 6 s).
func speakScript(ctx context.Context, c latencyCaller) ([]time.Duration, error) {
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(time.Second); err != nil {
		return nil, err
	}
	var w2w []time.Duration
	for id, u := range latencyScript {
		c.Say(u.pcm(id))
		for c.Saying() {
			if err := sleep(10 * time.Millisecond); err != nil {
				return nil, err
			}
		}
		last := c.LastVoice()
		var got time.Duration
		for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline); {
			if at, ok := c.FirstVoicedAfter(last); ok {
				got = at.Sub(last)
				break
			}
			if err := sleep(10 * time.Millisecond); err != nil {
				return nil, err
			}
		}
		w2w = append(w2w, got)
		// The answer plays through: nothing voiced for 700 ms.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && time.Since(c.LastVoicedArrival()) < 700*time.Millisecond; {
			if err := sleep(20 * time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	return w2w, sleep(500 * time.Millisecond)
}

// roomCaller is a browser-room caller.
type roomCaller struct{ *roomstest.Client }

func (r roomCaller) LastVoicedArrival() time.Time {
	arr := r.Arrivals()
	for i := len(arr) - 1; i >= 0; i-- {
		if arr[i].Voiced {
			return arr[i].At
		}
	}
	return time.Time{}
}

func joinRoom(ctx context.Context, base, key, agent string) (latencyCaller, string, error) {
	body, _ := json.Marshal(map[string]string{"agent": agent})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/voice/rooms", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	var env struct {
		Data  rooms.View `json:"data"`
		Error *struct{ Code, Message string }
	}
	err = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if err != nil || env.Error != nil || env.Data.Join == nil {
		return nil, "", fmt.Errorf("bench: open room: %v %+v", err, env.Error)
	}
	jctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := roomstest.Join(jctx, roomstest.Options{BaseURL: base, Key: key, OfferURL: env.Data.Join.OfferURL})
	if err != nil {
		return nil, "", err
	}
	return roomCaller{c}, env.Data.CallID, nil
}

// sipCaller is a SIP caller: G.711 µ-law RTP both ways, 20 ms packets
// paced by the packet writer.
type sipCaller struct {
	d    *diago.DialogClientSession
	stop chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	queue     [][]int16
	lastVoice time.Time
	arrivals  []roomstest.Arrival
}

func (g *generator) latencyCall(ctx context.Context, boxAddr, number, caller string) (*sipCaller, error) {
	d, med, err := g.dial(ctx, boxAddr, number, caller)
	if err != nil {
		return nil, err
	}
	r, err := med.AudioReader()
	if err != nil {
		return nil, err
	}
	w, err := med.AudioWriter()
	if err != nil {
		return nil, err
	}
	c := &sipCaller{d: d, stop: make(chan struct{})}
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		buf := make([]byte, media.RTPBufSize)
		pcm := make([]int16, 0, latencyFrame)
		for {
			n, err := r.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				return
			}
			pcm = companding.AppendFromUlaw(pcm[:0], buf[:n])
			a := roomstest.Arrival{At: time.Now(), Voiced: voice.Level(pcm) > -40}
			c.mu.Lock()
			c.arrivals = append(c.arrivals, a)
			c.mu.Unlock()
		}
	}()
	go func() {
		defer c.wg.Done()
		quiet := roomstest.Noise(latencyFrame, 30)
		enc := make([]byte, latencyFrame)
		for {
			select {
			case <-c.stop:
				return
			case <-d.Context().Done():
				return
			default:
			}
			f := quiet
			c.mu.Lock()
			if len(c.queue) > 0 {
				f, c.queue = c.queue[0], c.queue[1:]
			}
			c.mu.Unlock()
			enc = companding.AppendUlaw(enc[:0], f)
			if _, err := w.Write(enc); err != nil {
				return
			}
			if voice.Level(f) > -40 {
				c.mu.Lock()
				c.lastVoice = time.Now()
				c.mu.Unlock()
			}
		}
	}()
	return c, nil
}

func (c *sipCaller) Say(pcm []int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(pcm) >= latencyFrame {
		c.queue = append(c.queue, pcm[:latencyFrame])
		pcm = pcm[latencyFrame:]
	}
}

func (c *sipCaller) Saying() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) > 0
}

func (c *sipCaller) LastVoice() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastVoice
}

func (c *sipCaller) FirstVoicedAfter(t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.arrivals {
		if a.Voiced && a.At.After(t) {
			return a.At, true
		}
	}
	return time.Time{}, false
}

func (c *sipCaller) LastVoicedArrival() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.arrivals) - 1; i >= 0; i-- {
		if c.arrivals[i].Voiced {
			return c.arrivals[i].At
		}
	}
	return time.Time{}
}

func (c *sipCaller) Close() {
	close(c.stop)
	hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = c.d.Hangup(hctx)
	cancel()
	c.wg.Wait()
	c.d.Close()
}
