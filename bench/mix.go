package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/voice"
)

// MixStep is one step of the mixed climb: n calls, half over SIP and half
// from browsers, on one box that also answers text turns at a set rate.
type MixStep struct {
	Calls int
	// SIP and Rooms are the two halves: calls up and failed, the box's
	// pacing p99 and where each one's packets arrived, lost and dropped.
	SIP   MixMedia
	Rooms MixMedia
	// Text is the text turns' time to the first token (streaming, on the
	// OpenAI wire), Turns how many were asked in the window.
	Text Figures
	// CPUPerCall is the box's process CPU per call in the window, a
	// fraction of one core; HeapPerCall its Go heap and stacks per call.
	CPUPerCall  float64
	HeapPerCall int64
	// CPU is the window's CPU by who spent it; CallerCPU the two caller
	// processes', ModelCPU the scripted model's, in cores.
	CPU                 cpuShares
	CallerCPU, ModelCPU float64
}

// MixMedia is one kind of call in a mixed step.
type MixMedia struct {
	Calls, Up, Failed int
	Pacing            Figures // at the box
	Lost, Dropped     int64
}

// held says whether the step kept every call up with pacing p99 under 5 ms
// and no frame lost or dropped, and every text turn answered.
func (s MixStep) held() bool {
	ok := func(m MixMedia) bool {
		return m.Calls == 0 || m.Up == m.Calls && m.Failed == 0 && m.Pacing.N > 0 && m.Pacing.P99 < 5*time.Millisecond && m.Lost == 0 && m.Dropped == 0
	}
	return ok(s.SIP) && ok(s.Rooms) && s.Text.Errors == 0
}

// mixAgents answer the phone, the browser and text alike (the calls
// load's agent, with memory).
const mixAgents = benchCallAgents

// mixCapacity climbs the mixed load: at each step of n calls, one box
// carries n/2 SIP calls (shared RTP port), n - n/2 browser calls (the
// embedded peer) and TextRate streaming text turns a second, the callers
// in two `stackbone bench caller` processes and the scripted model in a
// `stackbone bench model` one; it stops at the first step where a call
// fails, a frame is lost or dropped, a text turn fails, or the box's
// pacing p99 of either kind passes 5 ms.
func mixCapacity(ctx context.Context, cfg CapacityConfig) (CapacityReport, error) {
	if cfg.RoomsPort == 0 {
		cfg.RoomsPort = 40000
	}
	rep := CapacityReport{Procs: runtimeProcs(), Mixed: []MixStep{}}
	rt := (config.Media{Scheduling: cfg.Scheduling}).Realtime()
	rep.Setup = []string{
		fmt.Sprintf("each step: half the calls over SIP (G.711, the shared RTP port), half from browsers (the embedded WebRTC peer, every room on UDP port %d), started at %d/s each, held %s once up; %d streaming text turns a second on the OpenAI wire through the window, sessions of five turns", cfg.RoomsPort, cfg.Rate, cfg.Hold, cfg.TextRate),
		"one box in this process; the SIP callers in a `stackbone bench caller` process, the browser callers in a `stackbone bench caller --rooms` one, the scripted model in a `stackbone bench model` one; the text client in this process (its CPU counts as the box's)",
		"pacing: the box's own, where each agent packet is handed to the network (100 µs buckets, to the upper edge); text: time to the first token at the client",
		schedulingNote(config.Media{Scheduling: cfg.Scheduling}),
	}
	for n := cfg.From; n <= cfg.Max; n += cfg.Step {
		cfg.Logger.Info("bench capacity: mixed step", "calls", n)
		st, err := mixStep(ctx, cfg, n, rt)
		if err != nil {
			return rep, err
		}
		rep.Mixed = append(rep.Mixed, st)
		if !st.held() {
			break
		}
		rep.MixedLargest = n
	}
	rep.Setup[len(rep.Setup)-1] += backendsNote()
	return rep, nil
}

// mixStep runs one step on a box of its own.
func mixStep(ctx context.Context, cfg CapacityConfig, n int, rt bool) (MixStep, error) {
	st := MixStep{Calls: n, SIP: MixMedia{Calls: n / 2}, Rooms: MixMedia{Calls: n - n/2}}
	pool, drop, err := database(ctx, cfg.AdminURL, 20, rt)
	if err != nil {
		return st, err
	}
	defer drop()
	if err := warmPool(ctx, pool); err != nil {
		return st, err
	}
	model, err := startRemoteModel(ctx, ModelConfig{Realtime: rt})
	if err != nil {
		return st, err
	}
	defer func() { _, _ = model.stop() }()
	c, err := config.Parse([]byte(mixAgents + "    voice: {sttMode: http}\n"))
	if err != nil {
		return st, err
	}
	c.Media.Scheduling = cfg.Scheduling
	c.Providers = map[string]config.Provider{"openai": {BaseURL: model.URL()}}
	c.Memory.Model = "openai/extractor"
	c.SIP = config.SIP{Addr: "127.0.0.1:0", MaxCalls: n + 10,
		Trunks: config.Trunks{Inbound: []config.InboundTrunk{{Name: "bench", Sources: []string{"127.0.0.1"},
			Routes: []config.Route{{Number: "*", Agent: "receptionist"}}}}}}
	c.Rooms = config.Rooms{MaxRooms: n, Embedded: config.EmbeddedRooms{IPs: []string{"127.0.0.1"}, UDPPort: cfg.RoomsPort}}
	served, stopBox, err := StartBox(ctx, pool, c, "bench-mix-key", box.Options{})
	if err != nil {
		return st, err
	}
	defer stopBox()
	srv, rms := served.Phones, served.Rooms

	runtime.GC()
	heap0, start := heapInUse(), srv.Stats()
	var w0, w1 sip.Stats
	var r0, r1 voice.PacingCounts
	meter := stepMeter{load: newLoadMeter(pool, n, cfg.Hold), model: model}
	var heap1 int64
	textStop := make(chan struct{})
	var text recorder
	var textWG sync.WaitGroup
	// The SIP caller's window leads: the box's figures are read as it
	// opens and closes (the browser callers' opens within a second of it).
	window := func(end bool) {
		if !end {
			meter.open(ctx)
			w0, r0 = srv.Stats(), rms.Pacing()
			textWG.Add(1)
			go func() {
				defer textWG.Done()
				textTurns(ctx, served.URL, served.Key, cfg.TextRate, textStop, &text)
			}()
			return
		}
		meter.close(ctx)
		w1, r1, heap1 = srv.Stats(), rms.Pacing(), heapInUse()
		close(textStop)
	}
	var wg sync.WaitGroup
	var roomsStep roomsCallerStep
	var roomsErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		roomsStep, roomsErr = remoteRooms(ctx, RoomsTarget{Base: served.URL, Key: served.Key, Agent: "receptionist"},
			st.Rooms.Calls, cfg.Rate, cfg.Hold, rt, func(bool) {})
	}()
	number := 0
	sipStep, sipCPU, err := remoteStep(ctx, srv.Addr(), st.SIP.Calls, &number, cfg.Rate, cfg.Hold, rt, window)
	wg.Wait()
	textWG.Wait()
	if err != nil {
		return st, err
	}
	if roomsErr != nil {
		return st, roomsErr
	}
	// The calls' completions (memory saves) before the box stops.
	deadline := time.Now().Add(2 * time.Minute)
	for (served.Calls.Active() > 0 || srv.Active() > 0) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	st.SIP.Up, st.SIP.Failed = sipStep.Established, sipStep.Failed
	st.SIP.Pacing = pacingFigures("sip pacing", w1.Sub(w0).Pacing)
	st.SIP.Lost, st.SIP.Dropped = sipStep.Lost, srv.Stats().FramesDropped-start.FramesDropped
	st.Rooms.Up, st.Rooms.Failed = roomsStep.Join.N, roomsStep.Join.Errors
	st.Rooms.Pacing = pacingFigures("rooms pacing", r1.Sub(r0))
	st.Rooms.Lost = roomsStep.Lost
	st.Text = text.figures("text first token", false)
	st.CallerCPU, st.ModelCPU = meter.outside(sipCPU + roomsStep.cpu)
	st.CPU = meter.load.load.shares
	st.CPUPerCall = st.CPU.Process / float64(n)
	st.HeapPerCall = (heap1 - heap0) / int64(n)
	return st, nil
}

// textTurns asks streaming text turns of the receptionist at rate a second
// until stop, each session five turns long and its turns one after the
// other, recording each turn's time to its first token (or its error).
func textTurns(ctx context.Context, base, key string, rate int, stop <-chan struct{}, rec *recorder) {
	if rate <= 0 {
		return
	}
	client := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	slots := make([]sync.Mutex, 2*rate)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Ticks take the sessions in turn, each one's turns two seconds
		// apart and one at a time (a session takes one turn at once), a
		// new session every five.
		slot, use := i%len(slots), i/len(slots)
		session := "mix-" + strconv.Itoa(slot) + "-" + strconv.Itoa(use/5)
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots[slot].Lock()
			defer slots[slot].Unlock()
			d, err := textTurn(ctx, client, base, key, session)
			rec.add(d, err)
		}()
	}
}

// textTurn is one streaming turn: the time to its first token.
func textTurn(ctx context.Context, client *http.Client, base, key, session string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"model": "receptionist", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "Where is my order A-1001?"}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/openai/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("x-stackbone-session", session)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("text turn: %s: %s", resp.Status, b)
	}
	var first time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if first == 0 && strings.HasPrefix(line, "data: ") && strings.Contains(line, `"content":"`) {
			first = time.Since(start)
		}
		if line == "data: [DONE]" {
			break
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if first == 0 {
		return 0, fmt.Errorf("text turn: no content streamed (%v)", sc.Err())
	}
	return first, nil
}
