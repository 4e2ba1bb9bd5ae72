package campaigns

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/nyaruka/phonenumbers"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// ContactInput is one contact of an upload.
type ContactInput struct {
	// Number is the number to call (digits, * or #, an optional leading
	// +; spaces, dashes, dots and brackets are dropped).
	Number string `json:"number"`
	// Zone is the contact's IANA time zone; empty: the number's (a number
	// in international form names its country's zones), else the
	// campaign's.
	Zone       string            `json:"zone,omitempty"`
	Identities identity.Set      `json:"identities,omitempty"`
	Variables  map[string]string `json:"variables,omitempty"`
}

// LineError is what is wrong with one line of an upload (the CSV line, or
// the contact's position in a JSON list, from 1).
type LineError struct {
	Line    int    `json:"line"`
	Problem string `json:"problem"`
}

// ImportError is an upload refused because of bad lines; nothing of it
// was added. It is an ErrInvalidRequest.
type ImportError struct {
	Lines []LineError // the first maxErrorsShown
	Total int         // how many lines were bad
}

func (e *ImportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d contact line(s) refused, nothing was added: ", ErrInvalidRequest, e.Total)
	for i, l := range e.Lines {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "line %d: %s", l.Line, l.Problem)
	}
	if e.Total > len(e.Lines) {
		fmt.Fprintf(&b, "; and %d more", e.Total-len(e.Lines))
	}
	return b.String()
}

func (e *ImportError) Unwrap() error { return ErrInvalidRequest }

// ParseCSV reads contacts from CSV with a header line: a number column,
// optionally zone, identity.NAME columns (the contact's identities) and
// any other columns (variables named after them). Lines are numbered as in
// the file.
func ParseCSV(r io.Reader) ([]ContactInput, []int, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 0
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the CSV has no header line (number, and optionally zone, identity.NAME and variable columns)", ErrInvalidRequest)
	}
	cols := make([]string, len(head))
	numberCol := -1
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\uFEFF"))
		cols[i] = h
		if strings.EqualFold(h, "number") {
			numberCol = i
		}
	}
	if numberCol < 0 {
		return nil, nil, fmt.Errorf("%w: the CSV header has no number column", ErrInvalidRequest)
	}
	var out []ContactInput
	var lines []int
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, &ImportError{Lines: []LineError{{Line: pe.Line, Problem: pe.Err.Error()}}, Total: 1}
			}
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
		c := ContactInput{}
		for i, v := range rec {
			switch name := cols[i]; {
			case i == numberCol:
				c.Number = v
			case strings.EqualFold(name, "zone"):
				c.Zone = strings.TrimSpace(v)
			case strings.HasPrefix(name, "identity."):
				if v != "" {
					if c.Identities == nil {
						c.Identities = identity.Set{}
					}
					c.Identities[strings.TrimPrefix(name, "identity.")] = v
				}
			case name != "":
				if c.Variables == nil {
					c.Variables = map[string]string{}
				}
				c.Variables[name] = v
			}
		}
		out = append(out, c)
		lines = append(lines, line)
		if len(out) > MaxContacts {
			return nil, nil, fmt.Errorf("%w: more than %d contacts", ErrInvalidRequest, MaxContacts)
		}
	}
	return out, lines, nil
}

// ParseJSON reads contacts from {"contacts": [...]} or a bare list; line
// numbers are positions in the list, from 1.
func ParseJSON(b []byte) ([]ContactInput, []int, error) {
	var list []ContactInput
	trimmed := bytes.TrimSpace(b)
	var err error
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var body struct {
			Contacts []ContactInput `json:"contacts"`
		}
		err = json.Unmarshal(trimmed, &body)
		list = body.Contacts
	} else {
		err = json.Unmarshal(trimmed, &list)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: contacts are a JSON list of {number, zone, identities, variables}: %v", ErrInvalidRequest, err)
	}
	if len(list) > MaxContacts {
		return nil, nil, fmt.Errorf("%w: more than %d contacts", ErrInvalidRequest, MaxContacts)
	}
	lines := make([]int, len(list))
	for i := range lines {
		lines[i] = i + 1
	}
	return list, lines, nil
}

var (
	numberRe   = regexp.MustCompile(`^\+?[0-9*#]{1,32}$`)
	variableRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)

// contact is a checked contact, ready to insert.
type contact struct {
	number     string
	zones      []string
	identities []byte
	variables  []byte
}

// check checks one contact of a campaign with windows sched and default
// zone def.
func check(in ContactInput, sched schedule, def string, now time.Time) (contact, string) {
	number := config.NormalizeNumber(in.Number)
	if number == "" {
		return contact{}, "number is required"
	}
	if !numberRe.MatchString(number) {
		return contact{}, "number is 1 to 32 digits, * or #, with an optional leading +"
	}
	zoneNames, problem := contactZones(number, in.Zone, def)
	if problem != "" {
		return contact{}, problem
	}
	locs, _ := locations(zoneNames)
	if _, ok := sched.next(now, locs); !ok {
		return contact{}, fmt.Sprintf("the number's zones (%s) share no calling time in the campaign's windows: give the contact a zone", strings.Join(zoneNames, ", "))
	}
	ids := in.Identities
	if len(ids) > 0 {
		raw, _ := json.Marshal(ids)
		var err error
		if ids, err = identity.ParseJSONValue(raw, nil); err != nil {
			return contact{}, strings.TrimPrefix(err.Error(), "identity: ")
		}
	}
	if len(in.Variables) > maxVariables {
		return contact{}, fmt.Sprintf("at most %d variables", maxVariables)
	}
	for k, v := range in.Variables {
		if !variableRe.MatchString(k) {
			return contact{}, fmt.Sprintf("variable %q: a name is letters, digits and _ (at most 64)", clip(k))
		}
		if !utf8.ValidString(v) || utf8.RuneCountInString(v) > maxVariableChars {
			return contact{}, fmt.Sprintf("variable %q: a value is UTF-8 text of at most %d characters", k, maxVariableChars)
		}
	}
	c := contact{number: number, zones: zoneNames}
	c.identities, _ = json.Marshal(orEmpty(ids))
	c.variables, _ = json.Marshal(orEmpty(in.Variables))
	return c, ""
}

func orEmpty[M ~map[string]string](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// contactZones is the zones a contact's windows are read in: its own, its
// number's country's (international numbers), or the campaign's.
func contactZones(number, zone, def string) ([]string, string) {
	if zone != "" {
		if _, err := loadZone(zone); err != nil {
			return nil, fmt.Sprintf("zone %q is not a known time zone", clip(zone))
		}
		return []string{zone}, ""
	}
	if strings.HasPrefix(number, "+") {
		if p, err := phonenumbers.Parse(number, ""); err == nil {
			if names, err := phonenumbers.GetTimezonesForNumber(p); err == nil && len(names) > 0 && names[0] != phonenumbers.UNKNOWN_TIMEZONE {
				var known []string
				for _, n := range names {
					if _, err := loadZone(n); err == nil {
						known = append(known, n)
					}
				}
				if len(known) > 0 {
					return known, ""
				}
			}
		}
	}
	if def != "" {
		return []string{def}, ""
	}
	return nil, "no time zone: the number names no country, so give the contact a zone or the campaign one"
}

// AddContacts adds contacts to campaign id, all or none: any bad line
// refuses the upload with an *ImportError naming every bad line (up to
// 100). lines are the contacts' lines in the upload. A number already in
// the campaign, or twice in the upload, is a bad line. Contacts cannot be
// added to a cancelled or finished campaign (ErrConflict). It returns how
// many were added.
func (s *Service) AddContacts(ctx context.Context, id string, in []ContactInput, lines []int) (int, error) {
	if len(in) == 0 {
		return 0, fmt.Errorf("%w: no contacts", ErrInvalidRequest)
	}
	var added int
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		c, err := scanCampaign(tx.QueryRow(ctx, `SELECT `+campaignColumns+` FROM stackbone_platform.campaigns WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrNotFound, clip(id))
		}
		if err != nil {
			return err
		}
		if c.Status == StatusCancelled || c.Status == StatusFinished {
			return fmt.Errorf("%w: the campaign is %s", ErrConflict, c.Status)
		}
		var have, last int
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(max(seq), 0) FROM stackbone_platform.campaign_contacts
			WHERE campaign_id = $1`, id).Scan(&have, &last); err != nil {
			return err
		}
		if have+len(in) > MaxContacts {
			return fmt.Errorf("%w: a campaign holds at most %d contacts (it has %d; the upload has %d)", ErrInvalidRequest, MaxContacts, have, len(in))
		}
		ok, err := s.checkAll(ctx, tx, c, in, lines)
		if err != nil {
			return err
		}
		rows := make([][]any, len(ok))
		for i, k := range ok {
			rows[i] = []any{id, last + i + 1, k.number, k.zones, k.identities, k.variables}
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"stackbone_platform", "campaign_contacts"},
			[]string{"campaign_id", "seq", "number", "zones", "identities", "variables"}, pgx.CopyFromRows(rows))
		added = int(n)
		return err
	})
	if err != nil {
		if fault.Of(err) == nil {
			return 0, fault.Hide(ErrUnavailable, err)
		}
		return 0, err
	}
	s.log.Info("campaign contacts added", "campaign", id, "contacts", added)
	if added >= analyzeAfter {
		s.analyzeContacts(ctx)
	}
	s.Wake()
	return added, nil
}

// analyzeAfter is the size of an upload after which the contacts'
// statistics are renewed at once.
const analyzeAfter = 1000

// analyzeContacts renews the contacts' statistics. The scheduler's passes
// are planned from them: until they count a campaign's contacts, a pass
// may read all of its waiting contacts to find the few due, and the
// autovacuum daemon renews them only once a tenth of the table changed
// (never, for one campaign among many). A failure is logged: the passes
// work, only slower.
func (s *Service) analyzeContacts(ctx context.Context) {
	if _, err := s.cfg.Pool.Exec(ctx, `ANALYZE stackbone_platform.campaign_contacts`); err != nil {
		s.log.Warn("campaigns: contacts' statistics not renewed", "error", err)
	}
}

// checkAll checks every contact of an upload to campaign c.
func (s *Service) checkAll(ctx context.Context, tx pgx.Tx, c Campaign, in []ContactInput, lines []int) ([]contact, error) {
	sched := parseSchedule(c.Windows)
	now := s.cfg.Now()
	out := make([]contact, 0, len(in))
	bad := &ImportError{}
	report := func(line int, problem string) {
		bad.Total++
		if len(bad.Lines) < maxErrorsShown {
			bad.Lines = append(bad.Lines, LineError{Line: line, Problem: problem})
		}
	}
	seen := make(map[string]int, len(in))
	numbers := make([]string, 0, len(in))
	for i, ci := range in {
		k, problem := check(ci, sched, c.Zone, now)
		if problem != "" {
			report(lines[i], problem)
			continue
		}
		if first, dup := seen[k.number]; dup {
			report(lines[i], fmt.Sprintf("the number is also on line %d", first))
			continue
		}
		seen[k.number] = lines[i]
		numbers = append(numbers, k.number)
		out = append(out, k)
	}
	rows, err := tx.Query(ctx, `SELECT number FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1 AND number = ANY($2)`, c.ID, numbers)
	if err != nil {
		return nil, err
	}
	existing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, n := range existing {
		report(seen[n], "the number is already in the campaign")
	}
	if bad.Total > 0 {
		return nil, bad
	}
	return out, nil
}

// Contact is one contact as the API shows it.
type Contact struct {
	Seq         int               `json:"seq"`
	Number      string            `json:"number"`
	Zones       []string          `json:"zones"`
	Identities  map[string]string `json:"identities"`
	Variables   map[string]string `json:"variables"`
	State       string            `json:"state"`
	Attempts    int               `json:"attempts"`
	NextAt      *time.Time        `json:"nextAt"`
	LastOutcome *string           `json:"lastOutcome"`
	LastCallID  *string           `json:"lastCallId"`
	Reason      *string           `json:"reason"`
	UpdatedAt   time.Time         `json:"updatedAt"`
}

// ContactFilter selects contacts: by state, after seq After, at most Limit
// (default 100, at most 1000).
type ContactFilter struct {
	State string
	After int
	Limit int
}

// Contacts lists a campaign's contacts in upload order. Errors:
// ErrNotFound, ErrInvalidRequest (an unknown state).
func (s *Service) Contacts(ctx context.Context, id string, f ContactFilter) ([]Contact, error) {
	if f.State != "" && !slices.Contains(States, f.State) {
		return nil, fmt.Errorf("%w: state is one of %s", ErrInvalidRequest, strings.Join(States, ", "))
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, 1000)
	// Whether the campaign exists, without counting its contacts.
	var exists bool
	if err := s.cfg.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.campaigns WHERE id = $1)`, id).Scan(&exists); err != nil {
		return nil, fault.Hide(ErrUnavailable, err)
	}
	if !exists {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, clip(id))
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT seq, number, zones, identities, variables, state, attempts,
		CASE WHEN state = 'waiting' THEN next_at END, last_outcome, last_call_id, reason, updated_at
		FROM stackbone_platform.campaign_contacts
		WHERE campaign_id = $1 AND ($2 = '' OR state = $2) AND seq > $3 ORDER BY seq LIMIT $4`, id, f.State, f.After, f.Limit)
	if err != nil {
		return nil, fault.Hide(ErrUnavailable, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Contact, error) {
		var c Contact
		err := r.Scan(&c.Seq, &c.Number, &c.Zones, &c.Identities, &c.Variables, &c.State, &c.Attempts, &c.NextAt,
			&c.LastOutcome, &c.LastCallID, &c.Reason, &c.UpdatedAt)
		return c, err
	})
	if err != nil {
		return nil, fault.Hide(ErrUnavailable, err)
	}
	return list, nil
}
