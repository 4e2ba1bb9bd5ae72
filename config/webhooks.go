package config

import "time"

// Webhooks tunes how the box delivers events to webhook subscriptions
// (the subscriptions themselves live in the database: /api/webhooks).
type Webhooks struct {
	// Timeout bounds one delivery attempt, connecting included (default
	// 10 s). A receiver slower than this is retried later.
	Timeout time.Duration `yaml:"timeout"`
	// Workers is how many deliveries one box sends at once (default 10).
	Workers int `yaml:"workers"`
}
