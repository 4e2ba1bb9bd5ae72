package rooms_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/opus"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/voice"
)

// liveKitBinary finds the LiveKit server: STACKBONE_LIVEKIT_SERVER, else
// livekit-server on PATH, else the `server` that `go install
// github.com/livekit/livekit-server/cmd/server@v1.11.0` leaves in GOBIN or
// GOPATH/bin (checked by its version line).
func liveKitBinary() (string, error) {
	if p := os.Getenv("STACKBONE_LIVEKIT_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("livekit-server"); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "server")
		if out, err := exec.Command(p, "--version").Output(); err == nil && strings.HasPrefix(string(out), "livekit-server") {
			return p, nil
		}
	}
	return "", errors.New("no LiveKit server binary")
}

// startLiveKit runs a LiveKit server of this test on loopback (dev keys
// devkey/secret) and returns its URL.
func startLiveKit(t *testing.T) string {
	t.Helper()
	bin, err := liveKitBinary()
	if err != nil {
		t.Skip("no LiveKit server: run `go install github.com/livekit/livekit-server/cmd/server@v1.11.0` " +
			"(scripts/test does) or set STACKBONE_LIVEKIT_SERVER")
	}
	dir := t.TempDir()
	httpPort, udpPort := freeport.Get(t, freeport.TCP), freeport.Get(t, freeport.UDP)
	cfg := fmt.Sprintf(`port: %d
bind_addresses: ["127.0.0.1"]
rtc:
  tcp_port: 0
  udp_port: %d
  use_external_ip: false
  node_ip: 127.0.0.1
  enable_loopback_candidate: true
  ips:
    includes: [127.0.0.1/32]
logging:
  level: warn
`, httpPort, udpPort)
	path := filepath.Join(dir, "livekit.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--dev", "--bind", "127.0.0.1", "--config", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(dir, "livekit.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("livekit-server log:\n%s", b)
			}
			if why, ok := failures.Load(t); ok {
				t.Logf("failed: %s", why)
			}
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	poll.Until(t, "the LiveKit server to answer", 30*time.Second, func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	return fmt.Sprintf("ws://127.0.0.1:%d", httpPort)
}

// liveKitBox is a box whose rooms run on a LiveKit server of this test.
func liveKitBox(t *testing.T) *box {
	if !opus.Available() {
		const why = "LiveKit rooms need Opus: run the tests with -tags libopus (Debian: libopus-dev, libopusfile-dev, pkg-config)"
		if os.Getenv("CI") == "true" {
			t.Fatal(why + "; scripts/test does")
		}
		t.Skip(why)
	}
	url := startLiveKit(t)
	b := newBox(t, config.Rooms{LiveKit: config.LiveKit{URL: url, APIKey: "devkey", APISecret: "secret"}})
	if b.rooms.Backend() != rooms.BackendLiveKit {
		t.Fatalf("backend %s, want livekit", b.rooms.Backend())
	}
	return b
}

// Through a real LiveKit server, end to end in headless Chromium: the page
// joins with the LiveKit browser SDK, the agent joins as a participant,
// hears the caller and answers in Opus, and the call is remembered.
func TestBrowserCallLiveKit(t *testing.T) {
	t.Parallel()
	b := liveKitBox(t)
	// The fake microphone starts at getUserMedia, before the join through
	// LiveKit (3.4 s once on a loaded machine) and the agent's subscription:
	// the lead silence covers both, so the caller's words are not spoken to
	// a room nobody listens to yet (7 s was not enough once with the whole
	// suite building beside the test; 10 s, it seems, once with the whole
	// suite running).
	browserCall(t, b, rooms.BackendLiveKit, 15)
}

// The page's End button on LiveKit: the SDK leaves the LiveKit room and
// ends the room through the API, reads the room until it has ended, and
// takes the agent's audio off the page; the call is recorded as completed
// (a caller who only left would be a caller's hang-up).
func TestBrowserCallLiveKitEndButton(t *testing.T) {
	t.Parallel()
	b := liveKitBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	need(t, "chromium", "chromium")
	b.model.RespondTranscripts(func([]byte) string { return "" }) // the call ends before the caller's words
	p := startCallPage(ctx, t, b, rooms.BackendLiveKit, speechWAV(t, callerSays, 30), "+34600111333")
	callID := p.state().CallID

	p.press("end", "ended", 20*time.Second)
	var audios int
	if err := p.br.Eval(ctx, `document.querySelectorAll("audio").length`, &audios); err != nil || audios != 0 {
		t.Fatalf("%d audio elements left on the page after the end (%v)", audios, err)
	}
	rec, err := b.calls.Get(ctx, callID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "ended" || rec.Outcome == nil || *rec.Outcome != voice.OutcomeCompleted {
		t.Fatalf("call record: status %q outcome %v", rec.Status, rec.Outcome)
	}
}
