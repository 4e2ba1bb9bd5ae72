package api_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/wire"
)

// serveWith serves h with the box's server settings c on a listener with
// the limits lim, and returns its address.
func serveWith(t *testing.T, h http.Handler, c config.HTTP, lim api.Limits) string {
	t.Helper()
	ln, err := api.Listen("127.0.0.1:0", lim)
	if err != nil {
		t.Fatal(err)
	}
	srv := api.HTTPServer(h, c, pgtest.Logger(t), ln)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(t *testing.T, conn net.Conn, d time.Duration) bool {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(conn)
	return err == nil // EOF: the server closed it; a timeout is an error
}

// Idle and slow connections are closed by their own timeouts; streams are
// not cut by the write deadline; connections past the cap wait.
func TestHTTPServerTimeoutsAndConnectionCap(t *testing.T) {
	t.Parallel()
	c := config.HTTP{HeaderTimeout: 300 * time.Millisecond, BodyTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, UploadTimeout: 5 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body); io.WriteString(w, "ok") })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/body", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "slow body", http.StatusRequestTimeout)
			return
		}
		io.WriteString(w, "read")
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		sse := wire.NewSSE(w)
		for i := 0; i < 4; i++ {
			if err := sse.Event("", []byte(`{}`)); err != nil {
				return
			}
			time.Sleep(250 * time.Millisecond) // past the write deadline in total
		}
		sse.Event("done", []byte(`{}`))
	})
	addr := serveWith(t, mux, c, api.Limits{Max: 2, PerAddress: -1, Reserve: 1})

	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %v", resp, err)
		}
		resp.Body.Close()
		if !closedWithin(t, conn, 3*time.Second) {
			t.Fatal("an idle keep-alive connection stayed open")
		}
	})
	t.Run("connection that sends nothing", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if !closedWithin(t, conn, 3*time.Second) {
			t.Fatal("a silent connection stayed open")
		}
	})
	t.Run("slow body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		// The handler's read fails at the body deadline: the server answers
		// 408 or closes the connection, but does not wait.
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil && resp.StatusCode != http.StatusRequestTimeout || err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			t.Fatalf("a body that never ends: %v %v", resp, err)
		}
	})
	t.Run("stream outlives the write deadline", func(t *testing.T) {
		resp, err := http.Get("http://" + addr + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "event: done") {
			t.Fatalf("the stream was cut: %q", b)
		}
	})
	t.Run("cap", func(t *testing.T) {
		// Two connections hold the cap, each busy with a request (half a
		// header, alive until the header timeout): a third that carries no
		// key is answered 503 at once on the reserve, a health check is
		// served there, and a fourth past the reserve is refused.
		var held []net.Conn
		for range 2 {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, "GET /ok HTTP/1.1\r\n")
			held = append(held, conn)
		}
		fresh := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		poll.Until(t, "a request past the cap to be refused at once", 5*time.Second, func() bool {
			resp, err := fresh.Get("http://" + addr + "/ok")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
		})
		// (A refused connection may still count for a moment after its
		// answer, until the server reports it closed.)
		poll.Until(t, "a health check past the cap to be served on the reserve", 5*time.Second, func() bool {
			resp, err := fresh.Get("http://" + addr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	})
}

// limitsServer serves a health check and an API route (200 with a key) on
// a listener with lim, and returns its address.
func limitsServer(t *testing.T, lim api.Limits) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/api/x", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	})
	return serveWith(t, mux, config.HTTP{}, lim)
}

// dialFrom opens a connection to addr from the loopback address from.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// served reports whether GET path answered status within a second, on a
// fresh connection (with a key when key).
func served(addr, path string, key bool, status int) bool {
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	if key {
		req.Header.Set("Authorization", "Bearer k")
	}
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == status
}

// Clients that hold every connection cannot lock others out: idle
// keep-alive connections filling the cap (kept alive with a request now
// and then) give way to new clients, one address cannot take more than
// its share, and when every connection is busy the reserve still serves
// requests with a key and health checks.
func TestConnectionsCannotLockClientsOut(t *testing.T) {
	t.Parallel()
	t.Run("idle keep-alives at the cap", func(t *testing.T) {
		t.Parallel()
		addr := limitsServer(t, api.Limits{Max: 8, PerAddress: -1})
		var idle []net.Conn
		for range 8 {
			conn := dialFrom(t, "127.0.0.2", addr)
			io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("a held connection's request: %v %v", resp, err)
			}
			resp.Body.Close()
			idle = append(idle, conn)
		}
		for i := range 15 {
			if !served(addr, "/healthz", false, 200) {
				t.Fatalf("health check %d was not answered within a second with the cap held by idle keep-alives", i)
			}
		}
		if !served(addr, "/api/x", true, 200) {
			t.Fatal("an API call with a key was not answered")
		}
	})
	t.Run("one address's share", func(t *testing.T) {
		t.Parallel()
		addr := limitsServer(t, api.Limits{Max: 8, PerAddress: 4})
		// Eight connections from one address each start a request and
		// never finish it: only four are kept.
		for range 8 {
			io.WriteString(dialFrom(t, "127.0.0.3", addr), "GET /healthz HTTP/1.1\r\n")
		}
		for i := range 15 {
			if !served(addr, "/healthz", false, 200) {
				t.Fatalf("health check %d from another address was not answered", i)
			}
		}
	})
	t.Run("reserve", func(t *testing.T) {
		t.Parallel()
		addr := limitsServer(t, api.Limits{Max: 4, PerAddress: -1, Reserve: 2})
		for range 4 {
			io.WriteString(dialFrom(t, "127.0.0.4", addr), "GET /healthz HTTP/1.1\r\n")
		}
		poll.Until(t, "a request without a key to be refused on the reserve", 5*time.Second, func() bool {
			return served(addr, "/api/x", false, http.StatusServiceUnavailable)
		})
		if !served(addr, "/api/x", true, 200) || !served(addr, "/healthz", false, 200) {
			t.Fatal("the reserve did not serve a call with a key and a health check")
		}
	})
}
