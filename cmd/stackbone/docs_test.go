package main

import (
	"bufio"
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
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/internal/lockedbuf"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

// repoRoot is the checkout, where a newcomer runs the documented commands.
const repoRoot = "../.."

// frontDoor are the commands of the README that no doc test runs as
// written: the box itself (the doc tests start it the same way) and the
// test command (which runs them).
var frontDoor = map[string]bool{"go run ./cmd/stackbone dev": true, "scripts/test": true}

// A shell block of a document: its text and the line it starts on.
type shellBlock struct {
	line     int
	text     string
	runnable bool
}

var fenceRe = regexp.MustCompile("^```\\s*(\\S*)\\s*(.*)$")

// shellBlocks are the sh, bash and shell code blocks of a Markdown file;
// a block whose info string is "sh runnable" is run by the doc tests.
func shellBlocks(t *testing.T, path string) []shellBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []shellBlock
	var cur *shellBlock
	var lang string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		m := fenceRe.FindStringSubmatch(l)
		switch {
		case m != nil && cur == nil && lang == "":
			if m[1] == "" {
				lang = "text"
				continue
			}
			lang = m[1]
			if lang == "sh" || lang == "bash" || lang == "shell" {
				cur = &shellBlock{line: n, runnable: strings.TrimSpace(m[2]) == "runnable"}
			}
		case m != nil && m[1] == "":
			if cur != nil {
				blocks = append(blocks, *cur)
			}
			cur, lang = nil, ""
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return blocks
}

// devBox is `stackbone dev` run from the checkout, as the README says,
// against the test database and the scripted model provider.
type devBox struct {
	url, httpAddr, sipAddr string
	model                  *providertest.Server
	logs                   *lockedbuf.Buffer
}

func startDev(t *testing.T) *devBox {
	t.Helper()
	bin := buildBox(t)
	dbURL, _ := testDatabase(t)
	b := &devBox{httpAddr: freeAddr(t), sipAddr: freeUDPAddr(t), model: providertest.New(t), logs: &lockedbuf.Buffer{}}
	b.url = "http://" + b.httpAddr
	cmd := exec.Command(bin, "dev", "--data-dir", t.TempDir())
	cmd.Dir = repoRoot
	cmd.Env = append(filteredEnv(), "STACKBONE_DATABASE_URL="+dbURL, "STACKBONE_HTTP_ADDR="+b.httpAddr,
		"STACKBONE_SIP_ADDR="+b.sipAddr, "OPENAI_BASE_URL="+b.model.URL(), "OPENAI_API_KEY=test")
	cmd.Stdout, cmd.Stderr = b.logs, b.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("box output:\n%s", b.logs.String())
		}
	})
	poll.Until(t, "the dev box to be ready", 120*time.Second, func() bool {
		resp, err := http.Get(b.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return b
}

// script is a block as the test runs it: the box's default addresses
// replaced by the test box's, each address of its own a free port.
func (b *devBox) script(t *testing.T, text string) string {
	t.Helper()
	text = strings.ReplaceAll(text, "127.0.0.1:4242", b.httpAddr)
	text = strings.ReplaceAll(text, "127.0.0.1:5060", b.sipAddr)
	return strings.ReplaceAll(text, "127.0.0.1:5062", net.JoinHostPort("127.0.0.1", strconv.Itoa(freeport.Get(t, freeport.UDP, freeport.TCP))))
}

// get reads one route of the box with the dev key.
func (b *devBox) get(t *testing.T, path string, into any) {
	t.Helper()
	req, _ := http.NewRequest("GET", b.url+path, nil)
	req.Header.Set("Authorization", "Bearer local-dev")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(body, into) != nil {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
}

var (
	curlRe   = regexp.MustCompile(`(^|[\s(])curl\s`)
	statusRe = regexp.MustCompile(`#\s*(\d{3})\b`)
	heardRe  = regexp.MustCompile(`(?m)^HTTP (\d{3})$`)
)

// expectedStatuses are the HTTP statuses the curl commands of a script
// answer, in order: the number a command's comment starts with ("# 409:
// ..."), else any 2xx ("2xx").
func expectedStatuses(script string) []string {
	var want []string
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		for range curlRe.FindAllStringIndex(l, -1) {
			code := "2xx"
			if m := statusRe.FindStringSubmatch(l); m != nil {
				code = m[1]
			}
			want = append(want, code)
		}
	}
	return want
}

// The README's commands work: every runnable block, in order, in one shell
// in the checkout, against `stackbone dev` started as the README says; each
// curl gets the status its comment names, or a 2xx. Every other shell block
// is one of the two front-door commands.
func TestReadmeRunsAgainstTheDevBox(t *testing.T) {
	t.Parallel()
	needTools(t, "curl", "jq")
	var script strings.Builder
	for _, blk := range shellBlocks(t, filepath.Join(repoRoot, "README.md")) {
		cmd := strings.TrimSpace(blk.text)
		switch {
		case blk.runnable:
			fmt.Fprintf(&script, "# README.md:%d\n%s\n", blk.line, blk.text)
		case !frontDoor[cmd]:
			t.Errorf("README.md:%d: a shell block that is neither runnable (```sh runnable) nor a front-door command:\n%s", blk.line, cmd)
		}
	}
	if script.Len() == 0 {
		t.Fatal("README.md has no runnable block")
	}
	b := startDev(t)
	b.model.Respond(scriptedModel)
	text := b.script(t, script.String())
	out, stderr := runScript(t, repoRoot, text, os.Getenv("HOME"), "STACKBONE_URL="+b.url)
	var got []string
	for _, m := range heardRe.FindAllStringSubmatch(stderr, -1) {
		got = append(got, m[1])
	}
	want := expectedStatuses(text)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i] == want[i] || (want[i] == "2xx" && strings.HasPrefix(got[i], "2"))
	}
	t.Logf("statuses of the README's curl commands: %v", got)
	if !ok {
		t.Fatalf("statuses %v, want %v\nscript:\n%s\noutput:\n%s\n%s", got, want, text, out, stderr)
	}
	// The held tool was decided, and the scripted model's extraction saved.
	if !strings.Contains(out, "Interested in the AI master.") {
		t.Fatalf("the memory add's facts are not in the output:\n%s", out)
	}
}

// The baresip recipe of docs/sip-trunks.md, run as it is written against
// the dev box: the phone says its question and stays on the line long
// enough to hear the agent's answer, and the call is saved with it.
func TestBaresipRecipeRuns(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	var recipe string
	for _, blk := range shellBlocks(t, filepath.Join(repoRoot, "docs", "sip-trunks.md")) {
		if blk.runnable && strings.Contains(blk.text, "baresip -f") {
			recipe = blk.text
		}
	}
	if recipe == "" {
		t.Fatal("docs/sip-trunks.md has no runnable baresip recipe")
	}
	b := startDev(t)
	const answer = "We are open from nine to five, Monday to Friday."
	b.model.RespondTranscripts(func([]byte) string { return "What are your opening hours?" })
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if isExtraction(req) {
			return providertest.Reply{Content: `{"operations":[],"summary":"Asked for the opening hours."}`}
		}
		return providertest.Reply{Content: answer}
	})
	home := t.TempDir()
	out := startScript(t, home, b.script(t, recipe), home)

	// The recipe's baresip lives 60 s; the test is done once the call is.
	type callRow struct {
		ID      string  `json:"id"`
		Status  string  `json:"status"`
		Outcome *string `json:"outcome"`
	}
	var call callRow
	poll.Until(t, "the recipe's call to end", 90*time.Second, func() bool {
		var env struct {
			Data []callRow `json:"data"`
		}
		b.get(t, "/api/voice/calls?direction=inbound&limit=1", &env)
		if len(env.Data) == 0 {
			return false
		}
		call = env.Data[0]
		return call.Status == "ended"
	})
	if call.Outcome == nil || *call.Outcome != "caller_hangup" {
		t.Fatalf("call %+v: want the phone to hang up at its file's end\n%s", call, out.String())
	}
	var rec struct {
		Data json.RawMessage `json:"data"`
	}
	b.get(t, "/api/voice/calls/"+call.ID, &rec)
	if !strings.Contains(string(rec.Data), answer) {
		t.Fatalf("the call's heard transcript lacks the answer: %s", rec.Data)
	}
	var pcm []int16
	poll.Until(t, "the phone's recording", 10*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(home, ".stackbone-phone", "snd", "*-dec.wav"))
		if len(files) == 0 {
			return false
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			return false
		}
		pcm, err = siptest.WAVSamples(data)
		return err == nil && len(pcm) > 0
	})
	if tail := voicedAfter(pcm, 4*8000); tail < 25 {
		t.Fatalf("the phone heard %d voiced 20 ms windows after its first 4 s, want the answer", tail)
	}
}

// voicedAfter counts the 20 ms windows of 8 kHz audio louder than silence
// (RMS over 500) from sample from on.
func voicedAfter(pcm []int16, from int) int {
	n := 0
	for i := from; i+160 <= len(pcm); i += 160 {
		var sum float64
		for _, v := range pcm[i : i+160] {
			sum += float64(v) * float64(v)
		}
		if sum/160 > 500*500 {
			n++
		}
	}
	return n
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test installs it)", tool)
		}
	}
}

// isExtraction reports whether a chat request is the memory extraction.
func isExtraction(req *openai.ChatCompletionRequest) bool {
	return len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`)
}

// scriptedModel answers what the README's tour asks a model: the memory
// extraction, the held memory_save of the agent careful (then its answer
// once the person approved), and a short answer on every wire.
func scriptedModel(req *openai.ChatCompletionRequest) providertest.Reply {
	if isExtraction(req) {
		return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master."},{"op":"add","content":"Wants calls after 16:00."}],"summary":"Asked about the AI master."}`}
	}
	last := req.Messages[len(req.Messages)-1]
	for _, tool := range req.Tools {
		if tool.Function != nil && tool.Function.Name == "memory_save" && last.Role == "user" && strings.Contains(last.Content, "remember") {
			return providertest.Reply{ToolCalls: []providertest.Call{
				providertest.ToolCall("call_1", "memory_save", map[string]string{"content": last.Content}),
			}}
		}
	}
	return providertest.Reply{Content: "Happy to help."}
}

// startScript runs a shell script in dir with HOME set to home, in a
// process group of its own that the test's end stops; its output is kept.
func startScript(t *testing.T, dir, script, home string, env ...string) *lockedbuf.Buffer {
	t.Helper()
	out := &lockedbuf.Buffer{}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(filteredEnv(), "HOME="+home), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("script output:\n%s", out.String())
		}
	})
	return out
}

// runScript runs a shell script to its end (set -euo pipefail), each curl
// writing its status to stderr as "HTTP nnn"; it returns the standard
// output and error.
func runScript(t *testing.T, dir, script, home string, env ...string) (string, string) {
	t.Helper()
	prelude := "set -euo pipefail\ncurl() { command curl -w '%{stderr}HTTP %{http_code}\\n' \"$@\"; }\n"
	stdout, stderr := &lockedbuf.Buffer{}, &lockedbuf.Buffer{}
	cmd := exec.Command("bash", "-c", prelude+script)
	cmd.Dir = dir
	cmd.Env = append(append(filteredEnv(), "HOME="+home), env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the script failed: %v\nscript:\n%s\noutput:\n%s\n%s", err, script, stdout.String(), stderr.String())
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the script did not end\n%s", stderr.String())
	}
	return stdout.String(), stderr.String()
}
