package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/campaigns"
	"github.com/stackbone/box/jobs"
)

// CampaignsConfig sets up `bench campaigns`.
type CampaignsConfig struct {
	// AdminURL is a server where the run may create and drop its own
	// database. Required.
	AdminURL string
	// Contacts in the campaign (default 10,000), MaxConcurrent its cap
	// (default 100).
	Contacts, MaxConcurrent int
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// errCallExists stands for voice.ErrCallExists: the run's dials never
// refuse.
var errCallExists = errors.New("call exists")

// Campaigns measures what the campaign machinery costs per attempt, with
// calls that end the moment they are dialled so nothing but the
// machinery is measured: the scheduler's passes (due contacts claimed
// under the campaign's lock, attempt rows and River jobs inserted), the
// attempt jobs (the dial under the attempt's row lock) and the call ends
// (the contact moved on in the end's transaction), at Contacts contacts,
// beside a database round trip and a one-row update in a transaction.
func Campaigns(ctx context.Context, cfg CampaignsConfig) (Report, error) {
	if cfg.Contacts <= 0 {
		cfg.Contacts = 10_000
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := cfg.Logger
	pool, drop, err := Database(ctx, cfg.AdminURL, 40)
	if err != nil {
		return Report{}, err
	}
	defer drop()

	var dialRec, endRec, passRec, perAttempt recorder
	var svc *campaigns.Service
	var ends sync.WaitGroup
	var dials atomic.Int64
	// A call ends at once, in a transaction of its own as the box's call
	// end is; the dial's own time is what the attempt job spends.
	dial := func(ctx context.Context, r campaigns.DialRequest) error {
		dials.Add(1)
		start := time.Now()
		ends.Add(1)
		go func() {
			defer ends.Done()
			// The call outlives the job that dialled it.
			ctx := context.WithoutCancel(ctx)
			start := time.Now()
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				return svc.CallEnded(ctx, tx, r.ID, "completed", "", true)
			})
			endRec.add(time.Since(start), err)
			svc.Wake()
		}()
		dialRec.add(time.Since(start), nil)
		return nil
	}
	onPass := func(n int, d time.Duration) {
		passRec.add(d, nil)
		for range n {
			perAttempt.add(d/time.Duration(n), nil)
		}
	}
	svc, err = campaigns.New(campaigns.Config{Pool: pool, Dial: dial, CallExists: errCallExists, Logger: log, OnPass: onPass})
	if err != nil {
		return Report{}, err
	}
	c, err := svc.Create(ctx, campaigns.NewCampaign{Name: "bench", Agent: "bench", MaxConcurrent: cfg.MaxConcurrent,
		Windows: []campaigns.Window{{Start: "00:00", End: "24:00"}}, Zone: "UTC"}, "bench")
	if err != nil {
		return Report{}, err
	}
	in := make([]campaigns.ContactInput, cfg.Contacts)
	lines := make([]int, cfg.Contacts)
	for i := range in {
		in[i] = campaigns.ContactInput{Number: fmt.Sprintf("+1212%07d", i), Variables: map[string]string{"name": fmt.Sprintf("Person %d", i)}}
		lines[i] = i + 1
	}
	upload := time.Now()
	if _, err := svc.AddContacts(ctx, c.ID, in, lines); err != nil {
		return Report{}, err
	}
	uploaded := time.Since(upload)
	log.Info("contacts added", "contacts", cfg.Contacts, "ms", uploaded.Milliseconds())

	reg := jobs.NewRegistry()
	svc.AddWorkers(reg)
	client, err := jobs.NewClient(pool, reg, log)
	if err != nil {
		return Report{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := client.Start(runCtx); err != nil {
		return Report{}, err
	}
	defer func() { _ = client.Stop(context.WithoutCancel(ctx)) }()
	if _, err := svc.Start(ctx, c.ID); err != nil {
		return Report{}, err
	}
	cpu0 := processCPU()
	began := time.Now()
	go svc.Run(runCtx)
	for {
		got, err := svc.Get(ctx, c.ID)
		if err != nil {
			return Report{}, err
		}
		if got.Status == campaigns.StatusFinished {
			break
		}
		if time.Since(began) > 10*time.Minute {
			return Report{}, fmt.Errorf("bench campaigns: not finished after 10 minutes (%v)", got.Progress.ByState)
		}
		time.Sleep(50 * time.Millisecond) // the campaign runs on its own; this only watches
	}
	elapsed := time.Since(began)
	cpu := processCPU() - cpu0
	ends.Wait()

	var base, update recorder
	drive(2000, 1, &base, func(int, int) error {
		var one int
		return pool.QueryRow(ctx, "SELECT 1").Scan(&one)
	})
	drive(2000, 1, &update, func(_, i int) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE stackbone_platform.campaign_contacts SET updated_at = now() WHERE campaign_id = $1 AND seq = $2`,
				c.ID, i%cfg.Contacts+1)
			return err
		})
	})
	attempts := perAttempt.figures("", false).N
	rep := Report{
		Title: fmt.Sprintf("Campaign scheduler: %d contacts, cap %d, calls that end at once", cfg.Contacts, cfg.MaxConcurrent),
		Setup: []string{
			fmt.Sprintf("upload of %d contacts (checked, copied in one transaction): %d ms", cfg.Contacts, uploaded.Milliseconds()),
			fmt.Sprintf("%d attempts dialled in %.1f s: %.0f attempts/s; process CPU %.3f ms per attempt (scheduler, jobs, call ends and PostgreSQL's client side)",
				dials.Load(), elapsed.Seconds(), float64(dials.Load())/elapsed.Seconds(), float64(cpu.Microseconds())/1000/float64(max(dials.Load(), 1))),
			fmt.Sprintf("%d attempts scheduled in %d passes", attempts, passRec.figures("", false).N),
		},
		Figures: []Figures{
			base.figures("db round trip (SELECT 1)", true),
			update.figures("one-row UPDATE in a transaction", true),
			perAttempt.figures("schedule: per attempt queued (a pass's time / its attempts)", false),
			passRec.figures("schedule: one pass (claim, attempt rows, River jobs)", false),
			dialRec.figures("attempt job: dial under the attempt's row lock", false),
			endRec.figures("call end: the contact moved on (the end's transaction)", false),
		},
	}
	if f := rep.Figures[5]; f.Errors > 0 {
		return rep, fmt.Errorf("bench campaigns: %d call ends failed: %s", f.Errors, f.FirstError)
	}
	return rep, nil
}
