package bench

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stackbone/box/sip"
)

//go:embed sipp/burst.xml
var burstScenario []byte

// Burst is a carrier's burst of new calls placed by SIPp while a step's
// calls are held: the box's INVITE to 200 OK for those calls alone, and
// SIPp's own count.
type Burst struct {
	Calls, Rate int
	// Hold is how long each burst call stays up before SIPp's BYE.
	Hold time.Duration
	// Succeeded and Failed are SIPp's counts of whole calls.
	Succeeded, Failed int
	// BoxSetup is INVITE to 200 OK at the box for the burst's calls
	// (sip.Stats.Setup between the burst's start and end).
	BoxSetup Figures
	// Setup is INVITE to 200 OK at SIPp (its response-time trace).
	Setup Figures
}

// runBurst places calls with SIPp at rate a second against the box at
// addr, each held for hold, and returns once SIPp ended with the box's
// setup figures for them (read from stats before and after: nothing else
// may be set up meanwhile).
func runBurst(ctx context.Context, addr string, stats func() sip.Stats, calls, rate int, hold time.Duration) (Burst, error) {
	b := Burst{Calls: calls, Rate: rate, Hold: hold}
	bin, err := exec.LookPath("sipp")
	if err != nil {
		return b, errors.New("the burst needs SIPp (Debian package sip-tester)")
	}
	dir, err := os.MkdirTemp("", "stackbone-burst-")
	if err != nil {
		return b, err
	}
	defer os.RemoveAll(dir)
	sf := filepath.Join(dir, "burst.xml")
	if err := os.WriteFile(sf, burstScenario, 0o600); err != nil {
		return b, err
	}
	var before, after sip.Stats
	// SIPp binds its media port and the three above it: a port free a
	// moment ago may be taken by then, and SIPp then stops at once (exit
	// 254, no call placed): tried again on other ports.
	for attempt := 0; ; attempt++ {
		sigPort, err := freeUDPPort()
		if err != nil {
			return b, err
		}
		mediaPort, err := freeUDPPort()
		if err != nil {
			return b, err
		}
		before = stats()
		cmd := exec.CommandContext(ctx, bin, addr, "-sf", sf, "-s", "100", "-i", "127.0.0.1",
			"-p", strconv.Itoa(sigPort), "-mp", strconv.Itoa(mediaPort), "-m", strconv.Itoa(calls),
			"-r", strconv.Itoa(rate), "-rp", "1000", "-l", strconv.Itoa(calls), "-set", "hold", strconv.Itoa(int(hold.Milliseconds())),
			"-trace_rtt", "-rtt_freq", "1", "-trace_stat", "-fd", "1", "-nostdin",
			"-timeout", strconv.Itoa(int((time.Duration(calls/max(rate, 1))*time.Second+hold+time.Minute).Seconds()))+"s", "-timeout_error")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		after = stats()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			// Some call failed: counted below.
		case errors.As(err, &exit) && exit.ExitCode() == 254 && attempt < 3:
			continue
		default:
			return b, fmt.Errorf("sipp: %v: %s", err, tail(out))
		}
		break
	}
	win := after.Sub(before)
	b.BoxSetup = Figures{Name: "box setup", P50: win.SetupTime(50), P95: win.SetupTime(95), P99: win.SetupTime(99), Max: win.SetupTime(100)}
	if b.Succeeded, b.Failed, err = burstCounts(dir); err != nil {
		return b, err
	}
	b.Setup, err = burstRTT(dir)
	return b, err
}

// freeUDPPort is a UDP port free on loopback a moment ago.
func freeUDPPort() (int, error) {
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.LocalAddr().(*net.UDPAddr).Port, nil
}

func tail(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// burstCounts reads SIPp's statistics (its -trace_stat file): the
// cumulated successful and failed calls, the largest of its lines (the
// counts only grow; a line SIPp was still writing as it exited reads as
// none).
func burstCounts(dir string) (ok, failed int, err error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*_.csv"))
	if len(files) == 0 {
		return 0, 0, errors.New("sipp wrote no statistics")
	}
	lines, err := readLines(files[0])
	if err != nil || len(lines) < 2 {
		return 0, 0, fmt.Errorf("sipp statistics: %v", err)
	}
	head := strings.Split(lines[0], ";")
	okCol, failedCol := slices.Index(head, "SuccessfulCall(C)"), slices.Index(head, "FailedCall(C)")
	if okCol < 0 || failedCol < 0 {
		return 0, 0, errors.New("sipp statistics: no call counts")
	}
	ok, failed = -1, -1
	for _, l := range lines[1:] {
		f := strings.Split(l, ";")
		if len(f) <= max(okCol, failedCol) {
			continue
		}
		o, err1 := strconv.Atoi(f[okCol])
		x, err2 := strconv.Atoi(f[failedCol])
		if err1 == nil && err2 == nil {
			ok, failed = max(ok, o), max(failed, x)
		}
	}
	if ok < 0 {
		return 0, 0, errors.New("sipp statistics: no line with call counts")
	}
	return ok, failed, nil
}

// burstRTT reads SIPp's response-time trace (INVITE to 200 OK of each
// call, in ms) as figures.
func burstRTT(dir string) (Figures, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*_rtt.csv"))
	if len(files) == 0 {
		return Figures{}, errors.New("sipp wrote no response times")
	}
	lines, err := readLines(files[0])
	if err != nil {
		return Figures{}, err
	}
	r := &recorder{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ";")
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		r.add(time.Duration(v*float64(time.Millisecond)), nil)
	}
	return r.figures("setup", false), nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}
