package campaigns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stackbone/box/campaigns"
	"github.com/stackbone/box/postgres/pgtest"
)

// newService is a campaigns service on a fresh database whose dials are
// refused (these tests place no call).
func newService(t testing.TB) *campaigns.Service {
	t.Helper()
	exists := errors.New("exists")
	svc, err := campaigns.New(campaigns.Config{Pool: pgtest.Pool(t), Logger: pgtest.Logger(t), CallExists: exists,
		Agents: []string{"caller"}, Trunks: []string{"carrier"},
		Dial: func(context.Context, campaigns.DialRequest) error { return errors.New("no calls here") }})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// A CSV of 10,000 contacts goes in whole; an upload with bad lines is
// refused whole, naming each bad line as the file numbers it.
func TestContactsUploadAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newService(t)
	c, err := svc.Create(ctx, campaigns.NewCampaign{Name: "renewals", Agent: "caller", Trunk: "carrier", MaxConcurrent: 20}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("number,zone,identity.customerId,name\n")
	for i := range 10_000 {
		fmt.Fprintf(&b, "+1212555%04d,,cust-%d,Person %d\n", i, i, i)
	}
	in, lines, err := campaigns.ParseCSV(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	n, err := svc.AddContacts(ctx, c.ID, in, lines)
	if err != nil || n != 10_000 {
		t.Fatalf("added %d: %v", n, err)
	}
	list, err := svc.Contacts(ctx, c.ID, campaigns.ContactFilter{Limit: 2})
	if err != nil || len(list) != 2 {
		t.Fatalf("contacts %v: %v", list, err)
	}
	if got := list[1]; got.Number != "+12125550001" || got.Zones[0] != "America/New_York" || got.Identities["customerId"] != "cust-1" ||
		got.Variables["name"] != "Person 1" || got.State != campaigns.StateWaiting {
		t.Fatalf("contact %+v", got)
	}

	bad := "number,zone,name\n" +
		"+442071234567,,Ann\n" + // line 2: fine
		"not a number,,Bob\n" + // line 3
		"\"+4420 7123 4568\",Mars/Olympus,Cy\n" + // line 4: unknown zone
		"12345,,Dee\n" + // line 5: no country, no zone
		"+44 20 7123 4567,,Eve\n" + // line 6: the same number as line 2
		"+12125550007,,Fay\n" // line 7: already in the campaign
	in, lines, err = campaigns.ParseCSV(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.AddContacts(ctx, c.ID, in, lines)
	var ie *campaigns.ImportError
	if !errors.As(err, &ie) || !errors.Is(err, campaigns.ErrInvalidRequest) {
		t.Fatalf("bad upload: %v", err)
	}
	got := map[int]string{}
	for _, l := range ie.Lines {
		got[l.Line] = l.Problem
	}
	for _, line := range []int{3, 4, 5, 6, 7} {
		if got[line] == "" {
			t.Errorf("line %d not reported (%v)", line, got)
		}
	}
	if len(got) != 5 || ie.Total != 5 {
		t.Errorf("reported %v (total %d)", got, ie.Total)
	}
	after, err := svc.Get(ctx, c.ID)
	if err != nil || after.Progress.Contacts != 10_000 {
		t.Fatalf("after a refused upload: %d contacts (%v)", after.Progress.Contacts, err)
	}

	// JSON numbers its contacts from 1; a cut CSV line is reported.
	_, _, err = campaigns.ParseCSV(strings.NewReader("number,name\n+12125559999,\"unclosed\n"))
	if !errors.As(err, &ie) || ie.Lines[0].Line != 2 {
		t.Fatalf("cut CSV: %v", err)
	}
	in, lines, err = campaigns.ParseJSON([]byte(`{"contacts":[{"number":"+81312345678"},{"number":"+81312345679","variables":{"bad name":"x"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddContacts(ctx, c.ID, in, lines); !errors.As(err, &ie) || ie.Lines[0].Line != 2 {
		t.Fatalf("JSON upload: %v", err)
	}
}

// A campaign is checked whole when it is created, and moves only along
// its statuses.
func TestCampaignRulesAndStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newService(t)
	_, err := svc.Create(ctx, campaigns.NewCampaign{Name: "x", Agent: "nobody", Trunk: "elsewhere", MaxConcurrent: 5000,
		Windows: []campaigns.Window{{Start: "18:00", End: "09:00"}}, Zone: "Nowhere/City"}, "test")
	if !errors.Is(err, campaigns.ErrInvalidRequest) {
		t.Fatalf("bad campaign: %v", err)
	}
	for _, want := range []string{"agent", "trunk", "maxConcurrent", "windows[0]", "zone"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q not named in %v", want, err)
		}
	}
	c, err := svc.Create(ctx, campaigns.NewCampaign{Name: "x", Agent: "caller"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxConcurrent != 5 || len(c.Windows) != 1 || c.Retry.Busy.Attempts != 2 || c.Status != campaigns.StatusDraft {
		t.Fatalf("defaults: %+v", c)
	}
	if _, err := svc.Start(ctx, c.ID); !errors.Is(err, campaigns.ErrConflict) {
		t.Fatalf("start with no contacts: %v", err)
	}
	if _, err := svc.Pause(ctx, c.ID); !errors.Is(err, campaigns.ErrConflict) {
		t.Fatalf("pause a draft: %v", err)
	}
	if _, err := svc.Cancel(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddContacts(ctx, c.ID, []campaigns.ContactInput{{Number: "+12125550000"}}, []int{1}); !errors.Is(err, campaigns.ErrConflict) {
		t.Fatalf("contacts to a cancelled campaign: %v", err)
	}
	if _, err := svc.Get(ctx, "cmp_missing"); !errors.Is(err, campaigns.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
}
