package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/postgres/pgtest"
)

// serve is production: it needs a config and a database, makes no dev key,
// and refuses a database that lacks migrations unless asked to apply them.
func TestServeNeedsDatabaseAndMakesNoDevKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "stackbone")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(dir, "prod.yaml")
	os.WriteFile(cfgPath, []byte("agents:\n  support:\n    model: openai/gpt-4o-mini\n"), 0o644)

	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(filteredEnv(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(nil, "serve"); err == nil || !strings.Contains(out, "--config") {
		t.Fatalf("serve without config: %v %s", err, out)
	}
	if out, err := run(nil, "serve", "--config", cfgPath); err == nil || !strings.Contains(out, "STACKBONE_DATABASE_URL") {
		t.Fatalf("serve without database: %v %s", err, out)
	}

	// A database with no migrations: serve refuses, migrate applies them.
	empty := pgtest.EmptyURL(t)
	if out, err := run([]string{"STACKBONE_DATABASE_URL=" + empty}, "serve", "--config", cfgPath); err == nil || !strings.Contains(out, "stackbone migrate") {
		t.Fatalf("serve on an unmigrated database: %v %s", err, out)
	}
	if out, err := run([]string{"STACKBONE_DATABASE_URL=" + empty}, "migrate"); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	secret, err := run([]string{"STACKBONE_DATABASE_URL=" + empty}, "keys", "create", "ops", "--scope", "config:read")
	if err != nil {
		t.Fatalf("keys create: %v %s", err, secret)
	}
	secret = strings.TrimSpace(secret[strings.LastIndex(strings.TrimSpace(secret), "\n")+1:])

	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Dir = dir // its .stackbone (uploaded originals) stays in the test's directory
	cmd.Env = append(filteredEnv(), "STACKBONE_DATABASE_URL="+empty, "STACKBONE_HTTP_ADDR="+addr, "STACKBONE_SIP_ADDR=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	status := func(key string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/memory/settings/support", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(30 * time.Second)
	for status(secret) != 200 {
		select {
		case err := <-exited:
			t.Fatalf("serve exited: %v\n%s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never answered with the created key\n%s", logs.String())
		}
	}
	if got := status("local-dev"); got != 401 {
		t.Fatalf("serve accepted the dev key: %d", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("serve exit: %v", err)
	}

	// A database that once ran `dev` holds the public dev key: serve
	// refuses it until it is revoked, and revocation sticks.
	pool, err := pgxpool.New(t.Context(), empty)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := auth.NewStore(pool).Ensure(t.Context(), auth.DevKey, auth.DevKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	dbEnv := []string{"STACKBONE_DATABASE_URL=" + empty, "STACKBONE_HTTP_ADDR=" + freeAddr(t), "STACKBONE_SIP_ADDR=127.0.0.1:0"}
	if out, err := run(dbEnv, "serve", "--config", cfgPath); err == nil || !strings.Contains(out, "keys revoke local-dev") {
		t.Fatalf("serve with a live dev key: %v %s", err, out)
	}
	if out, err := run(dbEnv, "keys", "revoke", "local-dev"); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if err := auth.NewStore(pool).Ensure(t.Context(), auth.DevKey, auth.DevKey, auth.AllScopes); !errors.Is(err, auth.ErrRevoked) {
		t.Fatalf("dev brought the revoked key back: %v", err)
	}

	// keys create never implies scopes, and a key that acts for persons
	// says whom.
	for _, args := range [][]string{
		{"keys", "create", "noscope"},
		{"keys", "create", "chat", "--scope", "agents:run"},
		{"keys", "create", "bad", "--role", "root"},
	} {
		if out, err := run(dbEnv, args...); err == nil {
			t.Fatalf("%v was taken: %s", args, out)
		}
	}
	if out, err := run(dbEnv, "keys", "create", "web", "--role", "app", "--identity", "customerId=cust_42"); err != nil {
		t.Fatalf("app key: %v %s", err, out)
	}
	if out, err := run(dbEnv, "keys", "list"); err != nil || !strings.Contains(out, "customerId=cust_42") {
		t.Fatalf("keys list: %v %s", err, out)
	}
}
