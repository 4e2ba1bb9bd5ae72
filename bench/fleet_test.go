package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/postgres/pgtest"
)

// TestCallsLoadCarriesMediaBothWays runs a small step of the calls load
// with the fleet generator against the whole box: every call is answered,
// the box's packets arrive without a gap in their sequence, and the box
// heard the callers (their turns were answered and recorded). While they
// are held SIPp places a burst of calls, each answered and hung up, whose
// setup the box and SIPp both measured.
func TestCallsLoadCarriesMediaBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole box and real-time calls: not in -short")
	}
	if _, err := exec.LookPath("sipp"); err != nil {
		t.Skip("sipp is not installed (Debian package sip-tester; scripts/test installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const calls, hold, burst = 4, 5 * time.Second, 6
	rep, err := Calls(ctx, CallsConfig{AdminURL: pgtest.URL(t), Steps: []int{calls}, Hold: hold, Rate: 20, NoHog: true,
		BurstCalls: burst, BurstRate: 10, BurstHold: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 1 {
		t.Fatalf("steps: %+v", rep.Steps)
	}
	s := rep.Steps[0]
	if s.Established != calls || s.Failed != 0 {
		t.Fatalf("established %d, failed %d, want %d and 0", s.Established, s.Failed, calls)
	}
	// 50 packets a second per call in the window; a few may fall outside it.
	if want := int64(calls * 50 * int(hold/time.Second) * 8 / 10); s.Packets < want {
		t.Fatalf("the generator measured %d of the box's packets, want at least %d", s.Packets, want)
	}
	if s.Lost != 0 || s.Dropped != 0 {
		t.Fatalf("lost %d, dropped %d", s.Lost, s.Dropped)
	}
	if s.Unfinished != 0 {
		t.Fatalf("%d calls had not completed two minutes after their hang-up", s.Unfinished)
	}
	// The callers speak 1 s of each 3.5 s: every call has a turn answered.
	if s.Turns < calls {
		t.Fatalf("%d turns answered with metrics, want at least %d", s.Turns, calls)
	}
	if s.Jitter.N == 0 {
		t.Fatal("no arrival intervals measured")
	}
	if b := s.Burst; b == nil || b.Succeeded != burst || b.Failed != 0 || b.Setup.N != burst || b.BoxSetup.P50 <= 0 || b.BoxSetup.Max < b.BoxSetup.P50 {
		t.Fatalf("the burst: %+v, want %d calls answered and hung up, each setup measured by SIPp and the box", s.Burst, burst)
	}
}

// TestModelProcessServesAndReports runs the scripted provider as bench
// model does: it says where it listens, answers there, and reports what it
// served once its input ends.
func TestModelProcessServesAndReports(t *testing.T) {
	in, feed := io.Pipe()
	out, sink := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- RunModel(context.Background(), ModelConfig{FailEvery: 2}, in, sink)
		sink.Close()
	}()
	lines := bufio.NewScanner(out)
	var first modelLine
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &first) != nil || !strings.HasPrefix(first.URL, "http://127.0.0.1:") {
		t.Fatalf("first line %q", lines.Text())
	}
	statuses := map[int]int{}
	for i := range 4 {
		// The answer is the model's: the memory extractor's is its
		// operations.
		model, want := "bench", "Sure, I can help."
		if i >= 2 {
			model, want = "extractor", "Called for help."
		}
		res, err := http.Post(first.URL+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		statuses[res.StatusCode]++
		if res.StatusCode == 200 && !strings.Contains(string(body), want) {
			t.Fatalf("%s answered %s, want %q in it", model, body, want)
		}
	}
	if statuses[200] != 2 || statuses[500] != 2 {
		t.Fatalf("statuses %v, want two answers and two faults (one in two fails)", statuses)
	}
	feed.Close()
	var last modelLine
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &last) != nil {
		t.Fatalf("last line %q", lines.Text())
	}
	if last.Faulted != 2 {
		t.Fatalf("reported %d faults, want 2", last.Faulted)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
