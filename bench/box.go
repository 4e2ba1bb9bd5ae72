package bench

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
)

// StartBox runs a whole box under load (box.StartLocal) from cfg on pool,
// with key holding every scope; the log is discarded unless opt names one.
// stop drains the calls and ends it all.
func StartBox(ctx context.Context, pool *pgxpool.Pool, cfg *config.Config, key string, opt box.Options) (s *box.Local, stop func(), err error) {
	opt.Pool = pool
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return box.StartLocal(ctx, cfg, opt, "bench", key)
}
