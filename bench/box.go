package bench

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
)

// Served is a whole box under load: built by box.New as the stackbone
// command builds it, started, and served on a loopback port.
type Served struct {
	*box.Box
	// URL is where its HTTP handler listens.
	URL string
	// Key holds every scope.
	Key string
}

// StartBox builds the box from cfg on pool (box.New), gives it key with
// every scope, starts it and serves its handler on loopback. SIP listens
// on a free loopback port unless cfg says where; the log is discarded
// unless opt names one. stop drains the calls and ends it all.
func StartBox(ctx context.Context, pool *pgxpool.Pool, cfg *config.Config, key string, opt box.Options) (s *Served, stop func(), err error) {
	if cfg.SIP.Addr == "" {
		cfg.SIP.Addr = "127.0.0.1:0"
	}
	opt.Pool = pool
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	b, err := box.New(ctx, cfg, opt)
	if err != nil {
		return nil, nil, err
	}
	if err := b.Keys.Ensure(ctx, "bench", key, auth.AllScopes); err != nil {
		return nil, nil, err
	}
	url, stop, err := b.ServeLoopback(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &Served{Box: b, URL: url, Key: key}, stop, nil
}
