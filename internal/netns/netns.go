// Package netns gives tests a private network: a Linux network namespace
// joined to this one by a veth pair with private addresses, so a browser
// can run "on another machine" without touching any outside address.
//
//	n, err := netns.Create()
//	defer n.Close()
//	cmd := exec.Command(n.Exec("chromium", "--headless")...)   // runs inside
//	conn, err := n.Dial(ctx, "tcp", "127.0.0.1:9222")          // dials inside
//	ln, err := n.Listen("tcp", "127.0.0.1:0")                  // listens inside
//
// It needs root and the ip command (Debian's iproute2); Available says why
// not when they are missing.
package netns

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnavailable: this process cannot create network namespaces.
var ErrUnavailable = errors.New("netns: network namespaces unavailable")

// NS is one namespace and the veth pair that joins it to the caller's
// namespace: HostIf (HostIP/24) stays here, PeerIf (PeerIP/24) is inside,
// with a default route through HostIP (the way a machine on a LAN sees its
// gateway; nothing is forwarded beyond this machine).
type NS struct {
	Name           string
	HostIf, PeerIf string
	HostIP, PeerIP netip.Addr
}

// Available reports why namespaces cannot be created here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: creating one needs root", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: the ip command is missing (Debian's iproute2)", ErrUnavailable)
	}
	return nil
}

// Create makes a namespace on a free 10.231.N.0/24 link.
func Create() (*NS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	var last error
	for range 8 {
		var b [2]byte
		_, _ = rand.Read(b[:])
		tag := fmt.Sprintf("%02x%02x", b[0], b[1])
		n := int(b[0])%250 + 2
		ns := &NS{Name: "sbtest-" + tag, HostIf: "sbh" + tag, PeerIf: "sbp" + tag,
			HostIP: netip.AddrFrom4([4]byte{10, 231, byte(n), 1}), PeerIP: netip.AddrFrom4([4]byte{10, 231, byte(n), 2})}
		if taken(ns.HostIP) {
			continue
		}
		if last = ns.setup(); last == nil {
			return ns, nil
		}
		ns.Close()
	}
	return nil, last
}

// taken reports whether an address of this namespace is on ip's /24.
func taken(ip netip.Addr) bool {
	addrs, _ := net.InterfaceAddrs()
	p := netip.PrefixFrom(ip, 24).Masked()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if x, ok := netip.AddrFromSlice(n.IP); ok && p.Contains(x.Unmap()) {
				return true
			}
		}
	}
	return false
}

func (n *NS) setup() error {
	for _, args := range [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.HostIf, "type", "veth", "peer", "name", n.PeerIf},
		{"link", "set", n.PeerIf, "netns", n.Name},
		{"addr", "add", n.HostIP.String() + "/24", "dev", n.HostIf},
		{"link", "set", n.HostIf, "up"},
		{"-n", n.Name, "addr", "add", n.PeerIP.String() + "/24", "dev", n.PeerIf},
		{"-n", n.Name, "link", "set", n.PeerIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
		{"-n", n.Name, "route", "add", "default", "via", n.HostIP.String()},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("netns: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Close deletes the namespace; its end of the veth pair goes with it, and
// the other end with that.
func (n *NS) Close() {
	_ = exec.Command("ip", "netns", "del", n.Name).Run()
	_ = exec.Command("ip", "link", "del", n.HostIf).Run() // already gone unless setup stopped half-way
}

// Exec is the command line that runs argv inside the namespace.
func (n *NS) Exec(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", n.Name}, argv...)
}

// Dial connects from inside the namespace (to its loopback, say).
func (n *NS) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.inside(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen opens a listener inside the namespace; its connections are
// served from any goroutine.
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := n.inside(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// inside runs f on an OS thread moved into the namespace. A socket keeps
// the namespace it was made in, so what f opens works from every
// goroutine. The thread is never unlocked: it exits with its goroutine, so
// no other goroutine ever runs in the namespace.
func (n *NS) inside(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+n.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- fmt.Errorf("netns: open %s: %w", n.Name, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("netns: enter %s: %w", n.Name, err)
			return
		}
		done <- f()
	}()
	return <-done
}
