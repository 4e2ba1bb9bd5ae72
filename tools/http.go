package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
)

// Outcomes of http and mcp tool calls in run history.
const (
	OutcomeTimeout     = "timeout"
	OutcomeUnreachable = "unreachable"
	OutcomeBadArgs     = "invalid_arguments"
	OutcomeToolError   = "tool_error"
	OutcomeUnavailable = "unavailable"
)

// httpTool is one declared kind http tool, its secrets resolved.
type httpTool struct {
	decl     config.AgentTool
	method   string
	header   http.Header
	params   json.RawMessage
	inURL    map[string]bool
	timeout  time.Duration
	maxBytes int
	client   *http.Client
}

func newHTTPTool(decl config.AgentTool, getenv func(string) string, rt http.RoundTripper) (*httpTool, error) {
	h := &httpTool{decl: decl, method: decl.Method, header: http.Header{}, inURL: map[string]bool{},
		timeout: decl.ToolTimeout(), maxBytes: decl.MaxResponseBytes,
		// Redirects are not followed: a tool talks to the host its
		// declaration names, and its headers go nowhere else.
		client: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if h.method == "" {
		h.method = http.MethodGet
	}
	if h.maxBytes == 0 {
		h.maxBytes = config.DefaultMaxResponseBytes
	}
	params := decl.Parameters
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%w: parameters: %v", ErrConfig, err)
	}
	h.params = b
	for _, m := range config.PlaceholderRe.FindAllStringSubmatch(decl.URL, -1) {
		h.inURL[m[1]] = true
	}
	for name, v := range decl.Headers {
		var missing []string
		val := config.EnvRefRe.ReplaceAllStringFunc(v, func(ref string) string {
			n := config.EnvRefRe.FindStringSubmatch(ref)[1]
			x := getenv(n)
			if x == "" {
				missing = append(missing, n)
			}
			return x
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("%w: header %s needs the environment variable %s, which is not set", ErrConfig, name, strings.Join(missing, ", "))
		}
		if strings.ContainsAny(val, "\r\n") {
			return nil, fmt.Errorf("%w: header %s: its environment value has a line break", ErrConfig, name)
		}
		h.header.Set(name, val)
	}
	return h, nil
}

func (h *httpTool) serverTool(agentFiller string) agent.ServerTool {
	desc := h.decl.Description
	if desc == "" {
		desc = "Call the " + h.decl.Name + " service."
	}
	return agent.ServerTool{
		Def:    agent.Tool{Name: h.decl.Name, Description: desc, Parameters: h.params},
		Filler: fillerOf(h.decl, agentFiller),
		Run: func(ctx context.Context, call agent.ToolCall, _ agent.Scope) (string, error) {
			return h.call(ctx, call.Arguments)
		},
	}
}

// call sends one request. Failures the model can act on are
// *agent.ToolError; the turn's own cancellation is the context's error.
func (h *httpTool) call(ctx context.Context, arguments string) (string, error) {
	name := h.decl.Name
	args := map[string]any{}
	if strings.TrimSpace(arguments) != "" {
		dec := json.NewDecoder(strings.NewReader(arguments))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return "", &agent.ToolError{Outcome: OutcomeBadArgs, Message: "error: the arguments of " + name + " must be a JSON object matching its parameters"}
		}
	}
	target, err := h.buildURL(args)
	if err != nil {
		return "", &agent.ToolError{Outcome: OutcomeBadArgs, Message: "error: " + err.Error()}
	}
	var body io.Reader
	rest := map[string]any{}
	for k, v := range args {
		if !h.inURL[k] {
			rest[k] = v
		}
	}
	switch h.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		b, _ := json.Marshal(rest)
		body = bytes.NewReader(b)
	default:
		if len(rest) > 0 {
			q := target.Query()
			for _, k := range sortedKeys(rest) {
				q.Set(k, scalar(rest[k]))
			}
			target.RawQuery = q.Encode()
		}
	}
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, h.method, target.String(), body)
	if err != nil {
		return "", &agent.ToolError{Outcome: OutcomeBadArgs, Message: "error: the arguments do not make a valid request for " + name}
	}
	for k, v := range h.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return "", h.transportFailed(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(h.maxBytes)+1))
	if err != nil {
		return "", h.transportFailed(ctx, err)
	}
	truncated := len(data) > h.maxBytes
	if truncated {
		data = data[:h.maxBytes]
	}
	text := h.text(resp, data, truncated)
	if h.failed(resp.StatusCode) {
		msg := fmt.Sprintf("error: %s answered HTTP %d %s", name, resp.StatusCode, http.StatusText(resp.StatusCode))
		if text != "" {
			msg += ". Its response: " + text
		}
		return "", &agent.ToolError{Outcome: "http_" + strconv.Itoa(resp.StatusCode), Message: msg}
	}
	return text, nil
}

// transportFailed tells a timeout or an unreachable service from the
// turn's own end.
func (h *httpTool) transportFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &agent.ToolError{Outcome: OutcomeTimeout, Message: fmt.Sprintf(
			"error: %s timed out after %s (its service did not answer in time); tell the person you could not check this now", h.decl.Name, h.timeout)}
	}
	return &agent.ToolError{Outcome: OutcomeUnreachable, Message: fmt.Sprintf(
		"error: %s could not reach its service; tell the person you could not check this now", h.decl.Name)}
}

func (h *httpTool) failed(status int) bool {
	if len(h.decl.FailStatuses) > 0 {
		return slices.Contains(h.decl.FailStatuses, status)
	}
	return status >= 400
}

// text is the response as the model sees it: text as it came, cut at a
// whole character with the cut stated, or a note for a body that is not
// text.
func (h *httpTool) text(resp *http.Response, data []byte, truncated bool) string {
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); ct != "" && err == nil && !textual(mt) {
		return fmt.Sprintf("[the response is %s, which is not text, and is not shown]", mt)
	}
	for truncated && len(data) > 0 && !utf8.Valid(data) {
		data = data[:len(data)-1]
	}
	s := strings.ToValidUTF8(string(data), "\uFFFD")
	if truncated {
		s += fmt.Sprintf("\n[truncated: the response is longer than %d bytes and only its first %d bytes are shown]", h.maxBytes, len(data))
	}
	return s
}

func textual(mt string) bool {
	return strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") || strings.HasSuffix(mt, "+json") ||
		strings.HasSuffix(mt, "xml") || mt == "application/x-www-form-urlencoded" || mt == "application/javascript"
}

// buildURL fills the placeholders, each escaped for where it stands (path
// segment or query value), so an argument can never change the URL's
// shape, let alone its host.
func (h *httpTool) buildURL(args map[string]any) (*url.URL, error) {
	tmpl := h.decl.URL
	q := strings.IndexByte(tmpl, '?')
	var b strings.Builder
	last := 0
	for _, m := range config.PlaceholderRe.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(tmpl[last:m[0]])
		key := tmpl[m[2]:m[3]]
		v, ok := args[key]
		if !ok || v == nil {
			return nil, fmt.Errorf("the argument %s is required", key)
		}
		s := scalar(v)
		if s == "" {
			return nil, fmt.Errorf("the argument %s must not be empty", key)
		}
		if q >= 0 && m[0] > q {
			b.WriteString(url.QueryEscape(s))
		} else {
			if s == "." || s == ".." {
				return nil, fmt.Errorf("the argument %s must not be %q", key, s)
			}
			b.WriteString(url.PathEscape(s))
		}
		last = m[1]
	}
	b.WriteString(tmpl[last:])
	return url.Parse(b.String())
}

// scalar is an argument as URL text: strings as they are, anything else as
// its JSON.
func scalar(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
