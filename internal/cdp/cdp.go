// Package cdp drives a headless Chromium over the DevTools protocol, just
// enough for end-to-end tests of the call page and Studio: start the browser with a
// fake microphone, open a page, evaluate JavaScript, read its console.
//
//	b, err := cdp.Start(ctx, cdp.Options{UserDataDir: t.TempDir(), FakeAudio: "speech.wav"})
//	defer b.Close()
//	err = b.Navigate(ctx, url)
//	err = b.Eval(ctx, `window.stackboneCall.status`, &status)
//
// It speaks the protocol directly over one WebSocket rather than through a
// generated client: the tests need four methods, and the generated
// protocol packages take minutes to compile on a small machine.
package cdp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/stackbone/box/internal/netns"
)

// ErrNoBrowser: no Chromium binary was found.
var ErrNoBrowser = errors.New("cdp: no chromium binary")

// Options start a browser.
type Options struct {
	// Path of the browser (default: chromium, else chromium-browser, on PATH).
	Path string
	// UserDataDir is a fresh profile directory. Required.
	UserDataDir string
	// FakeAudio is a WAV file the fake microphone plays once.
	FakeAudio string
	// Logf receives the page's console and exceptions (t.Logf).
	Logf func(format string, args ...any)
	// NetNS runs the browser inside this network namespace (a machine of
	// its own on a private link); nil: this one.
	NetNS *netns.NS
}

// Browser is one running browser with one page.
type Browser struct {
	cmd  *exec.Cmd
	http *http.Client // reaches the DevTools port, inside NetNS if set
	conn *websocket.Conn
	logf func(string, ...any)
	next atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan reply
	done    chan struct{}
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Find returns the browser binary, or ErrNoBrowser.
func Find(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Start launches a headless browser and attaches to its page.
func Start(ctx context.Context, opt Options) (*Browser, error) {
	path, err := Find(opt.Path)
	if err != nil {
		return nil, err
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-dev-shm-usage", "--mute-audio", "--autoplay-policy=no-user-gesture-required",
		"--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
		// WebRTC as the browser ships it: no loopback candidates, host
		// addresses hidden behind mDNS names where the page has no
		// permission; no flag here may make a call connect that a
		// person's browser would not.
		"--user-data-dir=" + opt.UserDataDir, "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
	}
	if opt.FakeAudio != "" {
		args = append(args, "--use-file-for-fake-audio-capture="+opt.FakeAudio+"%noloop")
	}
	args = append(args, "about:blank")
	argv := append([]string{path}, args...)
	hc := &http.Client{}
	if opt.NetNS != nil {
		argv = opt.NetNS.Exec(argv...)
		hc.Transport = &http.Transport{DialContext: opt.NetNS.Dial}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cdp: start %s: %w", path, err)
	}
	b := &Browser{cmd: cmd, http: hc, logf: opt.Logf, pending: map[int64]chan reply{}, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			// Headless Chromium complains about D-Bus and ALSA on a server;
			// only fatal errors matter.
			if line := sc.Text(); strings.Contains(line, "FATAL") {
				opt.Logf("chromium: %s", line)
			}
		}
	}()
	if err := b.attach(ctx, opt.UserDataDir); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// attach waits for the DevTools port and connects to the first page.
func (b *Browser) attach(ctx context.Context, dir string) error {
	var port string
	for port == "" {
		if raw, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if p, _, ok := strings.Cut(string(raw), "\n"); ok && p != "" {
				port = p
				break
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cdp: the browser did not open its DevTools port: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	var wsURL string
	for wsURL == "" {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+port+"/json/list", nil)
		if resp, err := b.http.Do(req); err == nil {
			var targets []struct {
				Type string `json:"type"`
				URL  string `json:"webSocketDebuggerUrl"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, t := range targets {
				if t.Type == "page" {
					wsURL = t.URL
					break
				}
			}
		}
		if wsURL != "" {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cdp: no page target: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: b.http})
	if err != nil {
		return fmt.Errorf("cdp: connect: %w", err)
	}
	conn.SetReadLimit(64 << 20)
	b.conn = conn
	go b.readLoop()
	if _, err := b.Call(ctx, "Runtime.enable", nil); err != nil {
		return err
	}
	_, err = b.Call(ctx, "Page.enable", nil)
	return err
}

func (b *Browser) readLoop() {
	defer close(b.done)
	for {
		_, data, err := b.conn.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				ch <- reply{Error: &struct {
					Message string `json:"message"`
				}{Message: "connection closed: " + err.Error()}}
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var msg struct {
			ID     int64           `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			reply
		}
		if json.Unmarshal(data, &msg) != nil {
			continue
		}
		if msg.ID != 0 {
			b.mu.Lock()
			ch := b.pending[msg.ID]
			delete(b.pending, msg.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- msg.reply
			}
			continue
		}
		b.event(msg.Method, msg.Params)
	}
}

// event logs the page's console and uncaught exceptions.
func (b *Browser) event(method string, params json.RawMessage) {
	switch method {
	case "Runtime.consoleAPICalled":
		var ev struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		if json.Unmarshal(params, &ev) == nil {
			parts := make([]string, 0, len(ev.Args))
			for _, a := range ev.Args {
				if a.Value != nil {
					parts = append(parts, fmt.Sprint(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			b.logf("page console.%s: %s", ev.Type, strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		b.logf("page exception: %s", params)
	}
}

// Call sends one protocol command and returns its result.
func (b *Browser) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := b.next.Add(1)
	ch := make(chan reply, 1)
	b.mu.Lock()
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, fmt.Errorf("cdp: %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("cdp: %s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return nil, fmt.Errorf("cdp: %s: %w", method, ctx.Err())
	}
}

// Navigate opens url and waits until the document loaded.
func (b *Browser) Navigate(ctx context.Context, url string) error {
	if _, err := b.Call(ctx, "Page.navigate", map[string]any{"url": url}); err != nil {
		return err
	}
	for {
		var st string
		var href string
		if err := b.Eval(ctx, `document.readyState`, &st); err == nil && st == "complete" {
			if err := b.Eval(ctx, `location.href`, &href); err == nil && (href == url || url == "about:blank" || strings.HasPrefix(href, url)) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cdp: navigate %s: %w", url, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Eval evaluates a JavaScript expression in the page, awaiting a promise,
// and decodes its JSON value into out (nil to discard).
func (b *Browser) Eval(ctx context.Context, expr string, out any) error {
	res, err := b.Call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("cdp: evaluate: %w", err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("cdp: %s: %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// Close ends the browser and every process it started.
func (b *Browser) Close() {
	if b.conn != nil {
		_ = b.conn.Close(websocket.StatusNormalClosure, "")
	}
	if b.cmd.Process != nil {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		_ = b.cmd.Wait()
	}
}

// SetFiles puts files (paths on this machine) in the file input that
// selector names, as a person choosing them would; the page sees a change
// event.
func (b *Browser) SetFiles(ctx context.Context, selector string, paths ...string) error {
	res, err := b.Call(ctx, "DOM.getDocument", map[string]any{"depth": 0})
	if err != nil {
		return err
	}
	var doc struct {
		Root struct {
			NodeID int64 `json:"nodeId"`
		} `json:"root"`
	}
	if err := json.Unmarshal(res, &doc); err != nil {
		return fmt.Errorf("cdp: document: %w", err)
	}
	res, err = b.Call(ctx, "DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": selector})
	if err != nil {
		return err
	}
	var node struct {
		NodeID int64 `json:"nodeId"`
	}
	if err := json.Unmarshal(res, &node); err != nil || node.NodeID == 0 {
		return fmt.Errorf("cdp: no element %s", selector)
	}
	_, err = b.Call(ctx, "DOM.setFileInputFiles", map[string]any{"nodeId": node.NodeID, "files": paths})
	return err
}

// Screenshot captures the page as a PNG at width x height CSS pixels.
func (b *Browser) Screenshot(ctx context.Context, width, height int) ([]byte, error) {
	if _, err := b.Call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		return nil, err
	}
	res, err := b.Call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return nil, err
	}
	var shot struct {
		Data []byte `json:"data"` // base64 in JSON, decoded by encoding/json
	}
	if err := json.Unmarshal(res, &shot); err != nil {
		return nil, fmt.Errorf("cdp: screenshot: %w", err)
	}
	return shot.Data, nil
}
