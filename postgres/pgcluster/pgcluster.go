package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors returned by this package; classify them with errors.Is.
var (
	// ErrNoBinaries means no directory holding initdb, pg_ctl and postgres was
	// found on PATH or under /usr/lib/postgresql/*/bin.
	ErrNoBinaries = errors.New("pgcluster: no PostgreSQL binaries found: need initdb, pg_ctl and postgres on PATH or in /usr/lib/postgresql/*/bin")
	// ErrNoDir means Config.Dir is empty.
	ErrNoDir = errors.New("pgcluster: Config.Dir is required")
	// ErrNoUser means the process runs as root and there is no unprivileged
	// user "postgres" to run initdb and the server as.
	ErrNoUser = errors.New(`pgcluster: running as root needs the user "postgres" to run the server as`)
	// ErrNotTraversable means a parent of Config.Dir cannot be searched by the
	// user the server runs as; the message names the directory.
	ErrNotTraversable = errors.New("pgcluster: directory not searchable by the server's user")
	// ErrVersion means Config.Dir holds a cluster of a PostgreSQL major
	// version whose binaries were not found.
	ErrVersion = errors.New("pgcluster: data directory needs another PostgreSQL major version")
	// ErrStart means the server did not start, or a running one did not
	// answer; the message ends with the tail of the server log.
	ErrStart = errors.New("pgcluster: server did not start")
)

// Config says where the cluster lives and how it runs.
type Config struct {
	// Dir holds the cluster: data directory, log, socket, chosen port (see the
	// package doc). Required. Created with mode 0700 if missing; relative paths
	// are resolved against the working directory.
	Dir string
	// Port is the TCP port the server listens on, on 127.0.0.1 only. Default 0:
	// pick a free port and remember it in Dir/port, so a restart reuses it
	// while it is still free.
	Port int
	// NoSync skips initdb's fsync and runs the server with fsync,
	// synchronous_commit, full_page_writes and wal_init_zero off. For tests
	// only: a server crash can lose the last commits and an OS crash can
	// corrupt the data. Default false (durable).
	NoSync bool
	// BinDir holds initdb, pg_ctl and postgres. Default: FindBinDir, or
	// /usr/lib/postgresql/N/bin when Dir already holds a cluster of major
	// version N and FindBinDir's version differs.
	BinDir string
	// Logger receives progress (initdb, start, reuse, stop), never data.
	// Default: discard.
	Logger *slog.Logger
}

// Cluster is a running server started (or found running) by Start.
type Cluster struct {
	dir     string
	dataDir string
	binDir  string
	port    int
	noSync  bool
	major   int // major version of the binaries; 0 if unknown
	acct    account
	logger  *slog.Logger

	// started is true when this Start launched the server, so Stop may stop it.
	started bool

	mu      sync.Mutex
	stopped bool
}

const (
	superuser = "postgres"
	// DefaultDatabase is the database Start creates when it is missing.
	DefaultDatabase = "stackbone"
	// confFile is included from postgresql.conf and rewritten on every start,
	// so Dir can move and Config.Port/NoSync can change between runs.
	confFile = "stackbone.conf"
	logFile  = "server.log"
	portFile = "port"
	lockFile = "start.lock"
	// maxLogSize bounds server.log: a larger log is rotated to server.log.1
	// when the server starts, so a long-lived dev cluster does not fill the disk.
	maxLogSize = 16 << 20
	// sunPathMax is the longest unix socket path that fits everywhere:
	// sockaddr_un.sun_path holds 108 bytes on Linux and 104 on macOS,
	// including the trailing NUL.
	sunPathMax = 103
)

// Start makes sure a server runs from cfg.Dir and returns it.
//
// On first use it runs initdb (trust auth, superuser "postgres", UTF8, C
// locale). If a server from cfg.Dir is already running (another process or
// an earlier run left it up), Start reuses it and Stop will leave it running.
// Otherwise it starts one with pg_ctl; a postmaster.pid left by a crash is
// handled, including one whose PID now belongs to an unrelated process.
// Several processes may call Start on the same Dir at once: an flock on
// Dir/start.lock serialises them. Finally the database "stackbone" is
// created if missing.
//
// Errors: ErrNoDir, ErrNoBinaries, ErrNoUser, ErrNotTraversable, ErrVersion,
// ErrStart (with the server log's tail), or a wrapped I/O or SQL error.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Dir == "" {
		return nil, ErrNoDir
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	acct, err := serverAccount()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		noSync:  cfg.NoSync,
		acct:    acct,
		logger:  logger.With("dir", dir),
	}
	if err := c.prepareDir(); err != nil {
		return nil, err
	}
	unlock, err := lockDir(ctx, filepath.Join(dir, lockFile))
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := c.pickBinDir(ctx, cfg.BinDir); err != nil {
		return nil, err
	}
	if err := c.initIfNeeded(ctx); err != nil {
		return nil, err
	}
	port, err := c.runningPort(ctx)
	if err != nil {
		return nil, err
	}
	if port != 0 {
		if cfg.Port != 0 && cfg.Port != port {
			c.logger.Warn("postgres: reusing running server on its own port, not Config.Port", "port", port, "config_port", cfg.Port)
		}
		c.port = port
		c.logger.Info("postgres: reusing running server", "port", port)
		if err := c.waitReady(ctx, 30*time.Second); err != nil {
			return nil, c.startError(err, "")
		}
	} else if err := c.start(ctx, cfg.Port); err != nil {
		return nil, err
	}
	if err := c.ensureDatabase(ctx, DefaultDatabase); err != nil {
		return nil, err
	}
	return c, nil
}

// URL returns a connection URL for database dbname as superuser "postgres".
func (c *Cluster) URL(dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + dbname,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the TCP port the server listens on (127.0.0.1).
func (c *Cluster) Port() int { return c.port }

// Dir returns the absolute cluster directory.
func (c *Cluster) Dir() string { return c.dir }

// Started reports whether Start launched the server (true) or reused one
// that was already running (false); only in the first case does Stop stop it.
func (c *Cluster) Started() bool { return c.started }

// Stop shuts the server down (pg_ctl stop -m fast -w) if this Start started
// it, and does nothing otherwise, so a server shared with another process is
// left running. Calling Stop again is a no-op.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started || c.stopped {
		return nil
	}
	c.stopped = true
	out, err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", "120")
	if err != nil {
		// Already gone (crashed, or stopped by hand) is what Stop wants anyway.
		if port, perr := c.runningPort(ctx); perr == nil && port == 0 {
			return nil
		}
		return fmt.Errorf("pgcluster: pg_ctl stop: %w: %s", err, strings.TrimSpace(out))
	}
	c.logger.Info("postgres: stopped", "port", c.port)
	return nil
}

// prepareDir creates Dir and, when the server runs as another user, hands
// Dir to that user and checks it can reach it.
func (c *Cluster) prepareDir() error {
	// Parents get 0755 (before umask) so the server's user can traverse the
	// ones we create; Dir itself holds the data and stays private.
	if err := os.MkdirAll(filepath.Dir(c.dir), 0o755); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.Mkdir(c.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if c.acct.cred == nil {
		return nil
	}
	if err := c.chown(c.dir); err != nil {
		return err
	}
	return checkTraversable(c.dir, c.acct)
}

// pickBinDir sets the binaries to use (the configured ones, else
// FindBinDir's, unless an existing data directory needs another major
// version) and their major version.
func (c *Cluster) pickBinDir(ctx context.Context, configured string) error {
	bin := configured
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return err
		}
	}
	have, _ := binMajor(ctx, bin) // unknown: let initdb or the server say what is wrong
	if raw, err := os.ReadFile(filepath.Join(c.dataDir, "PG_VERSION")); err == nil && configured == "" {
		if want := strings.TrimSpace(string(raw)); have != "" && want != have {
			alt := filepath.Join("/usr/lib/postgresql", want, "bin")
			if !hasBinaries(alt) {
				return fmt.Errorf("%w: %s holds PostgreSQL %s data, found binaries for %s in %s", ErrVersion, c.dataDir, want, have, bin)
			}
			bin, have = alt, want
		}
	}
	c.binDir = bin
	c.major, _ = strconv.Atoi(strings.SplitN(have, ".", 2)[0])
	return nil
}

// initIfNeeded runs initdb unless Dir/data already holds a cluster. initdb
// writes to a scratch directory that is renamed into place only once it is
// complete, so a crash during initdb never leaves a half-made cluster that
// later starts would trip over.
func (c *Cluster) initIfNeeded(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); err == nil {
		return nil
	}
	if entries, err := os.ReadDir(c.dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("pgcluster: %s is not empty but holds no cluster (no PG_VERSION); move it away", c.dataDir)
	}
	tmp := filepath.Join(c.dir, "data.initdb")
	if err := os.RemoveAll(tmp); err != nil { // left by an initdb that was killed
		return fmt.Errorf("pgcluster: %w", err)
	}
	args := []string{"-D", tmp, "-U", superuser, "--auth=trust", "--encoding=UTF8", "--locale=C"}
	if c.noSync {
		args = append(args, "--no-sync")
	}
	start := time.Now()
	if out, err := c.run(ctx, "initdb", args...); err != nil {
		return fmt.Errorf("pgcluster: initdb: %w: %s", err, tail(out, 20))
	}
	f, err := os.OpenFile(filepath.Join(tmp, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Added by stackbone (postgres/pgcluster): settings derived from its Config,\n# rewritten on every start.\ninclude_if_exists = '%s'\n", confFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	_ = os.Remove(c.dataDir) // an empty directory, if anything
	if err := os.Rename(tmp, c.dataDir); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	c.logger.Info("postgres: initialised cluster", "bin", c.binDir, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// runningPort returns the port of a server already running from Dir, or 0.
func (c *Cluster) runningPort(ctx context.Context) (int, error) {
	out, err := c.run(ctx, "pg_ctl", "status", "-D", c.dataDir)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 3:
		// Not running. pg_ctl start copes with a postmaster.pid whose PID is
		// gone, but refuses while the dead server's backends linger.
		if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); err == nil {
			return 0, c.waitDataDirIdle(ctx, 15*time.Second)
		}
		return 0, nil
	default:
		return 0, fmt.Errorf("pgcluster: pg_ctl status: %w: %s", err, strings.TrimSpace(out))
	}
	pidPath := filepath.Join(c.dataDir, "postmaster.pid")
	raw, err := os.ReadFile(pidPath)
	if err != nil {
		return 0, fmt.Errorf("pgcluster: %w", err)
	}
	// postmaster.pid: line 1 PID, line 4 port (see pidfile.h).
	lines := strings.Split(string(raw), "\n")
	if len(lines) < 4 {
		return 0, fmt.Errorf("%w: %s is truncated", ErrStart, pidPath)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, _ := strconv.Atoi(strings.TrimSpace(lines[3]))
	if pid <= 0 || port <= 0 {
		return 0, fmt.Errorf("%w: cannot parse %s", ErrStart, pidPath)
	}
	if !c.isPostmaster(pid) {
		// After a crash the PID in the file can be a zombie nobody reaps, or
		// (after a reboot, in containers especially) an unrelated process.
		// pg_ctl then reports "running" and postgres refuses to start when
		// that process is alive and runs as the same user, so the file goes.
		// The file also guards against a new postmaster starting while
		// backends of the dead one still write: wait for those to exit.
		if err := c.waitDataDirIdle(ctx, 15*time.Second); err != nil {
			return 0, err
		}
		c.logger.Warn("postgres: removing stale postmaster.pid (its PID is a zombie or another process)", "pid", pid)
		if err := os.Remove(pidPath); err != nil {
			return 0, fmt.Errorf("pgcluster: %w", err)
		}
		// The unix socket's lock file names the same PID and trips the
		// server the same way.
		locks, _ := filepath.Glob(filepath.Join(c.dir, ".s.PGSQL.*.lock"))
		for _, l := range locks {
			if raw, err := os.ReadFile(l); err == nil && strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]) == strconv.Itoa(pid) {
				_ = os.Remove(l)
			}
		}
		return 0, nil
	}
	return port, nil
}

// isPostmaster reports whether pid is a server running from our data
// directory. On Linux /proc tells: a zombie is dead (where PID 1 does not
// reap, as in many containers, a killed postmaster stays one and pg_ctl
// status still calls it running), and the postmaster chdirs into its data
// directory, so its cwd must be ours. Where /proc cannot be read it trusts
// pg_ctl status.
func (c *Cluster) isPostmaster(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// "pid (comm) S ...": the state follows the last ')', as comm may hold one.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		if st := stat[i+2]; st == 'Z' || st == 'X' {
			return false
		}
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return true
	}
	want, err := filepath.EvalSymlinks(c.dataDir)
	if err != nil {
		return true
	}
	return cwd == want
}

// waitDataDirIdle polls until no live process has the data directory as
// its working directory (every server process does). Without /proc it
// returns at once.
func (c *Cluster) waitDataDirIdle(ctx context.Context, limit time.Duration) error {
	want, err := filepath.EvalSymlinks(c.dataDir)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	deadline := time.Now().Add(limit)
	for {
		var busy []string
		cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, p := range cwds {
			if cwd, err := os.Readlink(p); err == nil && cwd == want {
				busy = append(busy, filepath.Base(filepath.Dir(p)))
			}
		}
		if len(busy) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: processes %s still run in %s after their postmaster died", ErrStart, strings.Join(busy, ", "), c.dataDir)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// start launches the server. With an automatic port it retries on another
// free port if someone took the chosen one between the check and the bind.
func (c *Cluster) start(ctx context.Context, wantPort int) error {
	c.rotateLog()
	for attempt := 1; ; attempt++ {
		port, err := c.choosePort(wantPort)
		if err != nil {
			return err
		}
		c.port = port
		if err := c.writeConf(); err != nil {
			return err
		}
		began := time.Now()
		out, err := c.run(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", filepath.Join(c.dir, logFile), "-w", "-t", "300")
		if err == nil {
			c.started = true
			c.logger.Info("postgres: started", "port", port, "duration", time.Since(began).Round(time.Millisecond))
			return c.waitReady(ctx, 30*time.Second)
		}
		if wantPort == 0 && attempt < 3 && !portFree(port) {
			if p, perr := c.runningPort(ctx); perr == nil && p == 0 {
				c.logger.Warn("postgres: port taken while starting, trying another", "port", port)
				_ = os.Remove(filepath.Join(c.dir, portFile))
				continue
			}
		}
		return c.startError(fmt.Errorf("pg_ctl start: %w", err), out)
	}
}

// choosePort returns want, else the remembered port if still free, else a
// new free port (remembered for next time).
func (c *Cluster) choosePort(want int) (int, error) {
	if want != 0 {
		return want, nil
	}
	path := filepath.Join(c.dir, portFile)
	if raw, err := os.ReadFile(path); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && p > 0 && portFree(p) {
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: pick a port: %w", err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := c.writeFile(path, []byte(strconv.Itoa(p)+"\n"), 0o644); err != nil {
		return 0, err
	}
	return p, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// writeConf writes the settings that follow from Config and Dir.
func (c *Cluster) writeConf() error {
	var b strings.Builder
	b.WriteString("# Written by stackbone (postgres/pgcluster) on every start: edit its Config, not this file.\n")
	b.WriteString("listen_addresses = '127.0.0.1'\n")
	fmt.Fprintf(&b, "port = %d\n", c.port)
	sock := fmt.Sprintf("%s/.s.PGSQL.%d", c.dir, c.port)
	if len(sock) <= sunPathMax && !strings.ContainsAny(c.dir, `"',`) {
		fmt.Fprintf(&b, "unix_socket_directories = '\"%s\"'\n", c.dir)
	} else {
		// The kernel limits socket paths to ~104 bytes; a deep Dir gets TCP only.
		b.WriteString("unix_socket_directories = ''\n")
	}
	if c.noSync {
		b.WriteString("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
		if c.major >= 12 {
			// A fresh WAL segment is otherwise zero-filled (16 MB) before use;
			// copying a template database writes ~8 MB of WAL, and the fill
			// made a copy ~10x slower (230 ms instead of 20 ms) on a new cluster.
			b.WriteString("wal_init_zero = off\n")
		}
	}
	return c.writeFile(filepath.Join(c.dataDir, confFile), []byte(b.String()), 0o600)
}

// waitReady polls until the server answers SELECT 1, for servers that are
// still starting (another process's start, or crash recovery).
func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		conn, err := c.connect(ctx, "postgres")
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(context.WithoutCancel(ctx))
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("server on port %d did not answer: %w", c.port, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) connect(ctx context.Context, dbname string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(c.URL(dbname))
	if err != nil {
		return nil, err
	}
	cfg.ConnectTimeout = 5 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

// ensureDatabase creates dbname unless it exists. Two processes may race to
// create it; losing that race is success.
func (c *Cluster) ensureDatabase(ctx context.Context, dbname string) error {
	conn, err := c.connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("pgcluster: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbname).Scan(&exists); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbname}.Sanitize())
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505")) {
		return fmt.Errorf("pgcluster: create database %s: %w", dbname, err)
	}
	c.logger.Info("postgres: created database", "database", dbname)
	return nil
}

// startError wraps err in ErrStart with pg_ctl's output and the log's tail.
func (c *Cluster) startError(err error, pgctlOut string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", err)
	if s := strings.TrimSpace(pgctlOut); s != "" {
		fmt.Fprintf(&b, "\npg_ctl: %s", tail(s, 10))
	}
	logPath := filepath.Join(c.dir, logFile)
	fmt.Fprintf(&b, "\n--- tail of %s ---\n%s", logPath, logTail(logPath, 20))
	return fmt.Errorf("%w: %s", ErrStart, b.String())
}

// rotateLog moves an oversized server.log aside before a start.
func (c *Cluster) rotateLog() {
	p := filepath.Join(c.dir, logFile)
	if fi, err := os.Stat(p); err == nil && fi.Size() > maxLogSize {
		_ = os.Rename(p, p+".1")
	}
}

// run runs one of the PostgreSQL binaries as the server's user and returns
// its combined output.
func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	// The server's user may not be able to enter our working directory.
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	if c.acct.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.acct.cred}
	}
	// pg_ctl start hands the server its log file, not our pipe; should some
	// descendant still hold the pipe, do not wait on it forever.
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

// childEnv is our environment without PG* variables (PGDATA, PGPORT,
// PGCTLTIMEOUT... would override what we pass) and with the C locale, so
// messages in errors are English and initdb does not depend on the caller's
// locale.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") || strings.HasPrefix(kv, "LANGUAGE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

// writeFile writes a file and gives it to the server's user.
func (c *Cluster) writeFile(path string, data []byte, perm os.FileMode) error {
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if c.acct.cred != nil {
		return c.chown(path)
	}
	return nil
}

func (c *Cluster) chown(path string) error {
	if err := os.Chown(path, int(c.acct.uid), int(c.acct.gid)); err != nil {
		return fmt.Errorf("pgcluster: give %s to user %s: %w", path, c.acct.name, err)
	}
	return nil
}

// logTail returns the last n lines of the file at path (reading at most its
// last 16 KiB).
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const window = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(-window, io.SeekEnd)
	}
	raw, _ := io.ReadAll(f)
	return tail(string(raw), n)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
