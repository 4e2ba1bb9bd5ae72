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
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/wire"
)

// serveWith serves h with the box's server settings c on a listener capped
// at maxConns, and returns its address.
func serveWith(t *testing.T, h http.Handler, c config.HTTP, maxConns int) string {
	t.Helper()
	ln, err := api.Listen("127.0.0.1:0", maxConns)
	if err != nil {
		t.Fatal(err)
	}
	srv := api.HTTPServer(h, c, pgtest.Logger(t))
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
	addr := serveWith(t, mux, c, 2)

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
		// Two connections hold the cap (each sends half a header, so it
		// lives until the header timeout); a third waits for one to close.
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
		time.Sleep(50 * time.Millisecond) // let the server accept both
		fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := fresh.Get("http://" + addr + "/ok")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// The third was served only once the server let a held one go (its
		// header timeout): by now at least one of them is closed, not
		// merely waiting.
		closed := 0
		for _, conn := range held {
			conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			var b [512]byte
			for {
				_, err := conn.Read(b[:])
				if err == nil {
					continue // the 408 the server answers before it closes
				}
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					closed++
				}
				break
			}
		}
		if closed == 0 {
			t.Fatal("a third connection was served while both held connections were still open, past a cap of 2")
		}
	})
}
