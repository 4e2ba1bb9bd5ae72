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
	Logger     *slog.Logger
}

// CapacityClimb is one media path's climb.
type CapacityClimb struct {
	Name    string
	RTPPort int // the box's sip.rtpPort
	Steps   []CallStep
	Largest int // the largest step that held (0: none)
}

// CapacityReport is the result of a capacity run.
type CapacityReport struct {
	Setup  []string
	Procs  int
	Climbs []CapacityClimb
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

// Print writes the climbs and the capacity they found.
func (r CapacityReport) Print(w io.Writer) {
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
