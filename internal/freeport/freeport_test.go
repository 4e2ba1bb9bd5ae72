package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestGetIsBelowTheEphemeralRangeAndBinds(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		p := Get(t, UDP, TCP, NextTCP)
		if p < first || p+1 >= low {
			t.Fatalf("port %d outside %d-%d", p, first, low-1)
		}
		u, err := net.ListenPacket("udp4", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("udp %d: %v", p, err)
		}
		l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(p+1))
		if err != nil {
			t.Fatalf("tcp %d: %v", p+1, err)
		}
		u.Close()
		l.Close()
	}
}

func TestGetSkipsATakenPort(t *testing.T) {
	p := Get(t, TCP)
	l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if takes(p, []Bind{TCP}) {
		t.Fatalf("port %d taken, yet takes said free", p)
	}
}

// A port handed out is not handed out again by this process, nor its
// neighbour (a NextTCP of the one before).
func TestGetNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p := Get(t, UDP)
		if seen[p] || seen[p-1] || seen[p+1] {
			t.Fatalf("port %d handed out again (or next to one that was)", p)
		}
		seen[p] = true
	}
}
