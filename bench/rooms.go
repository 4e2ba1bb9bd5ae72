package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/rooms/roomstest"
	"github.com/stackbone/box/voice"
)

// RoomsConfig sets up the browser-rooms load run on the embedded peer.
type RoomsConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	AdminURL string
	// Steps are the numbers of concurrent calls tried, in order (default
	// 1, 5, 10, 20, 40, 60, 80, 100, 150, 200, 250); the climb stops after
	// the first step whose pacing jitter p99 reaches JitterLimit or that has
	// errors or lost packets.
	Steps []int
	// CallDuration is how long each call stays up (default 8 s): it joins,
	// speaks 1.2 s, hears the agent's spoken answer, then idles.
	CallDuration time.Duration
	// JitterLimit is the pacing jitter p99 a step must stay under (default
	// 5 ms).
	JitterLimit time.Duration
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// RoomsStep is the figures of one step.
type RoomsStep struct {
	N int
	// Join is POST /api/voice/rooms to the caller's media connected
	// (offer, answer, ICE and DTLS on loopback).
	Join Figures
	// Jitter is how far the agent's audio packets stray from 20 ms apart
	// as the callers receive them.
	Jitter Figures
	// BoxPacing is the same where the box hands each packet to the
	// network (rooms.Service.Pacing), as bench calls measures SIP: the
	// callers' own receive path (pion's, in this process, on the same
	// cores) is not in it.
	BoxPacing Figures
	// Ticker is the baseline: a bare 20 ms time.Ticker in the same process
	// during the step, what the machine's scheduler gives anyway.
	Ticker Figures
	// Runnable is how long the process's goroutines waited runnable
	// before they ran during the step (runtime/metrics, sampled).
	Runnable Figures
	// Overhead is each turn's wire-to-wire time less the parts that are not
	// the box (endpointing silence, speech-to-text, the model's first
	// token, text-to-speech first byte), from the controller's metrics.
	Overhead Figures
	// WireToWire is the caller's last voiced frame sent to the first voiced
	// agent packet received, as the caller measures it.
	WireToWire Figures
	// Packets are the agent packets the callers received, Lost the
	// sequence numbers missing among them.
	Packets, Lost int64
	// CPUPerCall is the process's CPU time (box and callers) per call and
	// second of the step, as a fraction of one core; MemPerCall the growth
	// of its resident memory per call (bytes).
	CPUPerCall float64
	MemPerCall int64
}

// Rooms measures concurrent browser calls on the embedded WebRTC peer with
// Go WebRTC callers on loopback: join time, the pacing jitter of agent
// audio and the per-turn overhead, at growing numbers of calls, beside a
// bare ticker's jitter measured in the same steps.
func Rooms(ctx context.Context, cfg RoomsConfig) (Report, []RoomsStep, error) {
	if len(cfg.Steps) == 0 {
		cfg.Steps = []int{1, 5, 10, 20, 40, 60, 80, 100, 150, 200, 250}
	}
	if cfg.CallDuration <= 0 {
		cfg.CallDuration = 8 * time.Second
	}
	if cfg.JitterLimit <= 0 {
		cfg.JitterLimit = 5 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	maxN := 0
	for _, n := range cfg.Steps {
		maxN = max(maxN, n)
	}
	pool, drop, err := Database(ctx, cfg.AdminURL, 20)
	if err != nil {
		return Report{}, nil, err
	}
	defer drop()

	model := startModel()
	defer model.Close()
	model.DiscardRequests()
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: "Sure, I can help with that."}
	})
	model.RespondTranscripts(func([]byte) string { return "Hello, I have a question about my order." })

	c, err := config.Parse([]byte("agents:\n  support:\n    model: openai/bench\n    instructions: You answer the phone.\n"))
	if err != nil {
		return Report{}, nil, err
	}
	c.Providers = map[string]config.Provider{"openai": {BaseURL: model.URL()}}
	c.Rooms = config.Rooms{MaxRooms: maxN}
	served, stopBox, err := StartBox(ctx, pool, c, "bench-key", box.Options{})
	if err != nil {
		return Report{}, nil, err
	}
	defer stopBox()
	base, key, calls, rms := served.URL, served.Key, served.Calls, served.Rooms
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxN, MaxConnsPerHost: maxN}}
	callers, err := roomstest.NewAPI()
	if err != nil {
		return Report{}, nil, err
	}

	rep := Report{
		Title: "Browser rooms: concurrent calls on the embedded WebRTC peer (PCMU), Go WebRTC callers on loopback",
		Setup: []string{
			fmt.Sprintf("each call: join, 1.2 s of speech, the spoken answer (about 1.1 s), idle to %s; scripted model and speech", cfg.CallDuration),
			"join: POST /api/voice/rooms to media connected; jitter: |gap between agent packets - the gap of their RTP timestamps (20 ms within a talkspurt)| at the callers",
			"box pacing: the same gap where the box hands each packet to the network (as bench calls measures SIP; 100 µs buckets, to the upper edge)",
			"overhead: wire-to-wire less endpointing and the wait for the first playable audio after the endpoint (controller metrics)",
			"cpu %/call: process CPU (box, callers, scripted model) per call from the step's start to its first hang-up, % of one core; KB/call: resident memory growth per call",
			"in a --cpuprofile the callers' goroutines carry the label side=generator and the scripted model's side=model",
			"runnable wait: how long goroutines waited to run (runtime/metrics /sched/latencies, sampled; percentiles to the bucket's upper edge)",
		},
	}
	var steps []RoomsStep
	largest, largestBox := 0, 0
	boxFailed := false // a step failed by the box's figure: largestBox stays
	for _, n := range cfg.Steps {
		cfg.Logger.Info("rooms step", "calls", n)
		before := rms.Pacing()
		st, err := roomsStep(ctx, n, cfg.CallDuration, base, key, client, callers, calls)
		if err != nil {
			return Report{}, nil, err
		}
		st.BoxPacing = pacingFigures("", rms.Pacing().Sub(before))
		steps = append(steps, st)
		label := fmt.Sprintf("%d calls: ", n)
		st.Join.Name, st.Jitter.Name, st.Overhead.Name, st.WireToWire.Name = label+"join", label+"agent audio pacing jitter",
			label+"per-turn overhead", label+"wire to wire at the caller"
		st.BoxPacing.Name = label + "agent audio pacing at the box"
		st.Ticker.Name, st.Ticker.Baseline = label+"bare 20 ms ticker jitter", true
		st.Runnable.Name = label + "goroutine runnable wait"
		rep.Figures = append(rep.Figures, st.Ticker, st.Runnable, st.Jitter, st.BoxPacing, st.Join, st.Overhead, st.WireToWire)
		rep.Setup = append(rep.Setup, fmt.Sprintf("%d calls: %d agent packets received, %d lost; cpu %%/call %.2f, KB/call %d; goroutines once its calls ended: %d",
			n, st.Packets, st.Lost, 100*st.CPUPerCall, st.MemPerCall/1024, runtime.NumGoroutine()))
		clean := st.Join.Errors == 0 && st.Jitter.N > 0 && st.Overhead.Errors == 0 && st.Lost == 0
		boxFailed = boxFailed || !clean || st.BoxPacing.N == 0 || st.BoxPacing.P99 >= cfg.JitterLimit
		if !boxFailed {
			largestBox = n
		}
		ok := clean && st.Jitter.P99 < cfg.JitterLimit
		if !ok {
			break
		}
		largest = n
	}
	rep.Setup = append(rep.Setup, fmt.Sprintf("largest number of concurrent calls with pacing jitter p99 under %s at the callers, no loss and no errors: %d", cfg.JitterLimit, largest),
		fmt.Sprintf("largest number of concurrent calls with pacing jitter p99 under %s at the box, no loss and no errors (steps until the callers' limit): %d", cfg.JitterLimit, largestBox))
	return rep, steps, nil
}

// roomsStep runs n calls at once (joins spread over a second) and
// collects their figures.
func roomsStep(ctx context.Context, n int, dur time.Duration, base, key string, hc *http.Client, api *webrtc.API, calls *voice.Manager) (RoomsStep, error) {
	var join, jitter, ticker, overhead, w2w recorder
	var packets, lost atomic.Int64
	cpu0, rss0, start := processCPU(), residentBytes(), time.Now()
	waits0 := readSchedWaits()
	var cpu1 time.Duration
	var rss1 int64
	stopTicker := make(chan struct{})
	tickDone := make(chan struct{})
	go func() { // the baseline, during the whole step
		defer close(tickDone)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-stopTicker:
				return
			case now := <-t.C:
				ticker.add(absDur(now.Sub(last)-20*time.Millisecond), nil)
				last = now
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var callIDs []string
	// The callers' goroutines (and pion's, which they start) carry a
	// profiler label, so a CPU profile tells the box from its load.
	gctx := pprof.WithLabels(ctx, pprof.Labels("side", "generator"))
	for i := 0; i < n; i++ {
		wg.Add(1)
		go pprof.Do(gctx, pprof.Labels(), func(ctx context.Context) {
			defer wg.Done()
			select {
			case <-time.After(time.Duration(i) * time.Second / time.Duration(n)):
			case <-ctx.Done():
				return
			}
			callID, err := benchCall(ctx, dur, base, key, hc, api, &join, &jitter, &w2w, &packets, &lost)
			if err != nil {
				join.add(0, err)
				return
			}
			mu.Lock()
			if len(callIDs) == 0 {
				// The first call to hang up: every call is still up.
				cpu1, rss1 = processCPU(), residentBytes()
			}
			callIDs = append(callIDs, callID)
			mu.Unlock()
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if cpu1 == 0 {
		cpu1, rss1 = processCPU(), residentBytes()
	} else {
		secs = dur.Seconds()
	}
	close(stopTicker)
	<-tickDone
	runnable := readSchedWaits().figures(waits0, "runnable")
	// The controller's per-turn metrics, once each call completed.
	for _, id := range callIDs {
		var rec voice.CallRecord
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := calls.Get(ctx, id)
			if err == nil && r.Status == "ended" {
				rec = r
				break
			}
			if time.Now().After(deadline) {
				overhead.add(0, fmt.Errorf("call %s did not complete", id))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(rec.Metrics) == 0 && rec.ID != "" {
			overhead.add(0, fmt.Errorf("call %s has no turn metrics", id))
		}
		for _, m := range rec.Metrics {
			d, ok := boxShare(m)
			if !ok {
				overhead.add(0, fmt.Errorf("a turn without wire-to-wire"))
				continue
			}
			overhead.add(max(d, 0), nil)
		}
	}
	return RoomsStep{N: n, Join: join.figures("join", false), Jitter: jitter.figures("jitter", false), Ticker: ticker.figures("ticker", true),
		Overhead: overhead.figures("overhead", false), WireToWire: w2w.figures("w2w", false),
		Runnable: runnable, Packets: packets.Load(), Lost: lost.Load(),
		CPUPerCall: (cpu1 - cpu0).Seconds() / secs / float64(n), MemPerCall: (rss1 - rss0) / int64(n)}, nil
}

// benchCall is one caller: open, join, speak, hear the answer, idle, hang up.
func benchCall(ctx context.Context, dur time.Duration, base, key string, hc *http.Client, api *webrtc.API, join, jitter, w2w *recorder, packets, lost *atomic.Int64) (string, error) {
	start := time.Now()
	body, _ := json.Marshal(map[string]string{"agent": "support"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/voice/rooms", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	var env struct {
		Data  rooms.View `json:"data"`
		Error *struct{ Code, Message string }
	}
	err = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if err != nil || env.Error != nil || env.Data.Join == nil {
		return "", fmt.Errorf("bench: open room: %v %+v", err, env.Error)
	}
	jctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	c, err := roomstest.Join(jctx, roomstest.Options{BaseURL: base, Key: key, OfferURL: env.Data.Join.OfferURL, HTTP: hc, API: api})
	cancel()
	if err != nil {
		return "", err
	}
	join.add(time.Since(start), nil)
	defer c.Close()
	sleep := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !sleep(500 * time.Millisecond) {
		return "", ctx.Err()
	}
	c.Say(roomstest.Speech(1200))
	for c.Saying() {
		if !sleep(20 * time.Millisecond) {
			return "", ctx.Err()
		}
	}
	spoke := c.LastVoice()
	if !sleep(time.Until(start.Add(dur))) {
		return "", ctx.Err()
	}
	heard, ok := c.FirstVoicedAfter(spoke)
	if !ok {
		w2w.add(0, fmt.Errorf("bench: no spoken answer"))
	} else {
		w2w.add(heard.Sub(spoke), nil)
	}
	arr := c.Arrivals()
	packets.Add(int64(len(arr)))
	for i := 1; i < len(arr); i++ {
		if arr[i].Seq == arr[i-1].Seq+1 {
			// The gap against the one the RTP clock says (RFC 3550's D):
			// 20 ms within a talkspurt, the time that passed at the start
			// of one, which the box marks and stamps (not a pacing error,
			// as the box's own figure does not count it either).
			want := time.Duration(arr[i].Timestamp-arr[i-1].Timestamp) * time.Second / roomstest.Rate
			jitter.add(absDur(arr[i].At.Sub(arr[i-1].At)-want), nil)
		} else if d := arr[i].Seq - arr[i-1].Seq; d > 1 && d < 1000 {
			lost.Add(int64(d - 1))
		}
	}
	return env.Data.CallID, nil
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
