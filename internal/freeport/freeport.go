// Package freeport finds loopback ports for servers a test starts later.
//
// A port the kernel handed out for 127.0.0.1:0 and that the test closed
// again is free only until the kernel hands it to another socket: with many
// tests in parallel opening media sockets, a server bound to it a moment
// later found it taken (a CI run failed so). The ports found here lie below
// the kernel's ephemeral range, which only explicit binds reach.
package freeport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Bind is one socket the port must take: network "udp" or "tcp", on the
// port plus Offset.
type Bind struct {
	Network string
	Offset  int
}

var (
	UDP     = Bind{Network: "udp"}
	TCP     = Bind{Network: "tcp"}
	NextTCP = Bind{Network: "tcp", Offset: 1} // SIP over TLS beside SIP, as baresip listens
)

const first = 10000

// given are the ports this process handed out: two tests of one package
// asking at once never get the same port (tests of other packages pick
// at random among some 20,000).
var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Get returns a port on 127.0.0.1 below the ephemeral range where every one
// of binds succeeded (UDP alone when none is given).
func Get(tb testing.TB, binds ...Bind) int {
	tb.Helper()
	if len(binds) == 0 {
		binds = []Bind{UDP}
	}
	low := ephemeralLow()
	if low <= first+1000 {
		tb.Fatalf("freeport: ephemeral ports start at %d, no room below them", low)
	}
	maxOffset := 1
	for _, b := range binds {
		maxOffset = max(maxOffset, b.Offset)
	}
	span := low - first - maxOffset // leave room for the largest offset
	start := rand.IntN(span)
	mu.Lock()
	defer mu.Unlock()
	for i := range span {
		port := first + (start+i)%span
		if !anyGiven(port, binds) && takes(port, binds) {
			given[port], given[port+1] = true, true
			for _, b := range binds {
				given[port+b.Offset] = true
			}
			return port
		}
	}
	tb.Fatalf("freeport: no free port in %d-%d", first, low-1)
	return 0
}

// anyGiven reports whether a port the binds would take was handed out.
func anyGiven(port int, binds []Bind) bool {
	if given[port] || given[port+1] {
		return true
	}
	for _, b := range binds {
		if given[port+b.Offset] {
			return true
		}
	}
	return false
}

func takes(port int, binds []Bind) bool {
	var closers []interface{ Close() error }
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, b := range binds {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port+b.Offset))
		var (
			c   interface{ Close() error }
			err error
		)
		if b.Network == "udp" {
			c, err = net.ListenPacket("udp4", addr)
		} else {
			c, err = net.Listen("tcp4", addr)
		}
		if err != nil {
			return false
		}
		closers = append(closers, c)
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}
