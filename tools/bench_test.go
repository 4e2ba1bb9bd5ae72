package tools_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/tools/toolstest"
)

// BenchmarkHTTPToolOverhead measures what the box adds to one http tool
// call (arguments, URL, request, response cap, result) over the order
// service called directly with a plain client, interleaved in one run so
// both see the same machine. It reports each path's p50 and p95 and the
// box's overhead at each (tool minus direct), in microseconds.
//
//	go test -run '^$' -bench HTTPToolOverhead -benchtime 20000x ./tools/
func BenchmarkHTTPToolOverhead(b *testing.B) {
	orders := toolstest.NewOrders(b)
	cfg, err := config.Parse([]byte("agents:\n  receptionist:\n    model: openai/chat\n" + orders.ToolYAML("")))
	if err != nil {
		b.Fatal(err)
	}
	svc, err := toolsNew(cfg.Agents, toolstest.Env())
	if err != nil {
		b.Fatal(err)
	}
	tool := svc.List(context.Background(), "receptionist")[0]
	direct := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	ctx := context.Background()
	call := agent.ToolCall{ID: "c", Name: "order_status", Arguments: `{"orderId":"A-1001"}`}
	want := toolstest.Answer("A-1001")
	viaTool := make([]time.Duration, 0, b.N)
	viaDirect := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, orders.URL+"/orders/A-1001", nil)
		req.Header.Set("Authorization", "Bearer "+toolstest.Token)
		resp, err := direct.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		viaDirect = append(viaDirect, time.Since(t0))
		if string(body) != want {
			b.Fatalf("direct %q", body)
		}
		t1 := time.Now()
		out, err := tool.Run(ctx, call, agent.Scope{Agent: "receptionist"})
		viaTool = append(viaTool, time.Since(t1))
		if err != nil || out != want {
			b.Fatalf("tool %q %v", out, err)
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(viaDirect, 0.50), "direct-p50-µs")
	b.ReportMetric(pct(viaDirect, 0.95), "direct-p95-µs")
	b.ReportMetric(pct(viaTool, 0.50), "tool-p50-µs")
	b.ReportMetric(pct(viaTool, 0.95), "tool-p95-µs")
	b.ReportMetric(pct(viaTool, 0.50)-pct(viaDirect, 0.50), "overhead-p50-µs")
	b.ReportMetric(pct(viaTool, 0.95)-pct(viaDirect, 0.95), "overhead-p95-µs")
}
