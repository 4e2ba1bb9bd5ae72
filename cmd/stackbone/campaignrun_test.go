package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
)

// A campaign of 200 contacts in three time zones, run by two boxes on one
// PostgreSQL against SIPp playing the carrier (busy and unanswered numbers
// among them): at most the cap's 20 calls are ever up at once (sampled
// every 100 ms), Tokyo's contacts are called only once their window opens,
// busy and unanswered contacts are tried exactly as the policy says, a
// pause stops new calls within a second, and after one box is killed (-9)
// mid-campaign every contact still ends in one final state, with no call
// placed twice for an attempt and no contact called more often than its
// attempts.
func TestCampaignAcrossTwoBoxes(t *testing.T) {
	t.Parallel()
	sipp, err := exec.LookPath("sipp")
	if err != nil {
		t.Skip("sipp is not installed (Debian package sip-tester; scripts/test installs it)")
	}
	bin := buildBox(t)
	ctx := context.Background()
	dbURL, pool := testDatabase(t)
	const secret = "campaign-test-key"
	if err := auth.NewStore(pool).Ensure(ctx, "dialler", secret, []string{auth.ScopeVoice}); err != nil {
		t.Fatal(err)
	}
	model := providertest.New(t)
	model.RespondTranscripts(func([]byte) string { return "" })
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "Thanks."} })
	carrier := startCallee(t, sipp)
	cfg := writeCampaignConfig(t, dbURL, carrier)
	boxA := startBox(t, bin, cfg, model.URL())
	boxB := startBox(t, bin, cfg, model.URL())
	api := boxAPI{t: t, base: "http://" + boxB.httpAddr, key: secret}

	// Windows on each contact's clock: New York and London are inside one
	// now; Tokyo's opens at the second minute from now.
	now := time.Now()
	ny, _ := time.LoadLocation("America/New_York")
	london, _ := time.LoadLocation("Europe/London")
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	tokyoOpens := now.Truncate(time.Minute).Add(2 * time.Minute)
	var windows []map[string]string
	windows = append(windows, around(now.In(ny), -time.Hour, time.Hour)...)
	windows = append(windows, around(now.In(london), -time.Hour, time.Hour)...)
	windows = append(windows, around(tokyoOpens.In(tokyo), 0, 90*time.Minute)...)
	var c struct {
		ID string `json:"id"`
	}
	api.do("POST", "/api/voice/campaigns", "", map[string]any{"name": "three zones", "agent": "caller", "trunk": "carrier",
		"maxConcurrent": 20, "windows": windows,
		"retry": map[string]any{"busy": map[string]any{"attempts": 1, "delay": "1s"}, "noAnswer": map[string]any{"attempts": 2, "delay": "1s"},
			"failed": map[string]any{"attempts": 1, "delay": "1s"}, "jitter": 0.1}}, &c)

	var csv strings.Builder
	csv.WriteString("number,name\n")
	numbers := map[string]string{} // number -> zone
	for i := range 200 {
		var n, zone string
		switch {
		case i < 80:
			n, zone = fmt.Sprintf("+1212555%04d", i), "New York"
		case i < 160:
			n, zone = fmt.Sprintf("+44207946%04d", i), "London"
		default:
			n, zone = fmt.Sprintf("+8135550%04d", i), "Tokyo"
		}
		numbers[n] = zone
		fmt.Fprintf(&csv, "%s,Person %d\n", n, i)
	}
	var added struct {
		Added int `json:"added"`
	}
	api.do("POST", "/api/voice/campaigns/"+c.ID+"/contacts", "text/csv", csv.String(), &added)
	if added.Added != 200 {
		t.Fatalf("added %d contacts", added.Added)
	}

	// The cap, sampled every 100 ms over the whole campaign.
	sampler := sampleCallsUp(ctx, pool)
	defer sampler.stop()
	api.do("POST", "/api/voice/campaigns/"+c.ID+"/start", "", nil, nil)

	// Pause once a quarter of the contacts are done: no call starts more
	// than a second after it, then the campaign resumes.
	poll.Until(t, "50 contacts done", 90*time.Second, func() bool { return contactsIn(ctx, pool, c.ID, "done", "failed") >= 50 })
	api.do("POST", "/api/voice/campaigns/"+c.ID+"/pause", "", nil, nil)
	paused := time.Now()
	poll.Until(t, "the calls up when paused to end", 60*time.Second, func() bool { return callsUp(ctx, pool) == 0 })
	var late int
	pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE started_at > $1`, paused.Add(time.Second)).Scan(&late)
	if late > 0 {
		t.Fatalf("%d calls started more than 1 s after the pause", late)
	}
	api.do("POST", "/api/voice/campaigns/"+c.ID+"/resume", "", nil, nil)

	// Kill one box while it carries calls.
	poll.Until(t, "box A to carry calls", 60*time.Second, func() bool {
		var ids []string
		for _, m := range outboundRe.FindAllStringSubmatch(boxA.logs(), -1) {
			ids = append(ids, m[1])
		}
		var n int
		pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE status <> 'ended' AND id = ANY($1)`, ids).Scan(&n)
		return n >= 3
	})
	if err := boxA.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()

	var status string
	poll.Until(t, "the campaign to finish", 5*time.Minute, func() bool {
		pool.QueryRow(ctx, `SELECT status FROM stackbone_platform.campaigns WHERE id = $1`, c.ID).Scan(&status)
		return status == "finished"
	})
	sampler.stop()
	if most, n := sampler.max(); most > 20 || n < 100 {
		t.Fatalf("at most %d calls up at once in %d samples (cap 20)", most, n)
	} else {
		t.Logf("calls up at once: at most %d in %d samples; box A killed %s after the start of the pause's resume",
			most, n, killed.Sub(paused).Round(time.Second))
	}

	// Every contact in one final state, attempts as the policy says.
	rows, err := pool.Query(ctx, `SELECT k.number, k.state, k.attempts, coalesce(k.last_outcome, ''),
		  (SELECT count(*) FROM stackbone_platform.voice_calls v WHERE v.phone_number = k.number),
		  (SELECT count(*) FROM stackbone_platform.campaign_attempts a WHERE a.campaign_id = k.campaign_id AND a.seq = k.seq
		     AND a.state IN ('dialled', 'ended')),
		  (SELECT min(v.started_at) FROM stackbone_platform.voice_calls v WHERE v.phone_number = k.number)
		FROM stackbone_platform.campaign_contacts k WHERE k.campaign_id = $1`, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	states := map[string]int{}
	for rows.Next() {
		var number, state, outcome string
		var attempts, calls, dialled int
		var first *time.Time
		if err := rows.Scan(&number, &state, &attempts, &outcome, &calls, &dialled, &first); err != nil {
			t.Fatal(err)
		}
		states[state]++
		if calls != attempts || dialled != attempts {
			t.Errorf("%s: %d calls, %d attempts dialled, contact counts %d", number, calls, dialled, attempts)
		}
		if numbers[number] == "Tokyo" && first != nil && first.Before(tokyoOpens) {
			t.Errorf("%s (Tokyo) called at %v, before its window opened at %v", number, first, tokyoOpens)
		}
		switch last := number[len(number)-1]; {
		case last == '7' && (state != "failed" || attempts != 2 || outcome != "busy"):
			t.Errorf("busy %s: %s after %d attempts (%s); want failed after 2", number, state, attempts, outcome)
		case last == '8' && (state != "failed" || attempts != 3 || outcome != "no_answer"):
			t.Errorf("unanswered %s: %s after %d attempts (%s); want failed after 3", number, state, attempts, outcome)
		case last != '7' && last != '8' && state != "done" && outcome != "box_lost":
			t.Errorf("%s: %s after %d attempts (%s)", number, state, attempts, outcome)
		}
	}
	if states["done"]+states["failed"] != 200 {
		t.Fatalf("final states %v", states)
	}
	var lost int
	pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE outcome = 'box_lost'`).Scan(&lost)
	t.Logf("final states %v; %d calls closed as box_lost after the kill", states, lost)
}

// around is the windows from at+from to at+to on at's clock, split at
// midnight.
func around(at time.Time, from, to time.Duration) []map[string]string {
	start, end := at.Add(from), at.Add(to)
	hm := func(t time.Time) string { return t.Format("15:04") }
	if start.Day() == end.Day() {
		return []map[string]string{{"start": hm(start), "end": hm(end)}}
	}
	return []map[string]string{{"start": hm(start), "end": "24:00"}, {"start": "00:00", "end": hm(end)}}
}

// startCallee runs SIPp as the carrier's far end until the test ends and
// returns its SIP address. With -bg SIPp forks, prints the background
// process's id and exits (status 99) before the background process binds
// its ports: one that finds a port taken (tests in other packages bind
// ports of that range too) dies after its id was printed, and the boxes'
// calls would time out against nothing. So the callee counts as started
// once its SIP port is held while it runs, and is started again on other
// ports otherwise.
func startCallee(t *testing.T, sipp string) string {
	t.Helper()
	scenario, err := filepath.Abs("testdata/campaign-callee.xml")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for range 5 {
		addr := freeUDPAddr(t)
		cmd := exec.Command(sipp, "-sf", scenario, "-i", "127.0.0.1", "-p", portOf(t, addr), "-mp", portOf(t, freeUDPAddr(t)),
			"-t", "u1", "-nostdin", "-bg")
		cmd.Dir = t.TempDir()
		out.Reset()
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run()
		var pid int
		if i := strings.LastIndex(out.String(), "PID=["); i >= 0 {
			fmt.Sscanf(out.String()[i+5:], "%d", &pid)
		}
		if pid == 0 {
			continue
		}
		t.Cleanup(func() {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		})
		if calleeListens(pid, addr) {
			return addr
		}
	}
	t.Fatalf("sipp did not start listening: %s", out.String())
	return ""
}

// calleeListens waits (up to 5 s) for the process pid to hold the UDP
// address addr; false once the process ended or the time passed.
func calleeListens(pid int, addr string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return false
		}
		if udpBound(addr) {
			return true
		}
	}
	return false
}

// udpBound says a UDP socket is bound to addr (127.0.0.1:port), from
// /proc/net/udp: binding it to find out could take it from SIPp.
func udpBound(addr string) bool {
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return false
	}
	local := fmt.Sprintf("0100007F:%04X", n)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 && f[1] == local {
			return true
		}
	}
	return false
}

func writeCampaignConfig(t *testing.T, dbURL, carrier string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "box.yaml")
	cfg := fmt.Sprintf(`
database: {url: %q}
agents:
  caller:
    model: openai/chat
    instructions: You call {name} about their renewal.
    greeting: Hello, this is the renewals desk.
sip:
  mediaTimeout: 2s
  trunks:
    outbound:
      - name: carrier
        proxy: %q
shutdown: {drain: 1s}
`, dbURL, carrier)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// boxAPI calls a box's /api with a key.
type boxAPI struct {
	t         *testing.T
	base, key string
}

// do sends body (JSON, or text as it is when contentType is given) and
// decodes the answer's data into out; any error status fails the test.
func (a boxAPI) do(method, path, contentType string, body, out any) {
	a.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r, contentType = bytes.NewReader(raw), "application/json"
	}
	req, _ := http.NewRequest(method, a.base+path, r)
	req.Header.Set("Authorization", "Bearer "+a.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		a.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || json.Unmarshal(env.Data, out) != nil {
			a.t.Fatalf("%s %s: %s", method, path, raw)
		}
	}
}

func callsUp(ctx context.Context, pool *pgxpool.Pool) int {
	var n int
	pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE status <> 'ended'`).Scan(&n)
	return n
}

func contactsIn(ctx context.Context, pool *pgxpool.Pool, campaign string, states ...string) int {
	var n int
	pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1 AND state = ANY($2)`,
		campaign, states).Scan(&n)
	return n
}

// outboundRe finds the calls a box's log says were answered.
var outboundRe = regexp.MustCompile(`msg="sip: outbound call answered".* callId=(\S+)`)

// callsSampler counts the calls up every 100 ms.
type callsSampler struct {
	mu      sync.Mutex
	most, n int
	done    chan struct{}
	once    sync.Once
}

func sampleCallsUp(ctx context.Context, pool *pgxpool.Pool) *callsSampler {
	s := &callsSampler{done: make(chan struct{})}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
			up := callsUp(ctx, pool)
			s.mu.Lock()
			s.most, s.n = max(s.most, up), s.n+1
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *callsSampler) stop() { s.once.Do(func() { close(s.done) }) }

func (s *callsSampler) max() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most, s.n
}
