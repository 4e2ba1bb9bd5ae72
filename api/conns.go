package api

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stackbone/box/fault"
)

// Limits bounds the HTTP connections a box holds open, so that clients
// that only hold connections (idle keep-alives, half-sent headers) cannot
// lock out everyone else.
type Limits struct {
	// Max is the connections open at once (0: DefaultMaxConnections). At
	// the cap a new connection takes the place of the oldest idle
	// keep-alive one (or of the oldest that has not sent a byte).
	Max int
	// PerAddress is the connections one client address may hold (0: half
	// of Max, at least 16 or Max when it is smaller; negative: no limit,
	// for a box behind one proxy whose address every connection has). At its limit a new connection from that
	// address takes the place of its own oldest idle one, or is refused.
	PerAddress int
	// Reserve is how many connections past Max are kept for requests that
	// carry a key and for health checks, when every connection is busy
	// with a request (0: Max/16, at least 4). Any other request on one is
	// answered 503.
	Reserve int
}

// Listener is the box's HTTP listener: it accepts every connection at
// once (none waits in the kernel's backlog behind idle sockets) and keeps
// the connections within Limits. Serve it with a server made by HTTPServer
// with this listener, which reports each connection's state to it.
type Listener struct {
	net.Listener
	lim Limits
	log *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]*connState
	byAddr map[string]int
	warned time.Time
}

// connState is what the listener knows of one open connection.
type connState struct {
	addr    string
	state   http.ConnState
	since   time.Time // of its current state
	reserve bool      // admitted past Max
}

type reserveCtx struct{}

// Listen listens on addr and keeps its connections within lim.
func Listen(addr string, lim Limits) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if lim.Max <= 0 {
		lim.Max = DefaultMaxConnections()
	}
	if lim.PerAddress == 0 {
		lim.PerAddress = max(min(16, lim.Max), lim.Max/2)
	}
	if lim.Reserve <= 0 {
		lim.Reserve = max(4, lim.Max/16)
	}
	return &Listener{Listener: ln, lim: lim, log: slog.Default(), conns: map[net.Conn]*connState{}, byAddr: map[string]int{}}, nil
}

// Accept returns the next connection within the limits; connections past
// them are answered 503 and closed here.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		refuse(c)
	}
}

// admit registers c, making room for it when the box is at a limit.
func (l *Listener) admit(c net.Conn) bool {
	addr := hostOf(c.RemoteAddr())
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lim.PerAddress > 0 && l.byAddr[addr] >= l.lim.PerAddress && !l.recycle(addr) {
		l.warn(now, "a client address holds its share of the connections; refused another", addr)
		return false
	}
	reserve := false
	if len(l.conns) >= l.lim.Max && !l.recycle("") {
		if len(l.conns) >= l.lim.Max+l.lim.Reserve {
			l.warn(now, "every connection and the reserve are busy; refused one", addr)
			return false
		}
		reserve = true
	}
	l.conns[c] = &connState{addr: addr, state: http.StateNew, since: now, reserve: reserve}
	l.byAddr[addr]++
	return true
}

// recycle (under mu) closes the oldest idle keep-alive connection (from
// addr, or any when addr is ""), else the oldest that has not sent a
// byte for a second; it reports whether it made room.
func (l *Listener) recycle(addr string) bool {
	var oldest net.Conn
	var at time.Time
	for _, want := range []http.ConnState{http.StateIdle, http.StateNew} {
		for c, s := range l.conns {
			if s.state != want || (addr != "" && s.addr != addr) || (want == http.StateNew && time.Since(s.since) < time.Second) {
				continue
			}
			if oldest == nil || s.since.Before(at) {
				oldest, at = c, s.since
			}
		}
		if oldest != nil {
			l.forget(oldest)
			_ = oldest.Close()
			return true
		}
	}
	return false
}

// forget (under mu) drops c from the books.
func (l *Listener) forget(c net.Conn) {
	s, ok := l.conns[c]
	if !ok {
		return
	}
	delete(l.conns, c)
	if l.byAddr[s.addr]--; l.byAddr[s.addr] <= 0 {
		delete(l.byAddr, s.addr)
	}
}

// track is the server's ConnState hook.
func (l *Listener) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		l.forget(c)
	default:
		if s, ok := l.conns[c]; ok {
			s.state, s.since = state, time.Now()
		}
	}
}

// context marks the requests of a connection admitted past Max.
func (l *Listener) context(ctx context.Context, c net.Conn) context.Context {
	l.mu.Lock()
	s, ok := l.conns[c]
	reserve := ok && s.reserve
	l.mu.Unlock()
	if reserve {
		return context.WithValue(ctx, reserveCtx{}, true)
	}
	return ctx
}

// warn logs a refusal at most once a minute (under mu): the address only.
func (l *Listener) warn(now time.Time, msg, addr string) {
	if now.Sub(l.warned) < time.Minute {
		return
	}
	l.warned = now
	l.log.Warn("http: "+msg, "address", addr, "open", len(l.conns), "max", l.lim.Max, "reserve", l.lim.Reserve)
}

// Open is how many connections the listener holds.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// onReserve keeps the reserve connections for what must get through: a
// request with a key (an operator's API call, a turn) or a health check.
func onReserve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(reserveCtx{}) != nil && !keyed(r) && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			writeError(w, Status(fault.Unavailable), "unavailable", "the box is at its connection limit; try again shortly")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func keyed(r *http.Request) bool {
	return r.Header.Get("Authorization") != "" || r.Header.Get("x-api-key") != ""
}

// refuse answers a connection past every limit 503 and closes it.
func refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
	_ = c.Close()
}

func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return strings.TrimSpace(a.String())
	}
	return host
}
