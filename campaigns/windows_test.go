package campaigns

import (
	"testing"
	"time"
)

func mustZones(t *testing.T, names ...string) []*time.Location {
	t.Helper()
	locs, err := locations(names)
	if err != nil {
		t.Fatal(err)
	}
	return locs
}

// Windows are read on each zone's clock: a weekend waits for Monday, two
// zones wait for the hour both are inside, and zones whose windows never
// meet have no time at all.
func TestWindowsOnTheContactsClock(t *testing.T) {
	ny := mustZones(t, "America/New_York")
	weekdays := parseSchedule([]Window{{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "09:00", End: "17:00"}})
	sat := time.Date(2026, 12, 5, 10, 0, 0, 0, ny[0]) // a Saturday
	next, ok := weekdays.next(sat, ny)
	if want := time.Date(2026, 12, 7, 9, 0, 0, 0, ny[0]); !ok || !next.Equal(want) {
		t.Fatalf("Saturday: next %v %v, want %v", next, ok, want)
	}
	mon := time.Date(2026, 12, 7, 16, 59, 0, 0, ny[0])
	if !weekdays.inside(mon, ny) || weekdays.inside(mon.Add(time.Minute), ny) {
		t.Fatal("16:59 is inside, 17:00 is not")
	}

	coasts := mustZones(t, "America/New_York", "America/Los_Angeles")
	la := coasts[1]
	early := time.Date(2026, 12, 7, 8, 0, 0, 0, la) // 11:00 in New York
	next, ok = weekdays.next(early, coasts)
	if want := time.Date(2026, 12, 7, 9, 0, 0, 0, la); !ok || !next.Equal(want) {
		t.Fatalf("two coasts: next %v %v, want %v", next, ok, want)
	}

	apart := mustZones(t, "America/New_York", "Asia/Tokyo")
	if next, ok := weekdays.next(early, apart); ok {
		t.Fatalf("New York and Tokyo office hours never meet, got %v", next)
	}

	late := parseSchedule([]Window{{Start: "20:00", End: "24:00"}})
	if !late.inside(time.Date(2026, 12, 7, 23, 59, 0, 0, ny[0]), ny) {
		t.Fatal("a window may end at 24:00")
	}
}

func TestWindowsAndRetryAreChecked(t *testing.T) {
	for _, ws := range [][]Window{{{Start: "9:00", End: "17:00"}}, {{Start: "17:00", End: "09:00"}}, {{Start: "09:00", End: "24:01"}},
		{{Days: []string{"monday"}, Start: "09:00", End: "10:00"}}} {
		if len(checkWindows(ws)) == 0 {
			t.Errorf("%+v was accepted", ws)
		}
	}
	r := DefaultRetry()
	r.Busy.Attempts = -1
	r.Jitter = 2
	if p := r.check(); len(p) != 2 {
		t.Errorf("problems %q", p)
	}
	for _, c := range []struct {
		outcome, by string
		answered    bool
		want        string
	}{{"busy", "", false, kindBusy}, {"no_answer", "", false, kindNoAnswer}, {"completed", "voicemail", true, kindVoicemail},
		{"caller_hangup", "", true, kindReached}, {"box_lost", "", true, kindReached}, {"box_lost", "", false, kindFailed},
		{"failed", "", false, kindFailed}} {
		if got := kindOf(c.outcome, c.by, c.answered); got != c.want {
			t.Errorf("kindOf(%s, %s, %v) = %s, want %s", c.outcome, c.by, c.answered, got, c.want)
		}
	}
}
