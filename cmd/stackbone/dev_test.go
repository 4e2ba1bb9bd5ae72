package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/lockedbuf"
	"github.com/stackbone/box/postgres/pgcluster"
)

// The front door: `stackbone dev` on a machine with nothing running starts
// its own PostgreSQL, serves the routes with the dev key, and Ctrl-C stops
// everything it started.
func TestDevStartsServesAndStopsCleanly(t *testing.T) {
	if _, err := pgcluster.FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL binaries on this machine: %v", err)
	}
	t.Parallel()
	// The cluster directory must be reachable by the unprivileged postgres
	// user when the test runs as root, so it is not t.TempDir (mode 0700).
	dir, err := os.MkdirTemp("", "stackbone-dev-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })

	bin := filepath.Join(dir, "stackbone")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	logs := &lockedbuf.Buffer{}
	cmd := exec.Command(bin, "dev", "--data-dir", filepath.Join(dir, ".stackbone"))
	cmd.Dir = dir // no configs/dev.yaml here: the embedded copy is used
	cmd.Env = append(filteredEnv(), "STACKBONE_HTTP_ADDR="+addr, "STACKBONE_SIP_ADDR=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("box output:\n%s", logs.String())
		}
	})

	base := "http://" + addr
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("dev exited early: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("dev did not become healthy")
		}
	}

	get := func(method, path, key, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("GET", "/api/memory/settings/support", "", ""); code != 401 {
		t.Fatalf("no key: %d", code)
	}
	code, body := get("GET", "/api/memory/settings/support", "local-dev", "")
	var env struct {
		Data struct {
			Binding struct{ IdentityKey string } `json:"binding"`
		} `json:"data"`
	}
	json.Unmarshal([]byte(body), &env)
	if code != 200 || env.Data.Binding.IdentityKey != "customerId" {
		t.Fatalf("settings of support: %d %s", code, body)
	}
	if code, body := get("POST", "/api/memory/recall", "local-dev", `{"agentId":"support","userId":"+34111111111"}`); code != 200 ||
		!strings.Contains(body, `"facts":[]`) {
		t.Fatalf("recall: %d %s", code, body)
	}
	// A newcomer's first hour: the start-up log names the call page and the
	// dev key, / opens Studio, recall of an agent the config does
	// not declare is a 404, `keys list` finds the dev database on its own,
	// and the dev config has an agent with a held tool.
	if !strings.Contains(logs.String(), base+"/call") || !strings.Contains(logs.String(), "key=local-dev") {
		t.Fatalf("the start-up log names neither the call page nor the dev key:\n%s", logs.String())
	}
	if code, _ := get("GET", "/", "", ""); code != 200 { // Studio
		t.Fatalf("GET /: %d", code)
	}
	if code, body := get("POST", "/api/memory/recall", "local-dev", `{"agentId":"nobody","userId":"u"}`); code != 404 ||
		!strings.Contains(body, "agent_not_found") {
		t.Fatalf("recall of an undeclared agent: %d %s", code, body)
	}
	keysList := exec.Command(bin, "keys", "list")
	keysList.Dir = dir
	keysList.Env = filteredEnv()
	if out, err := keysList.CombinedOutput(); err != nil || !strings.Contains(string(out), "local-dev") {
		t.Fatalf("keys list without a database URL: %v\n%s", err, out)
	}
	if code, body := get("GET", "/api/agents", "local-dev", ""); code != 200 || !strings.Contains(body, "careful") {
		t.Fatalf("no agent with a held tool in the dev config: %d %s", code, body)
	}

	// Without a provider, add says so clearly.
	if code, body := get("POST", "/api/memory/add", "local-dev", `{"agentId":"support","userId":"u","content":"hi"}`); code != 502 ||
		!strings.Contains(body, "OPENAI_BASE_URL") {
		t.Fatalf("add without provider: %d %s", code, body)
	}

	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("dev exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dev did not stop on SIGINT")
	}
	if _, err := os.Stat(filepath.Join(dir, ".stackbone", "postgres", "data", "postmaster.pid")); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(filepath.Join(dir, ".stackbone", "postgres"))
		t.Fatalf("PostgreSQL still running after Ctrl-C (postmaster.pid: %v); dir has %v", err, entries)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("the HTTP port is still open")
	}
}

func freeAddr(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freeport.Get(t, freeport.TCP)))
}

// filteredEnv drops settings that would point the box elsewhere.
func filteredEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "STACKBONE_DATABASE_URL", "STACKBONE_HTTP_ADDR", "STACKBONE_SIP_ADDR", "OPENAI_BASE_URL", "OPENAI_API_KEY":
			continue
		}
		out = append(out, kv)
	}
	return out
}
