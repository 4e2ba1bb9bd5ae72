package provider

import (
	"sync"
	"time"

	"github.com/stackbone/box/config"
)

// Defaults of a provider's circuit (config.Circuit).
const (
	DefaultCircuitFailures = 5
	DefaultCircuitWindow   = 30 * time.Second
	DefaultCircuitCooldown = 15 * time.Second
)

// CircuitState is a circuit's state.
type CircuitState string

// States of a circuit: closed (requests go through), open (the provider
// is skipped at once), half-open (one probe request may go through; its
// outcome closes or reopens the circuit).
const (
	CircuitClosed   CircuitState = "closed"
	CircuitOpen     CircuitState = "open"
	CircuitHalfOpen CircuitState = "half-open"
)

// Endpoints of a provider that have a circuit each.
const (
	EndpointChat           = "chat"
	EndpointTranscriptions = "transcriptions"
	EndpointSpeech         = "speech"
)

// Endpoints lists them in the order operators see them.
var Endpoints = []string{EndpointChat, EndpointTranscriptions, EndpointSpeech}

// newCircuits makes a provider's circuits, one per endpoint.
func newCircuits(provider string, cfg config.Circuit) map[string]*Circuit {
	m := map[string]*Circuit{}
	for _, ep := range Endpoints {
		c := newCircuit(provider, cfg, nil)
		c.endpoint = ep
		m[ep] = c
	}
	return m
}

// Circuit is the health of one provider endpoint, shared by every call and
// text turn of the box: opened after Failures failures within Window when
// at least half of the window's requests failed, so a provider that is
// down or failing often is skipped at once instead of failing or timing
// out on each request (while a busy provider's rare failure does not open
// it); after Cooldown one probe request may go through, and its success
// closes the circuit. It is safe for concurrent use.
type Circuit struct {
	name     string
	endpoint string
	cfg      config.Circuit
	now      func() time.Time

	mu       sync.Mutex
	state    CircuitState
	failures []time.Time // within the window, while closed
	oks      []time.Time // successes within the window, while closed
	openedAt time.Time
	probing  bool
	opened   int       // times the circuit opened
	last     []Failure // the latest failures, newest last
	changed  func(CircuitState)
}

// Failure is one recorded failure of a provider: when, and its kind in the
// box's words (never the provider's text).
type Failure struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// maxLastFailures is how many failures a circuit keeps for operators.
const maxLastFailures = 10

func newCircuit(name string, cfg config.Circuit, now func() time.Time) *Circuit {
	if cfg.Failures <= 0 {
		cfg.Failures = DefaultCircuitFailures
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultCircuitWindow
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = DefaultCircuitCooldown
	}
	if now == nil {
		now = time.Now
	}
	return &Circuit{name: name, cfg: cfg, now: now, state: CircuitClosed}
}

// Allow reports whether a request may go to the provider now: always when
// closed; when open, not until the cooldown has passed, and then as the one
// probe of the half-open state.
func (c *Circuit) Allow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case CircuitClosed:
		return true
	case CircuitOpen:
		if c.now().Sub(c.openedAt) < c.cfg.Cooldown {
			return false
		}
		c.set(CircuitHalfOpen)
		c.probing = true
		return true
	default: // half-open: one probe at a time
		if c.probing {
			return false
		}
		c.probing = true
		return true
	}
}

// Success records an answer the provider completed; a probe's closes the
// circuit.
func (c *Circuit) Success() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probing = false
	if c.state != CircuitClosed {
		c.failures, c.oks = c.failures[:0], c.oks[:0]
		c.set(CircuitClosed)
		return
	}
	now := c.now()
	c.oks = append(within(c.oks, now, c.cfg.Window), now)
}

// within (under mu) drops the times older than window before now.
func within(ts []time.Time, now time.Time, window time.Duration) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= window {
		i++
	}
	return append(ts[:0], ts[i:]...)
}

// Fail records a failure of the provider (reason in the box's words).
func (c *Circuit) Fail(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.last = append(c.last, Failure{At: now, Reason: reason})
	if len(c.last) > maxLastFailures {
		c.last = c.last[len(c.last)-maxLastFailures:]
	}
	switch c.state {
	case CircuitHalfOpen:
		c.probing = false
		c.open(now)
	case CircuitClosed:
		c.failures = append(within(c.failures, now, c.cfg.Window), now)
		c.oks = within(c.oks, now, c.cfg.Window)
		if len(c.failures) >= c.cfg.Failures && len(c.failures) >= len(c.oks) {
			c.open(now)
		}
	}
}

// Release ends a probe that reached no verdict (the request was cancelled
// by its client), so the next request may probe.
func (c *Circuit) Release() {
	c.mu.Lock()
	c.probing = false
	c.mu.Unlock()
}

func (c *Circuit) open(now time.Time) {
	c.openedAt = now
	c.failures, c.oks = c.failures[:0], c.oks[:0]
	c.opened++
	c.set(CircuitOpen)
}

// set changes the state (under mu) and tells the observer.
func (c *Circuit) set(s CircuitState) {
	if c.state == s {
		return
	}
	c.state = s
	if c.changed != nil {
		c.changed(s)
	}
}

// Down reports whether the provider is skipped or only probed now (the
// circuit is open or half-open): the box holds it down.
func (c *Circuit) Down() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state != CircuitClosed
}

// CircuitView is a circuit as operators see it.
type CircuitView struct {
	Provider string       `json:"provider"`
	Endpoint string       `json:"endpoint"`
	State    CircuitState `json:"state"`
	// Opened is how many times the circuit opened since the box started.
	Opened int `json:"opened"`
	// OpenedAt is when it last opened (zero if never).
	OpenedAt *time.Time `json:"openedAt"`
	// LastFailures are the latest failures, newest last.
	LastFailures []Failure `json:"lastFailures"`
}

// View returns the circuit's state for operators.
func (c *Circuit) View() CircuitView {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := CircuitView{Provider: c.name, Endpoint: c.endpoint, State: c.state, Opened: c.opened, LastFailures: append([]Failure{}, c.last...)}
	if c.opened > 0 {
		at := c.openedAt
		v.OpenedAt = &at
	}
	return v
}
