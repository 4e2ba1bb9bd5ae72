package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/voice"
)

// TestRoomsCallerMeasuresBrowserCalls runs a step of browser calls as
// `stackbone bench caller --rooms` does, against the whole box and then
// against the bare PeerConnections: its lines open and close the window,
// and its step carries the agent's packets (none missing), the joins and
// the calls the box opened, which the box recorded and answered.
func TestRoomsCallerMeasuresBrowserCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole box and real-time browser calls: not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool, drop, err := Database(ctx, pgtest.URL(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	model := startModel()
	defer model.Close()
	roomsModel(model)
	c, err := config.Parse([]byte("agents:\n  support:\n    model: openai/bench\n    instructions: You answer the phone.\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.Providers = map[string]config.Provider{"openai": {BaseURL: model.URL()}}
	served, stop, err := StartBox(ctx, pool, c, "bench-key", box.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	bare, err := startBarePeers()
	if err != nil {
		t.Fatal(err)
	}
	defer bare.close()

	const calls, hold = 3, 4 * time.Second
	for _, target := range []RoomsTarget{{Base: served.URL, Key: served.Key}, {Base: bare.url, Bare: bare.offerURL()}} {
		out, sink := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- RunRoomsCaller(ctx, RoomsCallerConfig{Target: target, Calls: calls, Rate: 10, Hold: hold}, sink)
			sink.Close()
		}()
		var windows []string
		var step *roomsCallerStep
		lines := bufio.NewScanner(out)
		lines.Buffer(make([]byte, 1<<20), 1<<24)
		for lines.Scan() {
			var l callerLine[roomsCallerStep]
			if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
				t.Fatalf("line %q: %v", lines.Text(), err)
			}
			if l.Window != "" {
				windows = append(windows, l.Window)
			}
			if l.Step != nil {
				step = l.Step
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(windows) != 2 || windows[0] != "start" || windows[1] != "end" || step == nil {
			t.Fatalf("%s: windows %v, step %v", target.Base, windows, step)
		}
		if step.Join.N != calls || step.Join.Errors != 0 {
			t.Fatalf("%s: joins %+v", target.Base, step.Join)
		}
		// 50 agent packets a second per call in the window; a few may
		// fall outside it.
		if want := int64(calls * 50 * int(hold/time.Second) * 8 / 10); step.Packets < want || step.Lost != 0 || step.Jitter.N == 0 {
			t.Fatalf("%s: %d packets (want at least %d), %d lost, %d gaps measured", target.Base, step.Packets, want, step.Lost, step.Jitter.N)
		}
		if target.Bare != "" {
			if len(step.CallIDs) != 0 {
				t.Fatalf("bare peers opened calls %v", step.CallIDs)
			}
			continue
		}
		if len(step.CallIDs) != calls {
			t.Fatalf("call IDs %v, want %d", step.CallIDs, calls)
		}
		// Each caller spoke in the window: the box heard and answered it.
		for _, id := range step.CallIDs {
			var rec voice.CallRecord
			for deadline := time.Now().Add(30 * time.Second); ; {
				if rec, err = served.Calls.Get(ctx, id); err == nil && rec.Status == "ended" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("call %s: %v, status %q", id, err, rec.Status)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(rec.Metrics) == 0 {
				t.Fatalf("call %s ended without an answered turn", id)
			}
		}
	}
}
