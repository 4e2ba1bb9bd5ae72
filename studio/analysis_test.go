package studio_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// An operator filters the calls by an analysis field and by success, and
// opens one: its summary, fields and judged criteria; a failed analysis
// says why. The summary is text, never markup.
func TestCallsFilterByAnalysis(t *testing.T) {
	b := newBox(t)
	t0 := time.Now().Add(-time.Hour)
	for i := range 6 {
		booked := i%2 == 0
		b.insertCall(fmt.Sprintf("call_an%d", i), "inbound", "receptionist", fmt.Sprintf("+3460000100%d", i), "completed",
			t0.Add(time.Duration(i)*time.Second), `[]`, `{"read":true,"save":true,"saved":true}`, `[]`)
		_, err := b.pool.Exec(context.Background(), `UPDATE stackbone_platform.voice_calls SET analysis = $2 WHERE id = $1`,
			fmt.Sprintf("call_an%d", i), fmt.Sprintf(`{"status":"done","summary":"<b>Call %d</b> about Tuesday.","fields":{"appointmentBooked":%t,"followUpDate":null},
			"criteria":[{"criterion":"The caller got an answer.","pass":%t,"reason":"It was answered."}],"success":%t,"at":"2026-12-05T10:00:00Z"}`, i, booked, booked, booked))
		if err != nil {
			t.Fatal(err)
		}
	}
	b.insertCall("call_anfail", "inbound", "receptionist", "+34600001099", "completed", t0.Add(-time.Minute), `[]`, `{"read":true,"save":true,"saved":true}`, `[]`)
	if _, err := b.pool.Exec(context.Background(), `UPDATE stackbone_platform.voice_calls SET analysis =
		'{"status":"failed","error":"\"fields\" does not satisfy the schema","at":"2026-12-05T10:00:00Z"}' WHERE id = 'call_anfail'`); err != nil {
		t.Fatal(err)
	}
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls")
	p.waitFor(`document.querySelector("table.calls").dataset.rows === "7"`, "every call")
	p.set("#call-filters input[name=field]", "appointmentBooked=true")
	p.js(`document.getElementById("call-filters").requestSubmit()`)
	p.waitFor(`location.hash.includes("field=appointmentBooked") && document.getElementById("root").dataset.state === "ready" &&
		document.querySelector("table.calls").dataset.rows === "3"`, "the three booked calls")
	var ids []string
	p.js(`[...document.querySelectorAll("table.calls tbody tr")].map(r => r.dataset.id)`, &ids)
	if strings.Join(ids, ",") != "call_an4,call_an2,call_an0" {
		t.Fatalf("booked calls listed: %v", ids)
	}
	p.goTo("#/calls?success=false")
	p.waitFor(`document.querySelector("table.calls").dataset.rows === "3"`, "the three calls that failed their criterion")
	if got := p.text("table.calls tbody"); strings.Count(got, "failed") != 3 {
		t.Fatalf("the failed calls' success column: %q", got)
	}
	p.goTo("#/calls/call_an2")
	p.waitFor(`!!document.getElementById("analysis-summary")`, "the analysis")
	if got := p.text("#analysis-summary"); got != "<b>Call 2</b> about Tuesday." {
		t.Fatalf("summary %q", got)
	}
	if got := p.text("#analysis-fields"); !strings.Contains(got, "appointmentBooked") || !strings.Contains(got, "true") {
		t.Fatalf("fields %q", got)
	}
	if got := p.text("#analysis-criteria"); !strings.Contains(got, "pass") || !strings.Contains(got, "The caller got an answer.") || !strings.Contains(got, "It was answered.") {
		t.Fatalf("criteria %q", got)
	}
	p.goTo("#/calls/call_anfail")
	p.waitFor(`!!document.getElementById("analysis-error")`, "the failed analysis")
	if got := p.text("#analysis-error"); !strings.Contains(got, "does not satisfy the schema") {
		t.Fatalf("failed analysis %q", got)
	}
}
