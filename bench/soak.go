package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

// SoakConfig sets a soak run.
type SoakConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	AdminURL string
	// Box is the stackbone binary to run and kill (default this process's).
	Box string
	// Duration of the load (default 2 minutes); the run then waits for every
	// call to be completed or recovered.
	Duration time.Duration
	// Calls is how many SIP calls run at once (default 4); Chats how many
	// chat clients (default 2).
	Calls, Chats int
	// KillEvery is the mean interval between kills (-9) of the box
	// (default 20 s); each kill is followed by a restart.
	KillEvery time.Duration
	// KillRecovering: after each restart, the new box is killed again while
	// it saves a call it recovered from the killed one (a save pending in
	// the calls table), and restarted; the next box finishes that save.
	KillRecovering bool
	// SaveDelay holds each memory extraction back this long (a slow
	// extraction model), widening the window a kill can land in.
	SaveDelay time.Duration
	Logger    *slog.Logger
}

// SoakReport is what survived.
type SoakReport struct {
	Duration                 time.Duration
	Kills                    int
	RecoveryKills            int // kills of a box while it saved a recovered call
	CallsDialled, CallsFaild int
	Started, Completed       int // call records, and those ended by their own box
	Recovered                int // ended as box_lost by another box
	SavesExpected            int // ended calls with something heard and save on
	SavesFound               int // of those, saved to memory
	Lost                     int // expected and not found
	Duplicates               int // calls saved more than once
	Open                     int // calls still not ended at the end
	ChatOK, ChatFailed       int
}

// Print writes the report.
func (r SoakReport) Print(w io.Writer) {
	fmt.Fprintf(w, "Soak: SIP calls and chat for %s while the box was killed (-9) and restarted %d times\n", r.Duration.Round(time.Second), r.Kills)
	if r.RecoveryKills > 0 {
		fmt.Fprintf(w, "  of the kills, %d hit a box while it saved a call it recovered from the box killed before\n", r.RecoveryKills)
	}
	fmt.Fprintf(w, "  calls dialled %d (refused or cut while the box was down: %d)\n", r.CallsDialled, r.CallsFaild)
	fmt.Fprintf(w, "  calls started %d, completed %d, recovered as box_lost %d, still open %d\n", r.Started, r.Completed, r.Recovered, r.Open)
	fmt.Fprintf(w, "  saves expected %d, saves found %d, lost %d, duplicate saves %d\n", r.SavesExpected, r.SavesFound, r.Lost, r.Duplicates)
	fmt.Fprintf(w, "  chat turns ok %d, failed while the box was down %d\n", r.ChatOK, r.ChatFailed)
}

const soakKey = "soak-key"

// Soak runs SIP calls and chat turns against a box process that it kills
// with SIGKILL and restarts at random intervals, then checks every call:
// each one whose caller heard something and whose agent saves memory must
// be saved exactly once, by its own box or by the box that recovered it.
func Soak(ctx context.Context, cfg SoakConfig) (SoakReport, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 2 * time.Minute
	}
	if cfg.Calls <= 0 {
		cfg.Calls = 4
	}
	if cfg.Chats < 0 {
		cfg.Chats = 0
	} else if cfg.Chats == 0 {
		cfg.Chats = 2
	}
	if cfg.KillEvery <= 0 {
		cfg.KillEvery = 20 * time.Second
	}
	if cfg.Box == "" {
		exe, err := os.Executable()
		if err != nil {
			return SoakReport{}, err
		}
		cfg.Box = exe
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dbURL, drop, err := FreshDatabase(ctx, cfg.AdminURL)
	if err != nil {
		return SoakReport{}, err
	}
	defer drop()
	dir, err := os.MkdirTemp("", "stackbone-soak-")
	if err != nil {
		return SoakReport{}, err
	}
	defer os.RemoveAll(dir)

	model := providertest.Start()
	defer model.Close()
	model.DiscardRequests()
	model.RespondTranscripts(func([]byte) string { return "Please remember that I prefer mornings." })
	model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Delay: cfg.SaveDelay,
				Content: `{"operations":[{"op":"add","content":"Prefers mornings."}],"summary":"Asked for mornings."}`}
		}
		return providertest.Reply{Content: "Noted, mornings."}
	})
	cfgPath := filepath.Join(dir, "box.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(soakConfig, dbURL)), 0o600); err != nil {
		return SoakReport{}, err
	}
	httpAddr, sipAddr, err := freeAddrs()
	if err != nil {
		return SoakReport{}, err
	}
	box := &soakBox{cfg: cfg, cfgPath: cfgPath, dataDir: dir, httpAddr: httpAddr, sipAddr: sipAddr, providerURL: model.URL()}
	if err := box.start(ctx); err != nil {
		return SoakReport{}, err
	}
	defer box.stop()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return SoakReport{}, err
	}
	defer pool.Close()
	if err := auth.NewStore(pool).Ensure(ctx, "soak", soakKey, []string{auth.ScopeAgentsRun}); err != nil {
		return SoakReport{}, err
	}

	rep := SoakReport{Duration: cfg.Duration}
	loadCtx, stopLoad := context.WithTimeout(ctx, cfg.Duration)
	defer stopLoad()
	var dialled, failed, chatOK, chatFailed atomic.Int64
	var number atomic.Int64
	var wg sync.WaitGroup
	for range cfg.Calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			caller, err := siptest.Start(0)
			if err != nil {
				cfg.Logger.Warn("soak: caller", "error", err)
				return
			}
			defer caller.Close()
			for loadCtx.Err() == nil {
				dialled.Add(1)
				n := fmt.Sprintf("+3460%07d", number.Add(1))
				if !soakCall(loadCtx, caller, sipAddr, n) {
					failed.Add(1)
					sleepCtx(loadCtx, 500*time.Millisecond) // the box is down: try again shortly
				}
			}
		}()
	}
	for i := range cfg.Chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 0; loadCtx.Err() == nil; turn++ {
				if soakChat(loadCtx, httpAddr, fmt.Sprintf("soak-%d", i), turn) {
					chatOK.Add(1)
				} else if loadCtx.Err() == nil {
					chatFailed.Add(1)
					sleepCtx(loadCtx, 500*time.Millisecond)
				}
			}
		}()
	}
	// The killer.
	for loadCtx.Err() == nil {
		wait := time.Duration(float64(cfg.KillEvery) * (0.5 + rand.Float64()))
		if !sleepCtx(loadCtx, wait) {
			break
		}
		box.kill()
		rep.Kills++
		if err := box.start(ctx); err != nil {
			return rep, err
		}
		// The new box recovers the killed box's calls once their leases run
		// out: kill it while one of those saves is in flight.
		if cfg.KillRecovering && savePending(loadCtx, pool, 45*time.Second) {
			box.kill()
			rep.Kills++
			rep.RecoveryKills++
			if err := box.start(ctx); err != nil {
				return rep, err
			}
		}
	}
	wg.Wait()
	// Every call must end and be saved: by its own box, or as box_lost by
	// the box that runs now, once the lease of the killed box's calls (or
	// of its pending saves) ran out.
	deadline := time.Now().Add(120 * time.Second)
	for {
		var open int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE status <> 'ended' OR save_pending`).Scan(&open); err != nil {
			return rep, err
		}
		rep.Open = open
		if open == 0 || time.Now().After(deadline) {
			break
		}
		sleepCtx(ctx, time.Second)
	}
	rep.CallsDialled, rep.CallsFaild = int(dialled.Load()), int(failed.Load())
	rep.ChatOK, rep.ChatFailed = int(chatOK.Load()), int(chatFailed.Load())
	err = pool.QueryRow(ctx, `
		WITH saves AS (SELECT run_id, count(*) AS n FROM stackbone_platform.memory_calls GROUP BY run_id),
		     calls AS (SELECT c.id, c.status, c.outcome,
		                      c.status = 'ended' AND jsonb_array_length(c.transcript) > 0 AND (c.memory->>'save')::bool
		                        AND coalesce(c.memory->>'off', '') = '' AS expected
		               FROM stackbone_platform.voice_calls c)
		SELECT count(*),
		       count(*) FILTER (WHERE status = 'ended' AND outcome <> 'box_lost'),
		       count(*) FILTER (WHERE outcome = 'box_lost'),
		       count(*) FILTER (WHERE expected),
		       count(*) FILTER (WHERE expected AND s.n >= 1),
		       count(*) FILTER (WHERE s.n > 1)
		FROM calls LEFT JOIN saves s ON s.run_id = calls.id`).
		Scan(&rep.Started, &rep.Completed, &rep.Recovered, &rep.SavesExpected, &rep.SavesFound, &rep.Duplicates)
	rep.Lost = rep.SavesExpected - rep.SavesFound
	return rep, err
}

const soakConfig = `
database: {url: %q}
agents:
  receptionist:
    model: openai/soak
    instructions: You answer the phone.
    greeting: Hello, front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
sip:
  maxCalls: 100
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
shutdown: {drain: 2s}
`

// soakCall places one call: greeting, one spoken turn, the answer, a
// random hold, hang-up. It reports whether the call got as far as the
// answer.
func soakCall(ctx context.Context, caller *siptest.Caller, sipAddr, from string) bool {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	call, err := caller.Call(dctx, "100", sipAddr, from)
	cancel()
	if err != nil {
		return false
	}
	defer func() {
		hctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = call.Hangup(hctx)
		cancel()
	}()
	if !waitFor(ctx, call, 15*time.Second, func() bool { return call.Voiced() > 25 }) {
		return false
	}
	heard := call.Voiced()
	call.Talk(1)
	if !waitFor(ctx, call, 20*time.Second, func() bool { return call.Voiced() > heard+25 }) {
		return false
	}
	sleepCtx(ctx, time.Duration(500+rand.IntN(3000))*time.Millisecond)
	return true
}

// waitFor polls cond until it holds, the call ends or limit passes.
func waitFor(ctx context.Context, call *siptest.Call, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		select {
		case <-call.Ended():
			return false
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

func soakChat(ctx context.Context, httpAddr, session string, turn int) bool {
	body := fmt.Sprintf(`{"model":"receptionist","messages":[{"role":"user","content":"Turn %d."}]}`, turn)
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+httpAddr+"/openai/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+soakKey)
	req.Header.Set("x-stackbone-session", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == 200
}

// savePending waits until a box is saving a call it recovered (a save
// pending in the calls table), for at most limit.
func savePending(ctx context.Context, pool *pgxpool.Pool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		var pending bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.voice_calls WHERE save_pending)`).Scan(&pending); err == nil && pending {
			return true
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return false
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func freeAddrs() (httpAddr, sipAddr string, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	httpAddr = l.Addr().String()
	l.Close()
	for range 20 {
		u, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return "", "", err
		}
		addr := u.LocalAddr().String()
		t, err := net.Listen("tcp", addr)
		u.Close()
		if err == nil {
			t.Close()
			return httpAddr, addr, nil
		}
	}
	return "", "", errors.New("bench: no free port pair")
}

// soakBox is the box process under test.
type soakBox struct {
	cfg                                              SoakConfig
	cfgPath, dataDir, httpAddr, sipAddr, providerURL string
	cmd                                              *exec.Cmd
	exited                                           chan struct{}
}

func (b *soakBox) start(ctx context.Context) error {
	cmd := exec.Command(b.cfg.Box, "serve", "--config", b.cfgPath, "--migrate", "--data-dir", b.dataDir)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STACKBONE_DATABASE_URL=") { // the config names the run's database
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "STACKBONE_HTTP_ADDR="+b.httpAddr, "STACKBONE_SIP_ADDR="+b.sipAddr,
		"OPENAI_BASE_URL="+b.providerURL, "OPENAI_API_KEY=soak", "STACKBONE_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(b.exited)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + b.httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-b.exited:
			return errors.New("bench: the box exited at start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("bench: the box did not become ready")
}

func (b *soakBox) kill() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// stop ends the box with SIGTERM (its calls drain and save).
func (b *soakBox) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(60 * time.Second):
		b.kill()
	}
}
