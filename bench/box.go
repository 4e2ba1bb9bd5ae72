package bench

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

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
	run, cancel := context.WithCancel(ctx)
	stopBox, err := b.Start(run)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stopBox()
		cancel()
		return nil, nil, err
	}
	hs := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	stop = func() {
		_ = hs.Close()
		drain, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer done()
		b.Drain(drain)
		stopBox()
		cancel()
	}
	return &Served{Box: b, URL: "http://" + ln.Addr().String(), Key: key}, stop, nil
}
