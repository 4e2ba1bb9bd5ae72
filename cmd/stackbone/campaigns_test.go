package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/campaigns"
)

const campaignsYAML = `
agents:
  frontdesk:
    model: openai/chat
    instructions: You call {name} about their renewal.
sip:
  addr: 127.0.0.1:0
  trunks:
    outbound:
      - name: carrier
        proxy: 127.0.0.1:9
`

// TestCampaignsCLI drives `stackbone campaigns` against a box: create with
// windows and retry rules, an upload with bad lines (each printed, nothing
// added), good CSV and JSON uploads, show, contacts by state, start,
// pause, resume, cancel and delete. The campaign's windows open in two
// days, so it runs without placing a call.
func TestCampaignsCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := boxtest.New(t, campaignsYAML)
	secret, _, err := b.Keys.Create(ctx, "cli", []string{auth.ScopeVoice})
	if err != nil {
		t.Fatal(err)
	}
	bc := &boxClient{base: b.URL, key: secret, http: &http.Client{Timeout: 30 * time.Second}}
	run := func(args ...string) (string, string, error) {
		cmd := campaignsCommand(func() *boxClient { return bc })
		// As under the stackbone command: an error is said once, without
		// the usage.
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		var out, errw bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errw)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		return out.String(), errw.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, errw, err := run(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, errw)
		}
		return out
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := b.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	later := strings.ToLower(time.Now().UTC().AddDate(0, 0, 2).Weekday().String()[:3])
	out := must("create", "--name", "Renewals", "--agent", "frontdesk", "--max-concurrent", "3", "--zone", "UTC",
		"--window", later+" 09:00-12:00", "--window", later+" 14:00-15:00", "--retry-busy", "3x15m", "--retry-voicemail", "0")
	fields := strings.Fields(out)
	if len(fields) < 3 || !strings.HasPrefix(fields[2], "cmp_") || !strings.Contains(out, "(draft)") {
		t.Fatalf("create: %q", out)
	}
	id := fields[2]
	var c campaigns.Campaign
	var windows, retry []byte
	if err := b.Pool.QueryRow(ctx, `SELECT max_concurrent, default_zone, windows, retry FROM stackbone_platform.campaigns WHERE id = $1`, id).
		Scan(&c.MaxConcurrent, &c.Zone, &windows, &retry); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(json.Unmarshal(windows, &c.Windows), json.Unmarshal(retry, &c.Retry)); err != nil {
		t.Fatal(err)
	}
	wantRetry := campaigns.DefaultRetry()
	wantRetry.Busy = campaigns.Rule{Attempts: 3, Delay: campaigns.Duration(15 * time.Minute)}
	wantRetry.Voicemail = campaigns.Rule{}
	if c.MaxConcurrent != 3 || c.Zone != "UTC" || c.Retry != wantRetry ||
		!reflect.DeepEqual(c.Windows, []campaigns.Window{{Days: []string{later}, Start: "09:00", End: "12:00"}, {Days: []string{later}, Start: "14:00", End: "15:00"}}) {
		t.Fatalf("stored: %+v", c)
	}
	if _, _, err := run("create", "--name", "x", "--agent", "frontdesk", "--window", "fri-mon 09:00-10:00"); err == nil || !strings.Contains(err.Error(), "a range runs forward") {
		t.Fatalf("a backward range: %v", err)
	}
	if _, _, err := run("create", "--name", "x", "--agent", "nobody"); err == nil || !strings.HasPrefix(err.Error(), "campaign_invalid_request:") ||
		!strings.Contains(err.Error(), `agent "nobody" is not configured`) {
		t.Fatalf("an unknown agent: %v", err)
	}

	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.csv", "number,identity.customerId,name\n600111001,crm/1,Ana\nnot a number,crm/2,Bob\n600111001,crm/3,Ana again\n")
	out, _, err = run("upload", id, bad)
	if err == nil || err.Error() != bad+": 2 line(s) refused, nothing was added" {
		t.Fatalf("the refused upload: %v", err)
	}
	if want := bad + ":3: number is 1 to 32 digits, * or #, with an optional leading +\n" + bad + ":4: the number is also on line 2\n"; out != want {
		t.Fatalf("the refused upload printed:\n%s\nwant:\n%s", out, want)
	}
	if n := count(`SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1`, id); n != 0 {
		t.Fatalf("%d contacts after a refused upload", n)
	}
	if out := must("upload", id, write("good.csv", "number,identity.customerId,name\n600111001,crm/1,Ana\n")); out != "added 1 contact from "+filepath.Join(dir, "good.csv")+"\n" {
		t.Fatalf("the CSV upload: %q", out)
	}
	if out := must("upload", id, write("more.json", `{"contacts": [{"number": "600111002", "identities": {"customerId": "crm/2"}, "variables": {"name": "Bob"}},
		{"number": "600111003", "zone": "Europe/Madrid"}]}`)); !strings.HasPrefix(out, "added 2 contacts from ") {
		t.Fatalf("the JSON upload: %q", out)
	}
	if _, _, err := run("upload", id, write("list.txt", "600111004\n")); err == nil || !strings.Contains(err.Error(), "a .csv or .json file") {
		t.Fatalf("a .txt upload: %v", err)
	}

	out = must("show", id)
	for _, want := range []string{`status +draft`, `windows +` + later + ` 09:00-12:00; ` + later + ` 14:00-15:00`,
		`retry +busy 3x15m0s, no answer 2x30m0s, voicemail 0x0s, failed 1x5m0s; jitter 10%`,
		`contacts +3: done 0, in progress 0 \(queued 0, calling 0\), waiting 3, failed 0, cancelled 0`} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(out) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	out = must("contacts", id, "--state", "waiting", "--limit", "2")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], "1    600111001  waiting") ||
		!strings.HasPrefix(lines[2], "2    600111002  waiting") {
		t.Fatalf("contacts:\n%s", out)
	}
	if out, errw, err := run("contacts", id, "--after", "2"); err != nil || !strings.Contains(out, "600111003") || strings.Contains(out, "600111002") || errw != "" {
		t.Fatalf("contacts after 2: %v\n%s%s", err, out, errw)
	}

	if out := must("start", id); out != "campaign "+id+" is running\n" {
		t.Fatalf("start: %q", out)
	}
	if _, _, err := run("delete", id); err == nil || !strings.HasPrefix(err.Error(), "campaign_conflict:") {
		t.Fatalf("delete while running: %v", err)
	}
	if out := must("pause", id); out != "campaign "+id+" is paused\n" {
		t.Fatalf("pause: %q", out)
	}
	if out := must("resume", id); out != "campaign "+id+" is running\n" {
		t.Fatalf("resume: %q", out)
	}
	out = must("list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], id+"  Renewals  frontdesk  running  3") {
		t.Fatalf("list:\n%s", out)
	}
	if out := must("cancel", id); out != "campaign "+id+" is cancelled\n" {
		t.Fatalf("cancel: %q", out)
	}
	if n := count(`SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1 AND state = 'cancelled'`, id); n != 3 {
		t.Fatalf("%d contacts cancelled, want 3", n)
	}
	if n := count(`SELECT count(*) FROM stackbone_platform.campaign_attempts WHERE campaign_id = $1`, id); n != 0 {
		t.Fatalf("%d calls attempted outside the window", n)
	}
	if out := must("show", id); !strings.Contains(out, "cancelled 3") || regexp.MustCompile(`(?m)^finished +-$`).MatchString(out) {
		t.Fatalf("show after cancel:\n%s", out)
	}
	if out := must("delete", id); out != "deleted "+id+"\n" {
		t.Fatalf("delete: %q", out)
	}
	if n := count(`SELECT count(*) FROM stackbone_platform.campaigns`); n != 0 {
		t.Fatalf("%d campaigns after the delete", n)
	}
}

// Windows are written as an operator says them: days (one, a list, a
// range or several) and hours, or hours alone for every day.
func TestParseWindow(t *testing.T) {
	for in, want := range map[string]campaigns.Window{
		"09:00-20:00":             {Start: "09:00", End: "20:00"},
		"sat 10:00-14:00":         {Days: []string{"sat"}, Start: "10:00", End: "14:00"},
		"Mon-Wed,fri 08:30-24:00": {Days: []string{"mon", "tue", "wed", "fri"}, Start: "08:30", End: "24:00"},
	} {
		if got, err := parseWindow(in); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "weekdays 09:00-18:00", "fri-mon 09:00-18:00", "mon 09:00", "mon tue 09:00-10:00"} {
		if _, err := parseWindow(in); err == nil {
			t.Errorf("%q was read", in)
		}
	}
	for in, want := range map[string]campaigns.Rule{"2x10m": {Attempts: 2, Delay: campaigns.Duration(10 * time.Minute)}, "0": {}} {
		if got, err := parseRule(in); err != nil || got != want {
			t.Errorf("%q: %+v %v", in, got, err)
		}
	}
	for _, in := range []string{"2", "x10m", "2x", "-1x5m", "2x10"} {
		if _, err := parseRule(in); err == nil {
			t.Errorf("%q was read", in)
		}
	}
}
