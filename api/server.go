package api

import (
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/stackbone/box/config"
)

// Defaults of config.HTTP's timeouts and limits.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultUploadTimeout = 10 * time.Minute
	DefaultWriteTimeout  = 6 * time.Minute
	DefaultIdleTimeout   = 60 * time.Second
	maxDefaultConns      = 4096
)

// HTTPServer is the box's HTTP server around h, with each timeout of c (its
// zero fields take the defaults above), serving ln (see Listen), which it
// tells each connection's state so ln keeps its limits. The server has no
// global read or write timeout, because one value cannot fit a JSON call, a
// 25 MB upload and a stream: each request gets its own read deadline by kind
// (a multipart upload UploadTimeout, any other body BodyTimeout) and a write
// deadline (WriteTimeout) that a stream lifts when it starts (wire.NewSSE).
// Connections idle between requests close after IdleTimeout.
func HTTPServer(h http.Handler, c config.HTTP, log *slog.Logger, ln *Listener) *http.Server {
	c = withHTTPDefaults(c)
	ln.log = log
	return &http.Server{
		Handler:           onReserve(deadlines(h, c)),
		ReadHeaderTimeout: c.HeaderTimeout,
		IdleTimeout:       c.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState:         ln.track,
		ConnContext:       ln.context,
	}
}

// LimitsOf are the connection limits of c.
func LimitsOf(c config.HTTP) Limits {
	return Limits{Max: c.MaxConnections, PerAddress: c.MaxConnectionsPerAddress}
}

// DefaultMaxConnections is half the process's open-file limit (the rest is
// for the database, SIP, media and files), at most 4096.
func DefaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 512
	}
	return int(min(lim.Cur/2, maxDefaultConns))
}

func withHTTPDefaults(c config.HTTP) config.HTTP {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.HeaderTimeout, DefaultHeaderTimeout}, {&c.BodyTimeout, DefaultBodyTimeout},
		{&c.UploadTimeout, DefaultUploadTimeout}, {&c.WriteTimeout, DefaultWriteTimeout},
		{&c.IdleTimeout, DefaultIdleTimeout},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return c
}

// deadlines sets each request's read and write deadlines by its kind.
func deadlines(h http.Handler, c config.HTTP) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		read := c.BodyTimeout
		if strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "multipart/") {
			read = c.UploadTimeout
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(now.Add(read))
		_ = rc.SetWriteDeadline(now.Add(c.WriteTimeout))
		h.ServeHTTP(w, r)
	})
}
