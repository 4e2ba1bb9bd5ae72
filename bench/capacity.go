package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"
)

// CapacityConfig sets a capacity climb.
type CapacityConfig struct {
	AdminURL string
	// From, Step and Max are the concurrent calls of the climb's steps.
	From, Step, Max int
	// Hold is how long each step's calls stay up once established.
	Hold time.Duration
	// Rate is calls started per second.
	Rate int
	// STT is how the agent listens (CallsConfig.STT).
	STT string
	// Caller is where the load generator runs (CallsConfig.Caller).
	Caller string
	// Scheduling is the box's media.scheduling (CallsConfig.Scheduling).
	Scheduling string
	// Media is what the climb carries: "sip" (the default), "rooms",
	// browser calls on the embedded WebRTC peer (bench rooms' load), or
	// "mix": half of each on one box, beside text turns at TextRate.
	Media string
	// TextRate is the mixed climb's streaming text turns a second.
	TextRate int
	// RoomsPort is the browser climb's one UDP port (default 40000).
	RoomsPort int
	Logger    *slog.Logger
}

// CapacityClimb is one media path's climb.
type CapacityClimb struct {
	Name    string
	RTPPort int // the box's sip.rtpPort
	Steps   []CallStep
	Largest int // the largest step that held (0: none)
}

// RoomsClimb is one media path's browser climb.
type RoomsClimb struct {
	Name    string
	UDPPort int // rooms.embedded.udpPort (0: a port per room)
	Steps   []RoomsStep
	Largest int
}

// CapacityReport is the result of a capacity run.
type CapacityReport struct {
	Setup  []string
	Procs  int
	Climbs []CapacityClimb
	// RoomsClimbs are the browser climbs (Media "rooms").
	RoomsClimbs []RoomsClimb
	// Mixed is the mixed climb (Media "mix").
	Mixed        []MixStep
	MixedLargest int
}

// Capacity climbs concurrent SIP calls (each with a speaking caller and
// an answering agent, as Calls places them) until box pacing p99 passes
// 5 ms, a frame is lost or dropped or a call fails, for the box's shared
// RTP port and, beside it in the same run, a port per call (the media
// path before the shared port). The two climbs take turns at each step,
// so the machine's noise falls on both.
func Capacity(ctx context.Context, cfg CapacityConfig) (CapacityReport, error) {
	if cfg.From <= 0 {
		cfg.From = 100
	}
	if cfg.Step <= 0 {
		cfg.Step = 100
	}
	if cfg.Max < cfg.From {
		cfg.Max = 1500
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 30 * time.Second
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 50
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Media == "rooms" {
		return roomsCapacity(ctx, cfg)
	}
	if cfg.Media == "mix" {
		return mixCapacity(ctx, cfg)
	}
	if cfg.Media != "" && cfg.Media != "sip" {
		return CapacityReport{}, fmt.Errorf("bench capacity: media %q: want sip, rooms or mix", cfg.Media)
	}
	rep := CapacityReport{Procs: runtimeProcs(), Climbs: []CapacityClimb{
		{Name: "port per call (before)", RTPPort: -1},
		{Name: "shared port", RTPPort: 0},
	}}
	climbing := []bool{true, true}
	for n := cfg.From; n <= cfg.Max && (climbing[0] || climbing[1]); n += cfg.Step {
		for i := range rep.Climbs {
			if !climbing[i] {
				continue
			}
			c := &rep.Climbs[i]
			cfg.Logger.Info("bench capacity: step", "media", c.Name, "calls", n)
			r, err := Calls(ctx, CallsConfig{AdminURL: cfg.AdminURL, Steps: []int{n}, Hold: cfg.Hold, Rate: cfg.Rate,
				STT: cfg.STT, Scheduling: cfg.Scheduling, NoHog: true, Caller: cfg.Caller, RTPPort: c.RTPPort, Logger: cfg.Logger})
			if err != nil {
				return rep, err
			}
			if rep.Setup == nil {
				rep.Setup = r.Setup
			}
			if len(r.Steps) == 0 {
				return rep, fmt.Errorf("bench capacity: the %d-call step measured nothing", n)
			}
			c.Steps = append(c.Steps, r.Steps[0])
			if r.Largest() == n {
				c.Largest = n
			} else {
				climbing[i] = false
			}
		}
	}
	return rep, nil
}

// roomsCapacity climbs browser calls on the embedded peer (bench rooms'
// load, the callers and the scripted model in processes of their own)
// until the box's pacing p99 passes 5 ms or a packet is lost, on one UDP
// port for every room (read and sent in batches) and, taking turns at
// each step, a port per room (a packet per system call: the media path
// before the batches).
func roomsCapacity(ctx context.Context, cfg CapacityConfig) (CapacityReport, error) {
	if cfg.RoomsPort == 0 {
		cfg.RoomsPort = 40000
	}
	out := CapacityReport{Procs: runtimeProcs(), RoomsClimbs: []RoomsClimb{
		{Name: "port per room (before)"},
		{Name: "one port", UDPPort: cfg.RoomsPort},
	}}
	climbing := []bool{true, true}
	for n := cfg.From; n <= cfg.Max && (climbing[0] || climbing[1]); n += cfg.Step {
		for i := range out.RoomsClimbs {
			if !climbing[i] {
				continue
			}
			c := &out.RoomsClimbs[i]
			cfg.Logger.Info("bench capacity: browser step", "media", c.Name, "calls", n)
			rep, st, err := Rooms(ctx, RoomsConfig{AdminURL: cfg.AdminURL, Steps: []int{n}, Hold: cfg.Hold, Rate: cfg.Rate,
				JitterLimit: 5 * time.Millisecond, Scheduling: cfg.Scheduling, Caller: cfg.Caller, NoBare: true, ByBox: true,
				UDPPort: c.UDPPort, Logger: cfg.Logger})
			if err != nil {
				return out, err
			}
			if out.Setup == nil {
				for _, s := range rep.Setup {
					if !strings.Contains(s, " calls: ") && !strings.Contains(s, " calls, ") && !strings.HasPrefix(s, "largest") &&
						!strings.HasPrefix(s, "the box's media") {
						out.Setup = append(out.Setup, s)
					}
				}
			}
			if len(st) == 0 {
				return out, fmt.Errorf("bench capacity: the %d-call browser step measured nothing", n)
			}
			s := st[0]
			c.Steps = append(c.Steps, s)
			if s.Lost > 0 || s.Join.Errors > 0 || s.BoxPacing.N == 0 || s.BoxPacing.P99 >= 5*time.Millisecond {
				climbing[i] = false
			} else {
				c.Largest = n
			}
		}
	}
	return out, nil
}

// Print writes the climbs and the capacity they found.
func (r CapacityReport) Print(w io.Writer) {
	if r.RoomsClimbs != nil {
		r.printRooms(w)
		return
	}
	if r.Mixed != nil {
		r.printMixed(w)
		return
	}
	fmt.Fprintln(w, "Capacity: concurrent SIP calls until box pacing p99 passes 5 ms or a frame is lost")
	for _, s := range r.Setup {
		if strings.HasPrefix(s, "the box's RTP:") {
			continue // each climb says its own
		}
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "media\tcalls\tup\tfailed\tbox setup p95 ms\tpacing p99 ms\tpacing max ms\tlost\tdropped\tcpu %/call\tcaller cpu %\tmodel cpu %\tPostgreSQL cpu %\theap KB/call\tsendmmsg/packet\trecvmmsg/packet\t")
	for _, c := range r.Climbs {
		for _, s := range c.Steps {
			tx, rx := "-", "-"
			if st := s.Shared; st.Sent > 0 && st.Received > 0 {
				tx = fmt.Sprintf("%.3f", float64(st.SendCalls)/float64(st.Sent))
				rx = fmt.Sprintf("%.3f", float64(st.ReadCalls)/float64(st.Received))
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%.2f\t%.0f\t%.0f\t%.0f\t%d\t%s\t%s\t\n", c.Name, s.Calls, s.Established, s.Failed,
				ms(s.BoxSetup.P95), ms(s.Pacing.P99), ms(s.Pacing.Max), s.Lost, s.Dropped, 100*s.CPUPerCall, 100*s.CallerCPU, 100*s.ModelCPU, 100*max(s.CPU.DB, 0), s.HeapPerCall/1024, tx, rx)
		}
	}
	tw.Flush()
	for _, c := range r.Climbs {
		var kb int64
		for _, s := range c.Steps {
			if s.Calls == c.Largest {
				kb = s.HeapPerCall / 1024
			}
		}
		fmt.Fprintf(w, "%s: %d calls held on %d processors, %.0f calls per core, %d KB of heap and stacks per call\n",
			c.Name, c.Largest, r.Procs, float64(c.Largest)/float64(max(r.Procs, 1)), kb)
	}
}

// printRooms writes the browser climbs.
func (r CapacityReport) printRooms(w io.Writer) {
	fmt.Fprintln(w, "Capacity: concurrent browser calls on the embedded WebRTC peer until box pacing p99 passes 5 ms or a packet is lost")
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "media\tcalls\tjoined\terrors\tjoin p95 ms\tpacing p99 ms\tpacing max ms\tcallers' jitter p99 ms\tlost\tcpu %/call\tcaller cpu %\tmodel cpu %\tPostgreSQL cpu %\tKB/call\tsendmmsg/packet\trecvmmsg/packet\t")
	for _, c := range r.RoomsClimbs {
		for _, s := range c.Steps {
			tx, rx := "-", "-"
			if s.Sends.Sent > 0 {
				tx = fmt.Sprintf("%.3f", float64(s.Sends.SendCalls)/float64(s.Sends.Sent))
			}
			if s.ReadPackets > 0 {
				rx = fmt.Sprintf("%.3f", float64(s.Reads)/float64(s.ReadPackets))
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.2f\t%.0f\t%.0f\t%.0f\t%d\t%s\t%s\t\n", c.Name, s.N, s.Join.N, s.Join.Errors,
				ms(s.Join.P95), ms(s.BoxPacing.P99), ms(s.BoxPacing.Max), ms(s.Jitter.P99), s.Lost, 100*s.CPUPerCall, 100*s.CallerCPU, 100*s.ModelCPU,
				100*max(s.CPU.DB, 0), s.MemPerCall/1024, tx, rx)
		}
	}
	tw.Flush()
	for _, c := range r.RoomsClimbs {
		var kb int64
		for _, s := range c.Steps {
			if s.N == c.Largest {
				kb = s.MemPerCall / 1024
			}
		}
		fmt.Fprintf(w, "%s: %d calls held on %d processors, %.0f calls per core, %d KB resident per call\n",
			c.Name, c.Largest, r.Procs, float64(c.Largest)/float64(max(r.Procs, 1)), kb)
	}
}

// printMixed writes the mixed climb.
func (r CapacityReport) printMixed(w io.Writer) {
	fmt.Fprintln(w, "Capacity: concurrent calls, half SIP and half browser, with text turns, until box pacing p99 passes 5 ms or a frame is lost")
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "calls\tSIP up\tfailed\tSIP pacing p99 ms\tlost\tdropped\tbrowser up\tfailed\tbrowser pacing p99 ms\tlost\ttext turns\terrors\tfirst token p95 ms\tcpu %/call\tcallers cpu %\tmodel cpu %\tPostgreSQL cpu %\theap KB/call\t")
	for _, s := range r.Mixed {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%d\t%.1f\t%.2f\t%.0f\t%.0f\t%.0f\t%d\t\n", s.Calls,
			s.SIP.Up, s.SIP.Failed, ms(s.SIP.Pacing.P99), s.SIP.Lost, s.SIP.Dropped,
			s.Rooms.Up, s.Rooms.Failed, ms(s.Rooms.Pacing.P99), s.Rooms.Lost,
			s.Text.N, s.Text.Errors, ms(s.Text.P95), 100*s.CPUPerCall, 100*s.CallerCPU, 100*s.ModelCPU, 100*max(s.CPU.DB, 0), s.HeapPerCall/1024)
	}
	tw.Flush()
	for _, s := range r.Mixed {
		if s.Text.FirstError != "" {
			fmt.Fprintf(w, "  %d calls: first of %d text turn errors: %s\n", s.Calls, s.Text.Errors, s.Text.FirstError)
		}
	}
	var kb int64
	for _, s := range r.Mixed {
		if s.Calls == r.MixedLargest {
			kb = s.HeapPerCall / 1024
		}
	}
	fmt.Fprintf(w, "mixed: %d calls held on %d processors, %.0f calls per core, %d KB of heap and stacks per call\n",
		r.MixedLargest, r.Procs, float64(r.MixedLargest)/float64(max(r.Procs, 1)), kb)
}
