package studio_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/campaigns"
	"github.com/stackbone/box/internal/poll"
)

// An operator creates a campaign in Studio, uploads a CSV with two bad
// lines (both named, nothing added), then a good one (the contacts and
// counts show, uploaded markup as text), starts it (the cap of two holds:
// two calls up, one contact waiting, live on the page), pauses it and
// cancels it. Once its calls are hung up every contact is cancelled, the
// campaign is finished as cancelled and a contact's last call opens in
// Calls.
func TestCampaignsScreen(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.watchFailures()
	p.goTo("#/campaigns")
	p.waitFor(`!!document.querySelector("#new-campaign select[name=agent] option[value=frontdesk]")`, "the form's agents")
	if got := p.text("#campaigns"); !strings.Contains(got, "No campaign yet") {
		t.Fatalf("the empty list reads %q", got)
	}
	p.js(`document.getElementById("new-campaign").requestSubmit()`)
	p.waitFor(`document.getElementById("new-campaign-result").textContent === "Name the campaign."`, "the refusal without a name")

	script := `<script>window.pwned=1</script>`
	p.set("#new-campaign input[name=name]", "Renewals "+script)
	p.set("#new-campaign select[name=agent]", "frontdesk")
	p.set("#new-campaign input[name=maxConcurrent]", "2")
	// Every day, all day: the contacts are inside their window whenever
	// the test runs.
	p.set("#windows input[name=start]", "00:00")
	p.set("#windows input[name=end]", "24:00")
	p.set(`#new-campaign tr[data-rule=busy] input[name=attempts]`, "3")
	p.set(`#new-campaign tr[data-rule=busy] input[name=delay]`, "15m")
	p.js(`document.getElementById("new-campaign").requestSubmit()`)
	p.waitFor(`location.hash.startsWith("#/campaigns/cmp_") && document.getElementById("main").dataset.campaignStatus === "draft"`, "the draft's page")
	var hash string
	p.js(`location.hash`, &hash)
	id := strings.TrimPrefix(hash, "#/campaigns/")
	var c campaigns.Campaign
	if st, code := b.do(adminKey, "GET", "/api/voice/campaigns/"+id, nil, &c); st != 200 {
		t.Fatalf("get: %d %s", st, code)
	}
	if c.Name != "Renewals "+script || c.Agent != "frontdesk" || c.MaxConcurrent != 2 || len(c.Windows) != 1 ||
		c.Windows[0].Start != "00:00" || c.Windows[0].End != "24:00" || len(c.Windows[0].Days) != 0 ||
		c.Retry.Busy.Attempts != 3 || time.Duration(c.Retry.Busy.Delay) != 15*time.Minute || c.Retry.NoAnswer.Attempts != 2 || c.Retry.Jitter != 0.1 {
		t.Fatalf("created %+v", c)
	}
	if got := p.text("main h1"); !strings.Contains(got, "Renewals "+script) {
		t.Fatalf("the heading reads %q", got)
	}

	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	upload := func(path string) {
		t.Helper()
		p.js(`document.getElementById("upload-result").textContent = ""`)
		if err := p.br.SetFiles(p.ctx, "#upload-contacts input[type=file]", path); err != nil {
			t.Fatal(err)
		}
		p.js(`document.getElementById("upload-contacts").requestSubmit()`)
		p.waitFor(`!!document.querySelector("#upload-result .ok, #upload-result .error")`, "the upload's answer")
	}
	upload(write("bad.csv", "number,zone,identity.customerId,name\n"+
		"+34600111001,,crm/1,Ana\n"+
		script+",,crm/2,Bob\n"+
		"+34600111003,Mars/Olympus,crm/3,Carla\n"))
	p.waitFor(`document.querySelectorAll("#bad-lines li").length === 2`, "the two bad lines")
	if got := p.text(`#bad-lines li[data-line="3"]`); !strings.Contains(got, "line 3: number is 1 to 32 digits") {
		t.Fatalf("line 3 reads %q", got)
	}
	if got := p.text(`#bad-lines li[data-line="4"]`); !strings.Contains(got, `line 4: zone "Mars/Olympus" is not a known time zone`) {
		t.Fatalf("line 4 reads %q", got)
	}
	if got := p.text("#upload-result p"); !strings.Contains(got, "2 lines refused; nothing was added") {
		t.Fatalf("the refusal reads %q", got)
	}
	if n := b.count(`SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1`, id); n != 0 {
		t.Fatalf("%d contacts after a refused upload", n)
	}

	img := `<img src=x onerror=window.pwned=1>`
	upload(write("good.csv", "number,identity.customerId,name\n"+
		"+34600111001,crm/1,"+img+"\n"+
		"+34600111002,crm/2,Bob\n"+
		"+34600111003,crm/3,Carla\n"))
	p.waitFor(`document.getElementById("upload-result").textContent === "Added 3 contacts from good.csv."`, "the upload's success")
	p.waitFor(`document.querySelector("table.contacts").dataset.rows === "3"`, "the three contacts")
	if got := p.text(`table.contacts tr[data-id="1"]`); !strings.Contains(got, "+34600111001") || !strings.Contains(got, "name="+img) ||
		!strings.Contains(got, "customerId=crm/1") || !strings.Contains(got, "Europe/Madrid") || !strings.Contains(got, "waiting") {
		t.Fatalf("the first contact reads %q", got)
	}
	if got := p.text(`#progress li[data-part=waiting]`); got != "waiting 3" {
		t.Fatalf("the progress reads %q", got)
	}
	if got := p.text("#campaign-counts"); !strings.Contains(got, "3 contacts") {
		t.Fatalf("the counts read %q", got)
	}
	noLiteralNull(t, p)

	// Started, the campaign calls two contacts (the cap) through the test
	// trunk, which never answers, and the third waits: live on the page.
	p.click("#campaign-start")
	p.waitFor(`document.getElementById("main").dataset.campaignStatus === "running"`, "the running campaign")
	p.waitFor(`document.querySelector("#progress li[data-part=inprogress]").textContent === "in progress 2" &&
		document.querySelector("#progress li[data-part=waiting]").textContent === "waiting 1"`, "two calls up and one contact waiting")
	if n := b.count(`SELECT count(*) FROM stackbone_platform.voice_calls WHERE direction = 'outbound'`); n != 2 {
		t.Fatalf("%d calls placed, want 2 (the cap)", n)
	}
	p.click("#campaign-pause")
	p.waitFor(`document.getElementById("main").dataset.campaignStatus === "paused" && !!document.getElementById("campaign-resume")`, "the paused campaign")
	if st, _ := b.do(adminKey, "GET", "/api/voice/campaigns/"+id, nil, &c); st != 200 || c.Status != campaigns.StatusPaused ||
		c.Progress.ByState[campaigns.StateCalling] != 2 || c.Progress.ByState[campaigns.StateWaiting] != 1 {
		t.Fatalf("after pause: %d %+v", st, c)
	}
	p.click("#campaign-cancel")
	p.click("#campaign-actions + .confirm button.yes")
	p.waitFor(`document.getElementById("main").dataset.campaignStatus === "cancelled" && !document.getElementById("upload-contacts")`, "the cancelled campaign")
	p.waitFor(`document.querySelector("#progress li[data-part=cancelled]").textContent === "cancelled 1"`, "the waiting contact cancelled")

	// The calls up go on after the cancel; hung up one after the other,
	// their contacts end cancelled too and the campaign is finished.
	var calling []campaigns.Contact
	if st, code := b.do(adminKey, "GET", "/api/voice/campaigns/"+id+"/contacts?state=calling", nil, &calling); st != 200 || len(calling) != 2 || calling[0].Seq != 1 {
		t.Fatalf("calling contacts: %d %s %+v", st, code, calling)
	}
	for i, k := range calling {
		if st, code := b.do(adminKey, "POST", "/api/voice/calls/"+*k.LastCallID+"/hangup", nil, nil); st != 202 {
			t.Fatalf("hang up %s: %d %s", *k.LastCallID, st, code)
		}
		poll.Until(t, "the contact of the call hung up", 10*time.Second, func() bool {
			return b.count(`SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1 AND state = 'cancelled'`, id) == 2+i
		})
	}
	p.waitFor(`document.querySelector("#progress li[data-part=cancelled]").textContent === "cancelled 3" &&
		document.querySelector("#by-outcome li[data-outcome=operator_hangup]")?.textContent.trim() === "operator_hangup 2"`, "every contact cancelled, two after their call")
	poll.Until(t, "the campaign to finish", 10*time.Second, func() bool {
		return b.count(`SELECT count(*) FROM stackbone_platform.campaigns WHERE id = $1 AND status = 'cancelled' AND finished_at IS NOT NULL`, id) == 1
	})

	p.set("#contact-filters select[name=state]", "cancelled")
	p.waitFor(`document.querySelector("table.contacts").dataset.rows === "3"`, "the cancelled contacts")
	p.click(`table.contacts tr[data-id="1"] a.last-call`)
	p.waitFor(`location.hash === "#/calls/" + `+strconv.Quote(*calling[0].LastCallID)+` && document.getElementById("main").dataset.callStatus === "ended"`, "the contact's last call in Calls")

	p.goTo("#/campaigns")
	p.waitFor(`document.querySelector("table.campaigns tbody tr [data-part=cancelled]")?.textContent === "cancelled 3"`, "the campaign in the list")
	if got := p.text("table.campaigns tbody tr"); !strings.Contains(got, "Renewals "+script) || !strings.Contains(got, "cancelled") {
		t.Fatalf("the list's row reads %q", got)
	}
	noLiteralNull(t, p)
	var pwned any
	p.js(`window.pwned`, &pwned)
	if pwned != nil {
		t.Fatal("uploaded markup ran")
	}
	if f := p.failures(); len(f) > 0 {
		t.Fatalf("the page failed: %v", f)
	}
}

// noLiteralNull fails if the screen writes a missing value as null,
// undefined or NaN.
func noLiteralNull(t *testing.T, p *page) {
	t.Helper()
	var text string
	p.js(`document.querySelector("main").innerText`, &text)
	if m := regexp.MustCompile(`\b(null|undefined|NaN)\b`).FindString(text); m != "" {
		t.Fatalf("the screen shows %q:\n%s", m, text)
	}
}
