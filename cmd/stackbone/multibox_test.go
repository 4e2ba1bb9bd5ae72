package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/internal/lockedbuf"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

// Two boxes on one PostgreSQL behind Kamailio's dispatcher (the config in
// deploy/kamailio, as shipped) are one system: SIPp's calls and then 100
// calls of siptest callers through the proxy (at most 10 at once: the
// machine has 2 cores) spread over both; a box killed (-9) mid-load has its
// calls closed as box_lost by the other, each heard transcript saved once,
// and every new call reaches the survivor; a box that drains (SIGTERM)
// finishes its calls while new ones go to the other; a box's own BYE
// reaches the caller through the proxy.
func TestTwoBoxesBehindKamailio(t *testing.T) {
	kamailio, err := exec.LookPath("kamailio")
	if err != nil {
		if kamailio, err = exec.LookPath("/usr/sbin/kamailio"); err != nil {
			t.Skip("kamailio is not installed (scripts/test installs it)")
		}
	}
	bin := buildBox(t)
	ctx := context.Background()
	dbURL, pool := testDatabase(t)
	model := providertest.New(t)
	model.RespondTranscripts(func([]byte) string { return "Please call me back in the morning." })
	model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Wants a call back in the morning."}],"summary":"Asked for a call back."}`}
		}
		return providertest.Reply{Content: "Noted, a call back in the morning."}
	})
	// Calls in progress may end on their own for up to 15 s of a drain
	// (the load's calls take about 5 s).
	cfgPath := writeConfig(t, dbURL)
	raw, _ := os.ReadFile(cfgPath)
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(raw), "drain: 1s", "drain: 15s", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	boxA := startBox(t, bin, cfgPath, model.URL())
	boxB := startBox(t, bin, cfgPath, model.URL())
	proxy := startKamailio(t, kamailio, boxA.sipAddr, boxB.sipAddr)

	// 0. An independent SIP peer: SIPp's calls through the proxy reach
	// both boxes; their ACK and BYE follow the proxy's route set.
	sippThrough(t, proxy.addr, 20)
	var sippCalls, sippBoxes, sippHungUp int
	// A box records a call's end once it completed it, just after its 200
	// to the BYE.
	poll.Until(t, "SIPp's calls to be recorded as ended", 30*time.Second, func() bool {
		var open int
		pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls
			WHERE phone_number LIKE '+34600200%' AND status <> 'ended'`).Scan(&open)
		return open == 0
	})
	pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT box_id), count(*) FILTER (WHERE outcome = 'caller_hangup')
		FROM stackbone_platform.voice_calls WHERE phone_number LIKE '+34600200%'`).Scan(&sippCalls, &sippBoxes, &sippHungUp)
	if sippCalls != 20 || sippBoxes != 2 || sippHungUp != 20 {
		t.Fatalf("SIPp's 20 calls: %d records on %d boxes, %d hung up by the caller", sippCalls, sippBoxes, sippHungUp)
	}

	load := &callLoad{t: t, pool: pool, proxy: proxy.addr, caller: siptest.NewCaller(t), slots: make(chan struct{}, 10)}

	// 1. Spread, then a crash mid-load.
	var idA, idB string
	after := 0 // calls started before the kill
	for n := range 60 {
		load.start(n)
		if after > 0 || n < 20 {
			continue
		}
		if idA == "" {
			idA, idB = boxID(t, pool, boxA), boxID(t, pool, boxB)
		}
		// Kill A once it carries a call whose caller was heard.
		var heard int
		pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls
			WHERE box_id = $1 AND status = 'active' AND stackbone_platform.heard_transcript(voice_calls) @> '[{"role":"user"}]'`, idA).Scan(&heard)
		if heard > 0 && idB != "" {
			boxA.cmd.Process.Signal(syscall.SIGKILL)
			boxA.wait(t, 10*time.Second)
			load.lost.Store(idA)
			after = n + 1
		}
	}
	load.wait()
	if after == 0 {
		t.Fatalf("box A never carried a heard call during the first 60 calls\n%s", load.summary())
	}
	rows := load.records(0, 60)
	perBox := map[string]int{}
	for _, r := range rows[:after] {
		perBox[r.box]++
	}
	if perBox[idA] == 0 || perBox[idB] == 0 {
		t.Fatalf("the calls before the kill did not spread over both boxes: %v (A %s, B %s)", perBox, idA, idB)
	}
	for n := after; n < 60; n++ {
		if r := rows[n]; r.box != idB || !load.results[n].completed {
			t.Fatalf("call %d after the kill: box %q (survivor %s), completed %v: %v", n, r.box, idB, load.results[n].completed, load.results[n].err)
		}
	}
	// The survivor closes the dead box's calls as box_lost and saves what
	// each caller heard, once.
	poll.Until(t, "the killed box's calls to be recovered", 60*time.Second, func() bool {
		var open int
		pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls c WHERE box_id = $1
			AND (status <> 'ended' OR (outcome = 'box_lost' AND jsonb_array_length(transcript) > 0
				AND NOT coalesce((memory->>'saved')::bool, false)))`, idA).Scan(&open)
		return open == 0
	})
	// A call heard nothing (killed while ringing or greeting) has nothing
	// to save; every other one has exactly one saved call record, the
	// caller's: as box_lost, or with its own outcome when the killed box
	// had saved it just before it died (the recovery then gets that save
	// back through the call's idempotency key instead of saving twice).
	var lost, lostHeard, lostSaved, wrong int
	if err := pool.QueryRow(ctx, `WITH lost AS (
			SELECT c.id, c.transcript, (SELECT count(*) FROM stackbone_platform.memory_calls m
				WHERE m.run_id = c.id AND m.user_id = c.phone_number) AS saves
			FROM stackbone_platform.voice_calls c WHERE box_id = $1 AND outcome = 'box_lost')
		SELECT count(*), count(*) FILTER (WHERE transcript @> '[{"role":"user"}]'), count(*) FILTER (WHERE saves = 1),
			count(*) FILTER (WHERE saves <> CASE WHEN jsonb_array_length(transcript) > 0 THEN 1 ELSE 0 END)
		FROM lost`, idA).Scan(&lost, &lostHeard, &lostSaved, &wrong); err != nil {
		t.Fatal(err)
	}
	if lost == 0 || lostHeard == 0 || wrong != 0 {
		t.Fatalf("%d calls box_lost (%d with the caller heard), %d saved once, %d not saved exactly once although heard (or saved unheard)",
			lost, lostHeard, lostSaved, wrong)
	}
	t.Logf("crash: %d calls before the kill (A %d, B %d), %d after, all on the survivor; %d box_lost (%d with a caller's turn), %d saved once",
		after, perBox[idA], perBox[idB], 60-after, lost, lostHeard, lostSaved)

	// 2. A box takes A's place; it drains (SIGTERM) while calls go on.
	boxC := startBoxAt(t, bin, cfgPath, model.URL(), boxA.sipAddr)
	var idC string
	drainedAfter := 0
	for n := 60; n < 100; n++ {
		load.start(n)
		if drainedAfter > 0 {
			continue
		}
		if idC == "" {
			idC = boxID(t, pool, boxC)
			continue
		}
		// Drain C while it carries a call that has seconds to go (the
		// caller has not spoken yet).
		var carried int
		pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE box_id = $1 AND status = 'active'
			AND NOT stackbone_platform.heard_transcript(voice_calls) @> '[{"role":"user"}]'`, idC).Scan(&carried)
		if carried > 0 {
			downs := proxy.downs(boxC.sipAddr)
			boxC.cmd.Process.Signal(syscall.SIGTERM)
			drainedAfter = n + 1
			// The proxy's probe finds the box down while it still drains
			// (it answers OPTIONS 503), not only once it exited.
			poll.Until(t, "the proxy to mark the draining box down", 20*time.Second, func() bool {
				return proxy.downs(boxC.sipAddr) > downs
			})
			if strings.Contains(boxC.logs(), `msg=stopping`) {
				t.Fatal("the proxy marked the box down only once its drain had ended")
			}
		}
	}
	load.wait()
	if drainedAfter == 0 {
		t.Fatalf("the new box carried no call\n%s", load.summary())
	}
	if code := boxC.wait(t, 40*time.Second); code != 0 {
		t.Fatalf("the drained box exited with %d", code)
	}
	rows = load.records(0, 100)
	onC := 0
	for n := 60; n < 100; n++ {
		r, res := rows[n], load.results[n]
		if !res.completed {
			t.Fatalf("call %d (box %s, %s %s) did not complete: %v", n, r.box, r.status, r.outcome, res.err)
		}
		if n >= drainedAfter && r.box != idB {
			t.Fatalf("call %d after the drain began went to %q, not the other box %s", n, r.box, idB)
		}
		if r.box == idC {
			onC++
			// It went on until the caller hung up, and was saved.
			var saved bool
			pool.QueryRow(ctx, `SELECT coalesce((memory->>'saved')::bool, false) FROM stackbone_platform.voice_calls WHERE id = $1`,
				r.id).Scan(&saved)
			if r.outcome != "caller_hangup" || !saved {
				t.Fatalf("call %d on the drained box ended %s %s, saved %v; want caller_hangup, saved", n, r.status, r.outcome, saved)
			}
		}
	}
	var total int
	pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE phone_number LIKE '+34600100%'`).Scan(&total)
	if total != 100 {
		t.Fatalf("%d call records for 100 calls", total)
	}
	t.Logf("drain: %d calls before SIGTERM (%d on the drained box, each finished by its caller and saved), %d after, all on the other box",
		drainedAfter-60, onC, 100-drainedAfter)

	// 3. The box's own BYE finds its way back through the proxy (the
	// route set Kamailio's Record-Route made): the last box stops while a
	// caller stays on the line past the drain.
	call, err := load.caller.Call(ctx, "100", proxy.addr, loadNumber(100))
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the last call's greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	boxB.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-call.Ended():
	case <-time.After(40 * time.Second):
		t.Fatal("the caller got no BYE through the proxy from the stopping box")
	}
	if code := boxB.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("the last box exited with %d", code)
	}
	if !strings.Contains(proxy.out.String(), "BYE within a dialog from "+boxB.sipAddr) {
		t.Fatal("the box's BYE did not go through the proxy")
	}
	var box, outcome string
	var saved bool
	pool.QueryRow(ctx, `SELECT coalesce(box_id, ''), coalesce(outcome, ''), coalesce((memory->>'saved')::bool, false)
		FROM stackbone_platform.voice_calls WHERE phone_number = $1`, loadNumber(100)).Scan(&box, &outcome, &saved)
	if box != idB || outcome != "shutdown" || !saved {
		t.Fatalf("the last call: box %q outcome %q saved %v; want %s, shutdown, saved", box, outcome, saved, idB)
	}
}

// callLoad runs calls through the proxy, each from its own number: the
// caller waits for the greeting, speaks once, waits for the answer and
// hangs up.
type callLoad struct {
	t      *testing.T
	pool   *pgxpool.Pool
	proxy  string
	caller *siptest.Caller
	slots  chan struct{}
	wg     sync.WaitGroup
	// lost is the id of a killed box: its callers give up at once.
	lost atomic.Value

	mu      sync.Mutex
	results [100]callResult
}

type callResult struct {
	started, completed bool
	box                string // the box that answered
	err                error
}

func loadNumber(n int) string { return fmt.Sprintf("+34600100%03d", n) }

// start starts call n once a slot is free.
func (l *callLoad) start(n int) {
	l.slots <- struct{}{}
	l.wg.Add(1)
	l.mu.Lock()
	l.results[n].started = true
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		defer func() { <-l.slots }()
		box, err := l.call(n)
		l.mu.Lock()
		l.results[n].completed, l.results[n].box, l.results[n].err = err == nil, box, err
		l.mu.Unlock()
	}()
}

func (l *callLoad) wait() { l.wg.Wait() }

func (l *callLoad) call(n int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call, err := l.caller.Call(ctx, "100", l.proxy, loadNumber(n))
	if err != nil {
		return "", fmt.Errorf("call: %w (status %d)", err, siptest.Status(err))
	}
	defer func() {
		// Bounded: a BYE towards a killed box gets no answer.
		hctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = call.Hangup(hctx)
	}()
	var box string
	if err := l.pool.QueryRow(ctx, `SELECT coalesce(box_id, '') FROM stackbone_platform.voice_calls WHERE phone_number = $1`,
		loadNumber(n)).Scan(&box); err != nil {
		return "", fmt.Errorf("the answered call's record: %w", err)
	}
	hear := func(what string, cond func() bool) error {
		for !cond() {
			if lost, _ := l.lost.Load().(string); lost != "" && lost == box {
				return fmt.Errorf("%s: the box was killed", what)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: %w", what, ctx.Err())
			case <-call.Ended():
				return fmt.Errorf("%s: the box hung up", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
		return nil
	}
	if err := hear("the greeting", func() bool { return call.Voiced() > 25 }); err != nil {
		return box, err
	}
	greeted := call.Voiced()
	call.Talk(1)
	if err := hear("the answer", func() bool { return call.Voiced() > greeted+20 }); err != nil {
		return box, err
	}
	return box, nil
}

// callRecord is one load call's record.
type callRecord struct {
	id, box, status, outcome string
}

// records are the records of calls from..to-1 by call number.
func (l *callLoad) records(from, to int) []callRecord {
	l.t.Helper()
	out := make([]callRecord, to)
	for n := from; n < to; n++ {
		l.pool.QueryRow(context.Background(), `SELECT id, coalesce(box_id, ''), status, coalesce(outcome, '')
			FROM stackbone_platform.voice_calls WHERE phone_number = $1`, loadNumber(n)).
			Scan(&out[n].id, &out[n].box, &out[n].status, &out[n].outcome)
	}
	return out
}

func (l *callLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for n, r := range l.results {
		if r.started {
			fmt.Fprintf(&b, "call %d: box %s completed %v %v\n", n, r.box, r.completed, r.err)
		}
	}
	return b.String()
}

var answeredRe = regexp.MustCompile(`msg="sip: answered".* callId=(\S+)`)

// boxID is the id a running box writes in its calls' records, found from a
// call its log says it answered ("" before it answered one).
func boxID(t *testing.T, pool *pgxpool.Pool, b *runningBox) string {
	t.Helper()
	m := answeredRe.FindStringSubmatch(b.logs())
	if m == nil {
		return ""
	}
	var id string
	pool.QueryRow(context.Background(), `SELECT coalesce(box_id, '') FROM stackbone_platform.voice_calls WHERE id = $1`, m[1]).Scan(&id)
	return id
}

// sippThrough places calls through the proxy with SIPp and
// deploy/kamailio/sipp-call.xml, 5 at once, each held 3 s; every one must
// succeed.
func sippThrough(t *testing.T, proxy string, calls int) {
	t.Helper()
	bin, err := exec.LookPath("sipp")
	if err != nil {
		t.Skip("sipp is not installed (Debian package sip-tester; scripts/test installs it)")
	}
	scenario, err := filepath.Abs("../../deploy/kamailio/sipp-call.xml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-sf", scenario, "-m", fmt.Sprint(calls), "-l", "5", "-r", "5", "-d", "3000",
		"-s", "100", "-t", "u1", "-i", "127.0.0.1", "-p", portOf(t, freeUDPAddr(t)), "-mp", portOf(t, freeUDPAddr(t)),
		"-timeout", "50s", "-timeout_error", "-recv_timeout", "15s", "-nostdin", "-trace_err",
		// A 180 the proxy's other worker forwards after the 200 (UDP
		// reorders) is counted, not fatal: the calls' records are the test.
		"-default_behaviors", "all,-abortunexp", proxy)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		errs, _ := filepath.Glob(filepath.Join(dir, "*_errors.log"))
		var detail []byte
		for _, f := range errs {
			b, _ := os.ReadFile(f)
			detail = append(detail, b...)
		}
		t.Fatalf("sipp: %v\n%s\n%s", err, out, detail)
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// sipProxy is a running Kamailio.
type sipProxy struct {
	addr string // its SIP address
	out  *lockedbuf.Buffer
}

// downs is how many times the proxy logged box addr as down.
func (p *sipProxy) downs(addr string) int {
	return strings.Count(p.out.String(), "box sip:"+addr+" is down")
}

// startKamailio runs deploy/kamailio/kamailio.cfg in the foreground on a
// free loopback port, dispatching to the boxes' SIP addresses, probing
// them every second; the test's end stops it.
func startKamailio(t *testing.T, kamailio string, boxes ...string) *sipProxy {
	t.Helper()
	dir := t.TempDir()
	var list strings.Builder
	for _, b := range boxes {
		fmt.Fprintf(&list, "1 sip:%s\n", b)
	}
	listPath := filepath.Join(dir, "dispatcher.list")
	if err := os.WriteFile(listPath, []byte(list.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := filepath.Abs("../../deploy/kamailio/kamailio.cfg")
	if err != nil {
		t.Fatal(err)
	}
	addr := freeUDPAddr(t)
	out := &lockedbuf.Buffer{}
	cmd := exec.Command(kamailio, "-DD", "-E", "-f", cfg, "-Y", dir, "-P", filepath.Join(dir, "kamailio.pid"),
		"-w", dir, "-m", "64", "-M", "8",
		"-A", "LISTEN_UDP=udp:"+addr, "-A", "LISTEN_TCP=tcp:"+addr,
		"-A", fmt.Sprintf("DISPATCHER_LIST=%q", listPath), "-A", "PING_INTERVAL=1", "-A", "BOX_TIMEOUT=1500", "-A", "LOG_DIALOG")
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: the test's end stops its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("kamailio output:\n%s", out.String())
		}
	})
	poll.Until(t, "kamailio to listen", 20*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("kamailio exited\n%s", out.String())
		default:
		}
		return listens(addr)
	})
	return &sipProxy{addr: addr, out: out}
}

// listens reports whether something accepts TCP connections at addr.
func listens(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}
