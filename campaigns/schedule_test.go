package campaigns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/campaigns"
	"github.com/stackbone/box/postgres/pgtest"
)

// TestSchedulingFindsItsContactsByKey: a scheduling pass updates the
// contacts it queues and those it moves to their next window by key,
// however many contacts the campaign came to hold since the connection
// first ran the pass. Ten passes run while each campaign holds a few
// contacts, then 20,000 contacts already called are added to each, then
// 20,000 not due yet are uploaded to each, and the passes after each
// read none of them.
func TestSchedulingFindsItsContactsByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OneConnection(t)
	// The passes run at noon yesterday: the contacts uploaded (due from
	// the time they were added) are not due yet, those added with next_at
	// before noon are.
	noon := time.Now().UTC().Truncate(24 * time.Hour).Add(-12 * time.Hour)
	svc, err := campaigns.New(campaigns.Config{Pool: pool, Logger: pgtest.Logger(t), CallExists: errors.New("exists"),
		Agents: []string{"caller"}, Trunks: []string{"carrier"}, Now: func() time.Time { return noon },
		Dial: func(context.Context, campaigns.DialRequest) error { return errors.New("no calls here") }})
	if err != nil {
		t.Fatal(err)
	}
	upload := func(id string, from, n int) {
		t.Helper()
		var b strings.Builder
		b.WriteString("number,zone\n")
		for i := range n {
			fmt.Fprintf(&b, "+1212%07d,UTC\n", from+i)
		}
		in, lines, err := campaigns.ParseCSV(strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if added, err := svc.AddContacts(ctx, id, in, lines); err != nil || added != n {
			t.Fatalf("uploaded %d of %d contacts: %v", added, n, err)
		}
	}
	start := func(name string, w campaigns.Window) string {
		t.Helper()
		c, err := svc.Create(ctx, campaigns.NewCampaign{Name: name, Agent: "caller", Trunk: "carrier", MaxConcurrent: 1000,
			Zone: "UTC", Windows: []campaigns.Window{w}}, "test")
		if err != nil {
			t.Fatal(err)
		}
		upload(c.ID, 0, 1)
		if _, err := svc.Start(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	open := start("open", campaigns.Window{Start: "00:00", End: "24:00"})     // its due contacts are queued
	closed := start("closed", campaigns.Window{Start: "01:00", End: "02:00"}) // moved to its next 01:00
	// insert gives each campaign n more contacts in state, next due at.
	insert := func(n int, state string, at time.Time) {
		t.Helper()
		for _, id := range []string{open, closed} {
			if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.campaign_contacts (campaign_id, seq, number, zones, state, next_at)
				SELECT $1, m.seq + g, '+1212555' || lpad((m.seq + g)::text, 4, '0'), '{UTC}', $3, $4
				FROM generate_series(1, $2) g, (SELECT max(seq) AS seq FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1) m`,
				id, n, state, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	pass := func(want int) {
		t.Helper()
		insert(3, "waiting", noon.Add(-time.Minute))
		if n, err := svc.ScheduleOnce(ctx); err != nil || n != want {
			t.Fatalf("a pass queued %d attempts (want %d): %v", n, want, err)
		}
	}
	for range 10 {
		pass(3)
	}
	for _, s := range []struct {
		name string
		add  func()
	}{
		// Contacts called already: a plan cached while there were few
		// reads them all to update the few it queues or moves.
		{"20,000 contacts called", func() { insert(20000, "done", noon) }},
		// An upload: the planner, told of them, finds the few due among
		// them by the due contacts' index.
		{"20,000 contacts uploaded, not due yet", func() { upload(open, 100, 20000); upload(closed, 100, 20000) }},
	} {
		s.add()
		before := pgtest.RowsRead(t, pool, "stackbone_platform.campaign_contacts")
		for range 5 {
			pass(3)
		}
		if read := pgtest.RowsRead(t, pool, "stackbone_platform.campaign_contacts") - before; read >= 20000 {
			t.Errorf("with %s, 5 passes read %d contacts: each campaign's contacts scanned", s.name, read)
		}
	}
	var queued, later int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1 AND state = 'queued'),
		(SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $2 AND state = 'waiting'
			AND next_at = $3)`, open, closed, noon.Add(13*time.Hour)).Scan(&queued, &later); err != nil {
		t.Fatal(err)
	}
	if want := 20 * 3; queued != want || later != want {
		t.Fatalf("%d contacts queued, %d moved to the next window (want %d each)", queued, later, want)
	}
}
