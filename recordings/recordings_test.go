package recordings_test

import (
	"context"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/objectstore"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/recordings"
)

func newService(t *testing.T) (*recordings.Service, objectstore.Store, *pgxpool.Pool) {
	t.Helper()
	store, err := objectstore.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.Pool(t)
	svc, err := recordings.New(recordings.Config{Pool: pool, Store: store, SpoolDir: t.TempDir(), Logger: pgtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return svc, store, pool
}

func tone(n int, hz, rate float64, at int) []int16 {
	f := make([]int16, n)
	for i := range f {
		f[i] = int16(8000 * math.Sin(2*math.Pi*hz*float64(at+i)/rate))
	}
	return f
}

func rms(pcm []int16) float64 {
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(max(1, len(pcm))))
}

// A take keeps the caller left and the agent right, frame for frame: the
// caller's frame that arrived while an agent frame played sits beside it,
// a missing caller frame is silence, and the kept file reads back as it
// was played.
func TestTakeKeepsBothChannelsInStep(t *testing.T) {
	t.Parallel()
	svc, _, _ := newService(t)
	ctx := context.Background()
	const rate, n = 16000, 320
	take, err := svc.Begin("call_1", rate)
	if err != nil {
		t.Fatal(err)
	}
	// 50 frames: the agent speaks in frames 0-24, the caller in 30-49;
	// the caller's frame 40 never arrives.
	for i := range 50 {
		agent := make([]int16, n)
		if i < 25 {
			agent = tone(n, 440, rate, i*n)
		}
		take.Agent(agent)
		caller := make([]int16, n)
		if i >= 30 {
			caller = tone(n, 300, rate, i*n)
		}
		if i != 40 {
			take.Caller(caller)
		}
	}
	in, err := take.Keep(ctx, recordings.Meta{AgentID: "a", UserID: "u", Retention: time.Hour,
		Marks: []recordings.Mark{{Turn: 1, Role: "assistant", StartMs: 0, EndMs: 500}}})
	if err != nil {
		t.Fatal(err)
	}
	if in.DurationMs != 1000 || in.SampleRate != rate || len(in.Marks) != 1 {
		t.Fatalf("kept %+v", in)
	}
	rc, got, err := svc.Open(ctx, "call_1")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	caller, agent, err := recordings.ReadChannels(data, got.Format, rate)
	if err != nil {
		t.Fatal(err)
	}
	if len(agent) != 50*n {
		t.Fatalf("read %d samples a channel, want %d", len(agent), 50*n)
	}
	frame := func(pcm []int16, i int) float64 { return rms(pcm[i*n : (i+1)*n]) }
	for i := range 50 {
		// Opus takes a frame or so to settle in and out of a sound.
		if i == 0 || i == 25 || i == 26 || i == 30 || i == 31 || i >= 39 && i <= 42 {
			continue
		}
		// Speech is loud (RMS about 5,700); the other channel stays 25 dB
		// below it: the channels do not bleed into each other.
		if rms := frame(agent, i); (i < 25) != (rms > 1000) || i >= 25 && rms > 300 {
			t.Errorf("agent frame %d: rms %.0f", i, rms)
		}
		if rms := frame(caller, i); (i >= 30) != (rms > 1000) || i < 30 && rms > 300 {
			t.Errorf("caller frame %d: rms %.0f", i, rms)
		}
	}
	if frame(caller, 49) < 1000 {
		t.Error("the caller's last frame is missing: a lost frame shifted the channel")
	}
}

// A recording past its retention, and one whose person was erased, are
// gone from the API at once and from the store after the purge; others
// stay.
func TestPurgeRemovesExpiredAndErased(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	ctx := context.Background()
	keep := func(id, user string, retention time.Duration) recordings.Info {
		take, err := svc.Begin(id, 8000)
		if err != nil {
			t.Fatal(err)
		}
		take.Agent(make([]int16, 160))
		in, err := take.Keep(ctx, recordings.Meta{AgentID: "a", UserID: user, Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	keep("old", "ann", time.Minute)
	keep("erased", "bob", time.Hour)
	format := keep("kept", "ann", time.Hour).Format
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.EraseTx(ctx, tx, "a", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, "erased"); !errors.Is(err, recordings.ErrNotFound) {
		t.Fatalf("erased: %v, want not found at once", err)
	}
	var jobs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.river_job WHERE kind = $1`, recordings.KindPurge).Scan(&jobs); err != nil || jobs != 1 {
		t.Fatalf("purge jobs queued by the erasure: %d (%v)", jobs, err)
	}
	// Two minutes on: "old" is past its retention.
	n, err := svc.Purge(ctx, time.Now().Add(2*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("purged %d (%v), want 2", n, err)
	}
	for id, want := range map[string]bool{"old": false, "erased": false, "kept": true} {
		_, _, err := store.Get(ctx, "recordings/"+id+"."+format)
		if (err == nil) != want {
			t.Errorf("%s in the store: %v, want kept %v", id, err, want)
		}
	}
	if _, err := svc.Get(ctx, "kept"); err != nil {
		t.Fatalf("kept: %v", err)
	}
}
