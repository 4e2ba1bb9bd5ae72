package campaigns

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zones resolve the same on a machine without a zone database
)

// Window is when contacts may be called, on their own clocks: from Start to
// End (exclusive, "HH:MM", End up to "24:00") on Days (mon … sun; empty:
// every day).
type Window struct {
	Days  []string `json:"days,omitempty"`
	Start string   `json:"start"`
	End   string   `json:"end"`
}

// DefaultWindows is every day from 09:00 to 20:00.
func DefaultWindows() []Window { return []Window{{Start: "09:00", End: "20:00"}} }

var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// clock parses "HH:MM" into minutes of the day (24:00 is 1440).
func clock(s string) (int, bool) {
	var h, m int
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	if _, err := fmt.Sscanf(s, "%2d:%2d", &h, &m); err != nil || h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, false
	}
	return h*60 + m, true
}

func checkWindows(ws []Window) []string {
	var problems []string
	if len(ws) > 28 {
		return []string{"windows: at most 28"}
	}
	for i, w := range ws {
		start, ok1 := clock(w.Start)
		end, ok2 := clock(w.End)
		switch {
		case !ok1 || !ok2:
			problems = append(problems, fmt.Sprintf(`windows[%d]: start and end are "HH:MM" (end up to "24:00")`, i))
		case end <= start:
			problems = append(problems, fmt.Sprintf("windows[%d]: end %s is not after start %s", i, w.End, w.Start))
		}
		for _, d := range w.Days {
			if !slices.Contains(dayNames, strings.ToLower(d)) {
				problems = append(problems, fmt.Sprintf("windows[%d]: day %q is not one of mon, tue, wed, thu, fri, sat, sun", i, clip(d)))
			}
		}
	}
	return problems
}

// zones caches loaded locations by name.
var zones sync.Map

func loadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("campaigns: zone %q", name)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}

// schedule is a campaign's windows, parsed.
type schedule []span

type span struct {
	days       [7]bool
	start, end int // minutes of the day
}

func parseSchedule(ws []Window) schedule {
	out := make(schedule, 0, len(ws))
	for _, w := range ws {
		var sp span
		sp.start, _ = clock(w.Start)
		sp.end, _ = clock(w.End)
		for d := range sp.days {
			sp.days[d] = len(w.Days) == 0
		}
		for _, d := range w.Days {
			sp.days[slices.Index(dayNames, strings.ToLower(d))] = true
		}
		out = append(out, sp)
	}
	return out
}

// insideOne says whether t falls in a window on zone loc's clock.
func (s schedule) insideOne(t time.Time, loc *time.Location) bool {
	l := t.In(loc)
	minute := l.Hour()*60 + l.Minute()
	day := int(l.Weekday())
	for _, sp := range s {
		if sp.days[day] && minute >= sp.start && minute < sp.end {
			return true
		}
	}
	return false
}

// inside says whether t falls in a window in every zone of locs.
func (s schedule) inside(t time.Time, locs []*time.Location) bool {
	for _, loc := range locs {
		if !s.insideOne(t, loc) {
			return false
		}
	}
	return len(locs) > 0
}

// next is the first time from t on that is inside the windows in every
// zone of locs; ok is false when there is none within eight days (zones
// whose windows never meet).
func (s schedule) next(t time.Time, locs []*time.Location) (time.Time, bool) {
	if s.inside(t, locs) {
		return t, true
	}
	// A time inside every zone's windows begins where some zone's window
	// begins: those are the only candidates.
	var cands []time.Time
	for _, loc := range locs {
		l := t.In(loc)
		midnight := time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
		for d := 0; d <= 8; d++ {
			day := midnight.AddDate(0, 0, d)
			for _, sp := range s {
				c := time.Date(day.Year(), day.Month(), day.Day(), sp.start/60, sp.start%60, 0, 0, loc)
				if c.After(t) {
					cands = append(cands, c)
				}
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Before(cands[j]) })
	for _, c := range cands {
		if s.inside(c, locs) {
			return c, true
		}
	}
	return time.Time{}, false
}

// locations loads the zones named.
func locations(names []string) ([]*time.Location, error) {
	out := make([]*time.Location, 0, len(names))
	for _, n := range names {
		l, err := loadZone(n)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
