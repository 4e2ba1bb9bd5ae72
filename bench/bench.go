// Package bench is the box's load tool: it drives real code paths (the Go
// services and the HTTP API on loopback) against a real PostgreSQL, and
// reports latency percentiles side by side with a baseline measured in the
// same run, because this machine is shared and noisy.
//
//	rep, err := bench.Memory(ctx, bench.MemoryConfig{AdminURL: url})
//	rep.Print(os.Stdout)
package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/stackbone/box/provider/providertest"
)

// Figures are the latency percentiles of one scenario.
type Figures struct {
	Name     string
	Baseline bool
	N        int
	Errors   int
	P50      time.Duration
	P90      time.Duration
	P95      time.Duration
	P99      time.Duration
	Max      time.Duration
	// FirstError is the first of the errors, for the report.
	FirstError string
}

// Report is the result of one load run.
type Report struct {
	Title   string
	Setup   []string
	Figures []Figures
}

// Print writes the report as a table.
func (r Report) Print(w io.Writer) {
	fmt.Fprintln(w, r.Title)
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tn\terrors\tp50 ms\tp95 ms\tp99 ms\tmax ms\t")
	for _, f := range r.Figures {
		name := f.Name
		if f.Baseline {
			name = "(baseline) " + name
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, f.N, f.Errors, ms(f.P50), ms(f.P95), ms(f.P99), ms(f.Max))
	}
	tw.Flush()
	for _, f := range r.Figures {
		if f.FirstError != "" {
			fmt.Fprintf(w, "  %s: first of %d errors: %s\n", f.Name, f.Errors, f.FirstError)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// recorder collects latencies from many goroutines.
type recorder struct {
	mu     sync.Mutex
	lat    []time.Duration
	errors int
	first  error // the first error, for the report
}

func (r *recorder) add(d time.Duration, err error) {
	r.mu.Lock()
	if err != nil {
		r.errors++
		if r.first == nil {
			r.first = err
		}
	} else {
		r.lat = append(r.lat, d)
	}
	r.mu.Unlock()
}

func (r *recorder) figures(name string, baseline bool) Figures {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := slices.Clone(r.lat)
	slices.Sort(l)
	f := Figures{Name: name, Baseline: baseline, N: len(l), Errors: r.errors}
	if r.first != nil {
		f.FirstError = r.first.Error()
	}
	if len(l) == 0 {
		return f
	}
	f.P50, f.P90, f.P95, f.P99, f.Max = pct(l, 50), pct(l, 90), pct(l, 95), pct(l, 99), l[len(l)-1]
	return f
}

// pct is the nearest-rank percentile of sorted l.
func pct(l []time.Duration, p int) time.Duration {
	i := (len(l)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return l[i-1]
}

// drive runs op n times from c goroutines, recording each latency. worker is
// the goroutine's index, i the operation's index within that worker.
func drive(n, c int, rec *recorder, op func(worker, i int) error) {
	var wg sync.WaitGroup
	per := n / c
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				start := time.Now()
				err := op(w, i)
				rec.add(time.Since(start), err)
			}
		}(w)
	}
	wg.Wait()
}

// startModel starts the scripted provider with the profiler label
// side=model on its server's goroutines, so a CPU profile of a load run
// tells the stand-in's work from the box's.
func startModel() *providertest.Server {
	var s *providertest.Server
	pprof.Do(context.Background(), pprof.Labels("side", "model"), func(context.Context) { s = providertest.Start() })
	return s
}

// schedWaits is a snapshot of the runtime's histogram of how long
// goroutines waited runnable before they ran (runtime/metrics, sampled).
type schedWaits []uint64

// schedBuckets are that histogram's bucket edges (seconds).
var schedBuckets []float64

func readSchedWaits() schedWaits {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	h := s[0].Value.Float64Histogram()
	schedBuckets = h.Buckets
	return slices.Clone(h.Counts)
}

// figures is the waits since earlier as percentiles, each to its bucket's
// upper edge (Max: the highest non-empty bucket's lower edge). A load on
// the cores shows here before it shows in the work: a goroutine that waits
// milliseconds to run sends its packet milliseconds late.
func (w schedWaits) figures(earlier schedWaits, name string) Figures {
	f := Figures{Name: name}
	if len(w) == 0 || len(w) != len(earlier) {
		return f
	}
	d := make([]uint64, len(w))
	var total uint64
	for i := range w {
		d[i] = w[i] - earlier[i]
		total += d[i]
	}
	f.N = int(total)
	edge := func(i int) time.Duration {
		e := schedBuckets[min(i+1, len(schedBuckets)-1)]
		if math.IsInf(e, 1) {
			e = schedBuckets[i]
		}
		return time.Duration(e * float64(time.Second))
	}
	var seen uint64
	for i, n := range d {
		if n == 0 {
			continue
		}
		seen += n
		for _, p := range []struct {
			at  float64
			out *time.Duration
		}{{0.50, &f.P50}, {0.95, &f.P95}, {0.99, &f.P99}} {
			if *p.out == 0 && float64(seen) >= p.at*float64(total) {
				*p.out = edge(i)
			}
		}
		f.Max = time.Duration(max(schedBuckets[i], 0) * float64(time.Second))
	}
	return f
}
