package campaigns

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

// Duration is a time.Duration written as Go writes one ("90s", "10m").
type Duration time.Duration

// MarshalJSON writes d as "10m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "10m", "1h30m" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err := json.Unmarshal(b, &secs); err != nil {
			return fmt.Errorf(`a duration is a string like "10m" or a number of seconds`)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`a duration is a string like "10m" or "1h30m"`)
	}
	*d = Duration(v)
	return nil
}

// Rule is how a contact is tried again after one kind of outcome:
// Attempts more times at most, Delay after the last (± the policy's
// jitter).
type Rule struct {
	Attempts int      `json:"attempts"`
	Delay    Duration `json:"delay"`
}

// Retry is a campaign's retry policy per kind of outcome.
type Retry struct {
	// Busy: the callee was busy (SIP 486/600).
	Busy Rule `json:"busy"`
	// NoAnswer: it rang out, was declined or unavailable.
	NoAnswer Rule `json:"noAnswer"`
	// Voicemail: an answering machine took the call (the agent's
	// answering-machine detection must be on to tell).
	Voicemail Rule `json:"voicemail"`
	// Failed: the trunk failed, the box stopped or died before the call
	// was answered.
	Failed Rule `json:"failed"`
	// Jitter spreads each delay by up to this fraction either way (default
	// 0.1), so retries of contacts that failed together do not return
	// together.
	Jitter float64 `json:"jitter"`
}

// RetryChange changes a retry policy: the rules and jitter it names.
type RetryChange struct {
	Busy      *Rule    `json:"busy,omitempty"`
	NoAnswer  *Rule    `json:"noAnswer,omitempty"`
	Voicemail *Rule    `json:"voicemail,omitempty"`
	Failed    *Rule    `json:"failed,omitempty"`
	Jitter    *float64 `json:"jitter,omitempty"`
}

// apply is r with c's changes (r when c is nil).
func (c *RetryChange) apply(r Retry) Retry {
	if c == nil {
		return r
	}
	for _, x := range []struct {
		from *Rule
		to   *Rule
	}{{c.Busy, &r.Busy}, {c.NoAnswer, &r.NoAnswer}, {c.Voicemail, &r.Voicemail}, {c.Failed, &r.Failed}} {
		if x.from != nil {
			*x.to = *x.from
		}
	}
	if c.Jitter != nil {
		r.Jitter = *c.Jitter
	}
	return r
}

// DefaultRetry is two more tries after busy (10 minutes apart) and no
// answer (30 minutes), one after voicemail (an hour) and failure (5
// minutes), with 10% jitter.
func DefaultRetry() Retry {
	return Retry{
		Busy:      Rule{Attempts: 2, Delay: Duration(10 * time.Minute)},
		NoAnswer:  Rule{Attempts: 2, Delay: Duration(30 * time.Minute)},
		Voicemail: Rule{Attempts: 1, Delay: Duration(time.Hour)},
		Failed:    Rule{Attempts: 1, Delay: Duration(5 * time.Minute)},
		Jitter:    0.1,
	}
}

// Limits of a retry policy.
const (
	maxRetries = 10
	maxDelay   = 7 * 24 * time.Hour
)

func (r Retry) check() []string {
	var problems []string
	for _, x := range []struct {
		name string
		rule Rule
	}{{"busy", r.Busy}, {"noAnswer", r.NoAnswer}, {"voicemail", r.Voicemail}, {"failed", r.Failed}} {
		if x.rule.Attempts < 0 || x.rule.Attempts > maxRetries {
			problems = append(problems, fmt.Sprintf("retry.%s.attempts is 0 to %d", x.name, maxRetries))
		}
		if d := time.Duration(x.rule.Delay); d < 0 || d > maxDelay {
			problems = append(problems, fmt.Sprintf("retry.%s.delay is 0 to 168h", x.name))
		}
	}
	if r.Jitter < 0 || r.Jitter > 0.5 {
		problems = append(problems, "retry.jitter is 0 to 0.5")
	}
	return problems
}

// Kinds of outcome, as the policy reads them.
const (
	kindReached   = "reached"
	kindBusy      = "busy"
	kindNoAnswer  = "noAnswer"
	kindVoicemail = "voicemail"
	kindFailed    = "failed"
)

// kindOf classes a call's end for the policy: an answered call reached
// the contact unless a machine answered; an unanswered one is busy, no
// answer or a failure.
func kindOf(outcome, answeredBy string, answered bool) string {
	switch {
	case answeredBy == "voicemail" || answeredBy == "fax":
		return kindVoicemail
	case answered:
		return kindReached
	case outcome == "busy":
		return kindBusy
	case outcome == "no_answer" || outcome == "cancelled":
		return kindNoAnswer
	}
	return kindFailed
}

// rule is the policy's rule for kind.
func (r Retry) rule(kind string) Rule {
	switch kind {
	case kindBusy:
		return r.Busy
	case kindNoAnswer:
		return r.NoAnswer
	case kindVoicemail:
		return r.Voicemail
	}
	return r.Failed
}

// delay is rule's delay with the policy's jitter.
func (r Retry) delay(rule Rule) time.Duration {
	d := time.Duration(rule.Delay)
	if r.Jitter > 0 && d > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * r.Jitter * float64(d))
	}
	return d
}
