package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/postgres/notify"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/webhooks"
)

// newService is the webhooks service on pool.
func newService(t *testing.T, pool *pgxpool.Pool) *webhooks.Service {
	t.Helper()
	svc, err := webhooks.New(webhooks.Config{Pool: pool, Logger: pgtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// subscribe subscribes a URL nobody listens on to events.
func subscribe(t *testing.T, svc *webhooks.Service, events ...string) {
	t.Helper()
	if _, err := svc.Create(context.Background(), webhooks.NewSubscription{URL: "http://127.0.0.1:9/a", Events: events}, "test"); err != nil {
		t.Fatal(err)
	}
}

// The signature of the Standard Webhooks specification's example, and
// Verify's refusals: another body, another secret, an old timestamp.
func TestSignAndVerify(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	sig, err := webhooks.Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	if err != nil || sig != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature %q (%v)", sig, err)
	}
	h := http.Header{}
	h.Set(webhooks.HeaderID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(webhooks.HeaderTimestamp, "1614265330")
	h.Set(webhooks.HeaderSignature, "v1,bm90IHRoaXMgb25l "+sig) // a rotated secret's signature first
	if err := webhooks.Verify(secret, h, body, ts.Add(time.Minute), 0); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if err := webhooks.Verify(secret, h, []byte(`{"test": 1}`), ts, 0); !errors.Is(err, webhooks.ErrSignature) {
		t.Fatalf("another body: %v", err)
	}
	if err := webhooks.Verify("whsec_c2VjcmV0", h, body, ts, 0); !errors.Is(err, webhooks.ErrSignature) {
		t.Fatalf("another secret: %v", err)
	}
	if err := webhooks.Verify(secret, h, body, ts.Add(6*time.Minute), 0); !errors.Is(err, webhooks.ErrTimestamp) {
		t.Fatalf("an old message: %v", err)
	}
}

// Emit in a transaction: the event and its deliveries exist only if the
// transaction commits, only subscribers of the type get one, and nothing
// is written for a type nobody subscribed to.
func TestEmitFollowsTheTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	svc := newService(t, pool)
	subscribe(t, svc, webhooks.CallEnded, webhooks.MemorySaved)
	if _, err := svc.Create(ctx, webhooks.NewSubscription{URL: "http://127.0.0.1:9/b", Events: []string{webhooks.CallEnded}}, "test"); err != nil {
		t.Fatal(err)
	}
	count := func(sql string) int {
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rolledBack := errors.New("rolled back")
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := svc.Emit(ctx, tx, webhooks.CallEnded, map[string]any{"callId": "c1"}, nil); err != nil {
			return err
		}
		return rolledBack
	})
	if !errors.Is(err, rolledBack) || count(`SELECT count(*) FROM stackbone_platform.webhook_events`) != 0 ||
		count(`SELECT count(*) FROM stackbone_platform.river_job WHERE kind = 'webhook_deliver'`) != 0 {
		t.Fatalf("a rolled-back emit left rows (%v)", err)
	}
	// An event that cannot be written (JSON PostgreSQL refuses: a NUL in
	// a string) is reported, and the change it reports stays, with
	// neither the event nor its deliveries.
	if _, err := pool.Exec(ctx, `CREATE TABLE emit_probe (id text)`); err != nil {
		t.Fatal(err)
	}
	var emitErr error
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO emit_probe VALUES ('kept')`); err != nil {
			return err
		}
		emitErr = svc.Emit(ctx, tx, webhooks.CallEnded, map[string]any{"callId": "bad\x00"}, nil)
		_, err := tx.Exec(ctx, `INSERT INTO emit_probe VALUES ('after')`)
		return err
	}); err != nil {
		t.Fatalf("the transaction after a failed emit: %v", err)
	}
	if emitErr == nil || count(`SELECT count(*) FROM emit_probe`) != 2 || count(`SELECT count(*) FROM stackbone_platform.webhook_events`) != 0 ||
		count(`SELECT count(*) FROM stackbone_platform.webhook_deliveries`) != 0 {
		t.Fatalf("a failed emit (%v): want it reported, the transaction's rows kept and no event", emitErr)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return svc.Emit(ctx, tx, webhooks.CallEnded, map[string]any{"callId": "c2"}, map[string]any{"transcript": []string{"hello"}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Emit(ctx, nil, webhooks.MemorySaved, map[string]any{"agentId": "a"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := svc.Emit(ctx, nil, webhooks.CallStarted, map[string]any{"callId": "c3"}, nil); err != nil {
		t.Fatal(err)
	}
	events, deliveries := count(`SELECT count(*) FROM stackbone_platform.webhook_events`), count(`SELECT count(*) FROM stackbone_platform.webhook_deliveries`)
	jobs := count(`SELECT count(*) FROM stackbone_platform.river_job WHERE kind = 'webhook_deliver' AND queue = 'webhooks'`)
	if events != 2 || deliveries != 3 || jobs != 3 {
		t.Fatalf("%d events, %d deliveries, %d jobs; want 2, 3, 3", events, deliveries, jobs)
	}
	// Past retention, an event goes once none of its deliveries is still
	// being tried.
	if _, err := pool.Exec(ctx, `UPDATE stackbone_platform.webhook_deliveries d SET status = 'delivered'
		FROM stackbone_platform.webhook_events e WHERE e.id = d.event_id AND e.type = 'memory.saved'`); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.Prune(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 ||
		count(`SELECT count(*) FROM stackbone_platform.webhook_events WHERE type = 'call.ended'`) != 1 {
		t.Fatalf("prune removed %d events (%v), want the delivered one only", n, err)
	}
	if _, err := svc.Create(ctx, webhooks.NewSubscription{URL: "http://user:pw@127.0.0.1/x", Events: []string{webhooks.CallEnded}}, "test"); err == nil ||
		!strings.Contains(err.Error(), "credentials") {
		t.Fatalf("a URL with credentials: %v", err)
	}
}

// BenchmarkEmit is what a call's statement pays for its event, in its
// transaction: with no subscription, and with two (whatever their
// receivers do, which is not on this path).
func BenchmarkEmit(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Pool(b)
	svc, err := webhooks.New(webhooks.Config{Pool: pool, Logger: pgtest.Logger(b)})
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
					return err
				}
				return svc.Emit(ctx, tx, webhooks.CallStarted, map[string]any{"callId": fmt.Sprint("call_", i)}, nil)
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("no-event", func(b *testing.B) {
		for b.Loop() {
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, `SELECT 1`); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("subscribers=0", run)
	for _, u := range []string{"http://127.0.0.1:9/a", "http://127.0.0.1:9/b"} {
		if _, err := svc.Create(ctx, webhooks.NewSubscription{URL: u, Events: []string{webhooks.CallStarted}}, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("subscribers=2", run)
}

// A box keeps which event types anyone takes: an event nobody takes writes
// nothing, a subscription made on another box is heard of through the
// database's notification (and one made here at once), and a deletion
// likewise; an event of a type taken is recorded again.
func TestWantedFollowsSubscriptionsOnEveryBox(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := pgtest.Pool(t)
	here := newService(t, pool)
	other := newService(t, pool)
	l := notify.New(pool, pgtest.Logger(t))
	here.Subscribe(l)
	go l.Run(ctx)
	events := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.webhook_events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if here.Wanted(ctx, webhooks.CallStarted) {
		t.Fatal("call.started wanted with no subscription")
	}
	if err := here.Emit(ctx, nil, webhooks.CallStarted, map[string]string{"callId": "c1"}, nil); err != nil || events() != 0 {
		t.Fatalf("an event nobody takes: %v, %d events written", err, events())
	}
	sub, err := other.Create(ctx, webhooks.NewSubscription{URL: "http://127.0.0.1:9/a", Events: []string{webhooks.CallStarted}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the other box's subscription to be heard of", 10*time.Second, func() bool { return here.Wanted(ctx, webhooks.CallStarted) })
	if here.Wanted(ctx, webhooks.CallEnded) {
		t.Fatal("call.ended wanted: only call.started was subscribed to")
	}
	if err := here.Emit(ctx, nil, webhooks.CallStarted, map[string]string{"callId": "c2"}, nil); err != nil || events() != 1 {
		t.Fatalf("an event taken: %v, %d events written", err, events())
	}
	if err := other.Delete(ctx, sub.ID, "test"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the deletion to be heard of", 10*time.Second, func() bool { return !here.Wanted(ctx, webhooks.CallStarted) })
	// Made on this box, a subscription counts at once.
	if _, err := here.Create(ctx, webhooks.NewSubscription{URL: "http://127.0.0.1:9/b", Events: []string{webhooks.CallEnded}}, "test"); err != nil {
		t.Fatal(err)
	}
	if !here.Wanted(ctx, webhooks.CallEnded) {
		t.Fatal("a subscription made on this box is not wanted at once")
	}
}

// Events emitted in transactions that hold every connection of the pool,
// when the subscribed types are not in memory (a subscription changed
// just before): each event is recorded in its transaction, and none
// waits for a connection to read the types (they all would, forever).
func TestEmitInTransactionsHoldingThePool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	const conns = 2
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	svc := newService(t, pool)
	svc.Subscribe(notify.New(pool, pgtest.Logger(t))) // not run: nothing reloads the types meanwhile
	subscribe(t, svc, webhooks.CallEnded)
	// Every connection in a transaction, all of them emitting at once.
	var ready, wg sync.WaitGroup
	ready.Add(conns)
	errs := make([]error, conns)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				ready.Done()
				ready.Wait()
				return svc.Emit(ctx, tx, webhooks.CallEnded, map[string]string{"callId": fmt.Sprint("c", i)}, nil)
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.webhook_events`).Scan(&n); err != nil || n != conns {
		t.Fatalf("%d events recorded (%v), want %d", n, err, conns)
	}
}

// A person's erasure removes the events of their calls with the
// deliveries, and leaves every other call's.
func TestEraseCallsRemovesTheirEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	svc := newService(t, pool)
	subscribe(t, svc, webhooks.CallEnded)
	for _, id := range []string{"call_a", "call_b", "call_c"} {
		if err := svc.Emit(ctx, nil, webhooks.CallEnded, map[string]string{"callId": id, "phoneNumber": "+34600000001"},
			map[string]any{"transcript": []string{"heard"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return svc.EraseCallsTx(ctx, tx, []string{"call_a", "call_c"}) }); err != nil {
		t.Fatal(err)
	}
	var events, deliveries int
	var left string
	if err := pool.QueryRow(ctx, `SELECT count(*), min(data->>'callId'), (SELECT count(*) FROM stackbone_platform.webhook_deliveries)
		FROM stackbone_platform.webhook_events`).Scan(&events, &left, &deliveries); err != nil {
		t.Fatal(err)
	}
	if events != 1 || left != "call_b" || deliveries != 1 {
		t.Fatalf("after erasing calls a and c: %d events (%s), %d deliveries; want call_b's one", events, left, deliveries)
	}
}
