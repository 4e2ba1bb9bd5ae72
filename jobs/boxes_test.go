package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/postgres/pgtest"
)

type pingArgs struct{ N int }

func (pingArgs) Kind() string { return "ping" }

type pingWorker struct {
	river.WorkerDefaults[pingArgs]
	done chan int
}

func (w *pingWorker) Work(_ context.Context, j *river.Job[pingArgs]) error {
	w.done <- j.Args.N
	return nil
}

// A job left running by a box that died is worked again within seconds by
// a live box; a job running on a live box is left alone.
func TestJobsOfADeadBoxAreHandedBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	reg := jobs.NewRegistry()
	w := &pingWorker{done: make(chan int, 4)}
	river.AddWorker(reg.Workers(), w)
	client, err := jobs.NewBoxClient(pool, reg, pgtest.Logger(t), "box_alive")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for n := 1; n <= 2; n++ {
		res, err := client.Insert(ctx, pingArgs{N: n}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Job.ID)
	}
	// Job 1 was taken by a box that died 20 s ago; job 2 by one still alive.
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.boxes (id, lease_until) VALUES
		('box_dead', now() - interval '20 seconds'), ('box_busy', now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	for i, box := range []string{"box_dead", "box_busy"} {
		if _, err := pool.Exec(ctx, `UPDATE stackbone_platform.river_job SET state = 'running', attempt = 1, attempted_at = now(),
			attempted_by = ARRAY[$2] WHERE id = $1`, ids[i], box); err != nil {
			t.Fatal(err)
		}
	}
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	go jobs.Heartbeat(hctx, pool, "box_alive", pgtest.Logger(t))
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(context.WithoutCancel(ctx))
	select {
	case n := <-w.done:
		if n != 1 {
			t.Fatalf("worked job %d, want the dead box's job 1", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the dead box's job was not worked again")
	}
	var state string
	if err := pool.QueryRow(ctx, `SELECT state FROM stackbone_platform.river_job WHERE id = $1`, ids[1]).Scan(&state); err != nil || state != "running" {
		t.Fatalf("the live box's job: %s %v", state, err)
	}
	var alive bool
	if err := pool.QueryRow(ctx, `SELECT lease_until > now() FROM stackbone_platform.boxes WHERE id = 'box_alive'`).Scan(&alive); err != nil || !alive {
		t.Fatalf("the live box's heartbeat: %v %v", alive, err)
	}
}
