package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
)

var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// mcpServer is one declared kind mcp server of one agent: its session and
// the tools it offers, listed at connect and again when the server says
// its list changed.
type mcpServer struct {
	svc   *Service
	agent string
	decl  config.AgentTool
	token string

	mu         sync.Mutex
	session    *mcp.ClientSession
	tools      []*mcp.Tool // allowed ones, in the server's order
	down       string      // why the server is not usable, when session is nil
	lastTry    time.Time
	connecting bool
	closed     bool
}

func newMCPServer(agentName string, decl config.AgentTool, s *Service) (*mcpServer, error) {
	m := &mcpServer{svc: s, agent: agentName, decl: decl, down: "not connected yet"}
	if decl.TokenEnv != "" {
		m.token = s.cfg.Getenv(decl.TokenEnv)
		if m.token == "" {
			return nil, fmt.Errorf("%w: tokenEnv %s is not set", ErrConfig, decl.TokenEnv)
		}
	}
	return m, nil
}

func (m *mcpServer) where() string {
	if m.decl.URL != "" {
		return m.decl.URL
	}
	return m.decl.Command[0]
}

// connect opens a session and lists the tools, within the tool's timeout.
func (m *mcpServer) connect(ctx context.Context) {
	m.mu.Lock()
	if m.closed || m.connecting {
		m.mu.Unlock()
		return
	}
	m.connecting, m.lastTry = true, time.Now()
	m.mu.Unlock()
	session, tools, err := m.open(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.connecting = false
	if err != nil {
		m.down = err.Error()
		m.svc.log.Warn("mcp server is down; its tools are left out", "agent", m.agent, "server", m.decl.Name, "reason", m.down)
		return
	}
	if m.closed {
		_ = session.Close()
		return
	}
	m.session, m.tools, m.down = session, tools, ""
	m.svc.log.Info("mcp server connected", "agent", m.agent, "server", m.decl.Name, "tools", len(tools))
	go func() {
		// A session ends when the server exits or its stream breaks: the
		// tools are left out until a reconnect.
		_ = session.Wait()
		m.lost(session, "the server closed the connection")
	}()
}

func (m *mcpServer) open(ctx context.Context) (*mcp.ClientSession, []*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, m.decl.ToolTimeout())
	defer cancel()
	var transport mcp.Transport
	if m.decl.URL != "" {
		rt := m.svc.cfg.Transport
		if m.token != "" {
			rt = bearer{token: m.token, next: rt}
		}
		transport = &mcp.StreamableClientTransport{Endpoint: m.decl.URL, HTTPClient: &http.Client{Transport: rt}, MaxRetries: 1}
	} else {
		// The server outlives this context: the session's Close stops it.
		cmd := exec.Command(m.decl.Command[0], m.decl.Command[1:]...)
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "stackbone", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			go m.refresh(req.Session)
		},
	})
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot connect to the mcp server at %s: %s", m.where(), short(err))
	}
	tools, err := m.list(ctx, session)
	if err != nil {
		_ = session.Close()
		return nil, nil, err
	}
	return session, tools, nil
}

// list is the server's tools the allow-list lets through.
func (m *mcpServer) list(ctx context.Context, session *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("cannot list the tools of the mcp server at %s: %s", m.where(), short(err))
		}
		if len(m.decl.Allow) > 0 && !slices.Contains(m.decl.Allow, tool.Name) {
			continue
		}
		name := m.decl.Name + config.MCPSeparator + tool.Name
		if !toolNameRe.MatchString(name) {
			m.svc.log.Warn("mcp tool left out: its prefixed name is not a valid tool name", "agent", m.agent, "server", m.decl.Name, "length", len(name))
			continue
		}
		out = append(out, tool)
	}
	return out, nil
}

// refresh lists the tools again after the server said its list changed.
func (m *mcpServer) refresh(session *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), m.decl.ToolTimeout())
	defer cancel()
	tools, err := m.list(ctx, session)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.session != session {
		return
	}
	if err != nil {
		m.svc.log.Warn("mcp tool list refresh failed; keeping the last list", "agent", m.agent, "server", m.decl.Name, "error", err)
		return
	}
	m.tools = tools
	m.svc.log.Info("mcp tool list refreshed", "agent", m.agent, "server", m.decl.Name, "tools", len(tools))
}

// lost marks a session gone, if it is still the current one.
func (m *mcpServer) lost(session *mcp.ClientSession, why string) {
	m.mu.Lock()
	if m.session != session {
		m.mu.Unlock()
		return
	}
	m.session, m.tools, m.down = nil, nil, why
	m.mu.Unlock()
	_ = session.Close()
	m.svc.log.Warn("mcp server lost; its tools are left out until it is back", "agent", m.agent, "server", m.decl.Name, "reason", why)
}

func (m *mcpServer) close() error {
	m.mu.Lock()
	m.closed = true
	s := m.session
	m.session = nil
	m.mu.Unlock()
	if s != nil {
		return s.Close()
	}
	return nil
}

// serverTools are the server's tools for one turn; a server that is down
// is one unavailable entry, and a reconnect is started in the background
// (turns do not wait for it).
func (m *mcpServer) serverTools(agentFiller string) []agent.ServerTool {
	m.mu.Lock()
	session, tools, down := m.session, m.tools, m.down
	retry := session == nil && !m.connecting && !m.closed && time.Since(m.lastTry) >= m.svc.cfg.RetryEvery
	m.mu.Unlock()
	if session == nil {
		if retry {
			go m.connect(context.Background())
		}
		return []agent.ServerTool{{Def: agent.Tool{Name: m.decl.Name}, Unavailable: "mcp server " + m.decl.Name + ": " + down}}
	}
	filler := fillerOf(m.decl, agentFiller)
	out := make([]agent.ServerTool, 0, len(tools))
	for _, tool := range tools {
		params, err := json.Marshal(tool.InputSchema)
		if err != nil || string(params) == "null" {
			params = nil
		}
		remote := tool.Name
		out = append(out, agent.ServerTool{
			Def:    agent.Tool{Name: m.decl.Name + config.MCPSeparator + remote, Description: clip(tool.Description, 1024), Parameters: params},
			Filler: filler,
			Run: func(ctx context.Context, call agent.ToolCall, _ agent.Scope) (string, error) {
				return m.call(ctx, session, remote, call.Arguments)
			},
		})
	}
	return out
}

// call runs one tool on the session the turn was offered it with.
func (m *mcpServer) call(ctx context.Context, session *mcp.ClientSession, tool, arguments string) (string, error) {
	label := m.decl.Name + config.MCPSeparator + tool
	var args json.RawMessage
	if strings.TrimSpace(arguments) == "" {
		args = json.RawMessage(`{}`)
	} else if !json.Valid([]byte(arguments)) {
		return "", &agent.ToolError{Outcome: OutcomeBadArgs, Message: "error: the arguments of " + label + " must be a JSON object"}
	} else {
		args = json.RawMessage(arguments)
	}
	cctx, cancel := context.WithTimeout(ctx, m.decl.ToolTimeout())
	defer cancel()
	res, err := session.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil {
			return "", &agent.ToolError{Outcome: OutcomeTimeout, Message: fmt.Sprintf(
				"error: %s timed out after %s; tell the person you could not do this now", label, m.decl.ToolTimeout())}
		}
		if isConnectionError(session) {
			m.lost(session, "the server stopped answering during a call")
			return "", &agent.ToolError{Outcome: OutcomeUnavailable, Message: fmt.Sprintf(
				"error: the %s tool server stopped answering; %s cannot be used now, tell the person you could not do this", m.decl.Name, label)}
		}
		return "", &agent.ToolError{Outcome: OutcomeToolError, Message: "error: " + label + " failed: " + clip(short(err), 300)}
	}
	text := resultText(res)
	maxBytes := m.decl.MaxResponseBytes
	if maxBytes == 0 {
		maxBytes = config.DefaultMaxResponseBytes
	}
	if len(text) > maxBytes {
		cut := text[:maxBytes]
		for len(cut) > 0 && !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		text = cut + fmt.Sprintf("\n[truncated: the result is longer than %d bytes and only its first %d bytes are shown]", maxBytes, len(cut))
	}
	if res.IsError {
		return "", &agent.ToolError{Outcome: OutcomeToolError, Message: "error: " + label + " failed: " + text}
	}
	return text, nil
}

// isConnectionError reports whether the session is gone (the server died
// or its stream broke), as opposed to the tool answering an error.
func isConnectionError(session *mcp.ClientSession) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return session.Ping(ctx, nil) != nil
}

// resultText is what the model sees of a tool result: its text contents,
// else its structured content as JSON; other contents are named, not shown.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[an image ("+c.MIMEType+") is not shown]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio ("+c.MIMEType+") is not shown]")
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else {
				parts = append(parts, "[a resource is not shown]")
			}
		case *mcp.ResourceLink:
			parts = append(parts, "[resource "+c.URI+"]")
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	return strings.Join(parts, "\n")
}

// short is an error's text on one line, bounded: errors of the SDK can
// quote a server's answer, never a secret of ours (the token is a header).
func short(err error) string {
	return clip(strings.ReplaceAll(err.Error(), "\n", " "), 300)
}

// bearer adds an MCP server's token to its requests.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
