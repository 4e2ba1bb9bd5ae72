package box

import (
	"context"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
)

// Local is a whole box built from a config, started, and served on a
// loopback port with one key that holds every scope: how the tests
// (boxtest) and the load tools (bench) run a box.
type Local struct {
	*Box
	// URL is where its HTTP handler is served.
	URL string
	// Key holds every scope.
	Key string
}

// StartLocal builds the box from cfg (New, as the stackbone command builds
// it), gives it the key named name with secret key holding every scope,
// starts it and serves its handler on loopback (ServeLoopback). SIP
// listens on a free loopback port unless cfg says where. stop drains the
// calls and ends it all.
func StartLocal(ctx context.Context, cfg *config.Config, opt Options, name, key string) (l *Local, stop func(), err error) {
	if cfg.SIP.Addr == "" {
		cfg.SIP.Addr = "127.0.0.1:0"
	}
	b, err := New(ctx, cfg, opt)
	if err != nil {
		return nil, nil, err
	}
	if err := b.Keys.Ensure(ctx, name, key, auth.AllScopes); err != nil {
		return nil, nil, err
	}
	url, stop, err := b.ServeLoopback(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &Local{Box: b, URL: url, Key: key}, stop, nil
}
