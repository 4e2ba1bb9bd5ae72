package pgcluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/postgres/pgcluster"
	"github.com/stackbone/box/postgres/pgtest"
)

// needBinaries skips the test when the machine has no PostgreSQL binaries;
// that is the only reason these tests skip.
func needBinaries(t *testing.T) {
	t.Helper()
	if _, err := pgcluster.FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
}

// clusterDir returns an empty directory for a cluster. As root, t.TempDir
// will not do: its per-test parent is 0700 root, which the server's user
// "postgres" cannot enter.
func clusterDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// start starts a cluster and stops it when the test ends, even on failure.
func start(ctx context.Context, t *testing.T, cfg pgcluster.Config) *pgcluster.Cluster {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = pgtest.Logger(t)
	}
	c, err := pgcluster.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

func connect(ctx context.Context, t *testing.T, c *pgcluster.Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, c.URL("stackbone"))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestStartStopRestart(t *testing.T) {
	needBinaries(t)
	ctx := testContext(t)
	dir := clusterDir(t)
	cfg := pgcluster.Config{Dir: dir, NoSync: true}

	c := start(ctx, t, cfg)
	if !c.Started() {
		t.Fatal("Started() = false for a fresh cluster")
	}
	port := c.Port()
	if want := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/stackbone?sslmode=disable", port); c.URL("stackbone") != want {
		t.Fatalf("URL = %q, want %q", c.URL("stackbone"), want)
	}
	conn := connect(ctx, t, c)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	var listen string
	if err := conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen); err != nil || listen != "127.0.0.1" {
		t.Fatalf("listen_addresses = %q, %v", listen, err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before restart')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := pgx.Connect(ctx, c.URL("stackbone")); err == nil {
		t.Fatal("server still answers after Stop")
	}

	c2 := start(ctx, t, cfg)
	if c2.Port() != port {
		t.Fatalf("restart port = %d, want the remembered %d", c2.Port(), port)
	}
	var v string
	if err := connect(ctx, t, c2).QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "before restart" {
		t.Fatalf("row after restart = %q, %v", v, err)
	}
}

func TestReuseRunningServer(t *testing.T) {
	needBinaries(t)
	ctx := testContext(t)
	dir := clusterDir(t)
	first := start(ctx, t, pgcluster.Config{Dir: dir, NoSync: true})

	second, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir, NoSync: true, Logger: pgtest.Logger(t)})
	if err != nil {
		t.Fatalf("second Start: %v", err)
	}
	if second.Started() {
		t.Fatal("second Start launched a server instead of reusing the running one")
	}
	if second.Port() != first.Port() {
		t.Fatalf("second port = %d, want %d", second.Port(), first.Port())
	}
	// Stop on the reusing handle must leave the owner's server running.
	if err := second.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := connect(ctx, t, first).Ping(ctx); err != nil {
		t.Fatalf("server gone after the reusing Stop: %v", err)
	}
}

func TestStartAfterCrash(t *testing.T) {
	needBinaries(t)
	ctx := testContext(t)
	dir := clusterDir(t)
	// Durable settings: with NoSync a killed server may lose the last commits.
	cfg := pgcluster.Config{Dir: dir}
	c := start(ctx, t, cfg)
	if _, err := connect(ctx, t, c).Exec(ctx, "CREATE TABLE survived (v int); INSERT INTO survived VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "data", "postmaster.pid")
	pidText, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(pidText), "\n", 2)[0])

	t.Run("dead pid", func(t *testing.T) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Start right away: the dead server's backends may still be exiting.
		waitDead(t, pid)
		if _, err := os.Stat(pidFile); err != nil {
			t.Fatalf("SIGKILL should leave postmaster.pid behind: %v", err)
		}
		c := start(ctx, t, cfg)
		var v int
		if err := connect(ctx, t, c).QueryRow(ctx, "SELECT v FROM survived").Scan(&v); err != nil || v != 7 {
			t.Fatalf("after crash: %d, %v", v, err)
		}
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("pid reused by another process", func(t *testing.T) {
		// A live process of the server's own user holds the PID, as happens
		// after a reboot; postgres alone would refuse to start.
		sleeper := exec.Command("sleep", "300")
		if os.Geteuid() == 0 {
			sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: postgresCred(t)}
		}
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
		lines := strings.SplitN(string(pidText), "\n", 2)
		stale := strconv.Itoa(sleeper.Process.Pid) + "\n" + lines[1]
		if err := os.WriteFile(pidFile, []byte(stale), 0o600); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			cred := postgresCred(t)
			if err := os.Chown(pidFile, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
		c := start(ctx, t, cfg)
		if !c.Started() {
			t.Fatal("took the unrelated process for a running server")
		}
		var v int
		if err := connect(ctx, t, c).QueryRow(ctx, "SELECT v FROM survived").Scan(&v); err != nil || v != 7 {
			t.Fatalf("after stale pid: %d, %v", v, err)
		}
	})
}

// waitDead polls until pid has exited (gone, or a zombie nobody reaps).
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d alive 20s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func postgresCred(t *testing.T) *syscall.Credential {
	t.Helper()
	out, err := exec.Command("id", "-u", "postgres").Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	out, err = exec.Command("id", "-g", "postgres").Output()
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func TestNotTraversable(t *testing.T) {
	needBinaries(t)
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to another user")
	}
	parent := t.TempDir() // 0700 root: "postgres" cannot enter its parent
	_, err := pgcluster.Start(testContext(t), pgcluster.Config{Dir: filepath.Join(parent, "pg")})
	if !errors.Is(err, pgcluster.ErrNotTraversable) {
		t.Fatalf("err = %v, want ErrNotTraversable", err)
	}
	if !strings.Contains(err.Error(), filepath.Dir(parent)) {
		t.Fatalf("error does not name the blocking directory %s: %v", filepath.Dir(parent), err)
	}
}

func TestNoDir(t *testing.T) {
	if _, err := pgcluster.Start(t.Context(), pgcluster.Config{}); !errors.Is(err, pgcluster.ErrNoDir) {
		t.Fatalf("err = %v, want ErrNoDir", err)
	}
}

func TestVersionMismatch(t *testing.T) {
	needBinaries(t)
	dir := clusterDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "PG_VERSION"), []byte("99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := pgcluster.Start(testContext(t), pgcluster.Config{Dir: dir})
	if !errors.Is(err, pgcluster.ErrVersion) || !strings.Contains(err.Error(), "PostgreSQL 99") {
		t.Fatalf("err = %v, want ErrVersion naming version 99", err)
	}
}

func TestStartFailureShowsServerLog(t *testing.T) {
	needBinaries(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	_, err = pgcluster.Start(testContext(t), pgcluster.Config{Dir: clusterDir(t), Port: port, NoSync: true, Logger: pgtest.Logger(t)})
	if !errors.Is(err, pgcluster.ErrStart) {
		t.Fatalf("err = %v, want ErrStart", err)
	}
	if !strings.Contains(err.Error(), "Address already in use") {
		t.Fatalf("error lacks the server log's reason: %v", err)
	}
	t.Log(err)
}
