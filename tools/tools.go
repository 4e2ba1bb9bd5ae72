package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
)

// ErrConfig: a tool's declaration needs something the environment lacks
// (a ${NAME} variable that is not set).
var ErrConfig = errors.New("tools: configuration")

// Config wires a Service.
type Config struct {
	// Agents are the declared agents; their http and mcp tools are served.
	Agents map[string]config.Agent
	// Getenv reads secrets (${NAME}, tokenEnv). Defaults to os.Getenv.
	Getenv func(string) string
	// Logger receives tool names, outcomes and timings, never arguments,
	// results or secrets. Defaults to slog.Default().
	Logger *slog.Logger
	// Transport carries http tools' requests and MCP servers' streamable
	// HTTP (nil: a pooled transport of the package's own).
	Transport http.RoundTripper
	// RetryEvery is how often an MCP server that is down is tried again, in
	// the background (default 5s); turns meanwhile leave its tools out.
	RetryEvery time.Duration
}

// Service serves the http and mcp tools of every agent. It is safe for
// concurrent use.
type Service struct {
	cfg  Config
	log  *slog.Logger
	http map[string][]*httpTool  // by agent
	mcp  map[string][]*mcpServer // by agent
	all  []*mcpServer
	once sync.Once
}

// New reads the declarations and their secrets. Errors: ErrConfig when a
// secret's environment variable is not set.
func New(cfg Config) (*Service, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetryEvery == 0 {
		cfg.RetryEvery = 5 * time.Second
	}
	if cfg.Transport == nil {
		cfg.Transport = &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 5 * time.Second,
		}
	}
	s := &Service{cfg: cfg, log: cfg.Logger.With("component", "tools"), http: map[string][]*httpTool{}, mcp: map[string][]*mcpServer{}}
	names := (&config.Config{Agents: cfg.Agents}).AgentNames()
	for _, name := range names {
		for _, decl := range cfg.Agents[name].Tools {
			switch decl.Kind {
			case config.ToolKindHTTP:
				h, err := newHTTPTool(decl, cfg.Getenv, cfg.Transport)
				if err != nil {
					return nil, fmt.Errorf("agent %s: tool %s: %w", name, decl.Name, err)
				}
				s.http[name] = append(s.http[name], h)
			case config.ToolKindMCP:
				m, err := newMCPServer(name, decl, s)
				if err != nil {
					return nil, fmt.Errorf("agent %s: tool %s: %w", name, decl.Name, err)
				}
				s.mcp[name] = append(s.mcp[name], m)
				s.all = append(s.all, m)
			}
		}
	}
	return s, nil
}

// Start connects to every MCP server and lists its tools, each with at
// most its timeout; a server that is down is logged and tried again in the
// background. It never fails: a tool server does not stop the box.
func (s *Service) Start(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range s.all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.connect(ctx)
		}()
	}
	wg.Wait()
}

// Close ends every MCP session (stopping stdio servers).
func (s *Service) Close() error {
	var errs []error
	for _, m := range s.all {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

// Tools is the agent.ToolSource of the http and mcp tools: an MCP server
// that is down gives one entry with Unavailable set (left out of the turn,
// recorded in its run).
func (s *Service) Tools() agent.ToolSource {
	return func(ctx context.Context, name string) ([]agent.ServerTool, error) {
		return s.List(ctx, name), nil
	}
}

// List is the agent's http and mcp tools as a turn would be offered them,
// in declaration order.
func (s *Service) List(_ context.Context, agentName string) []agent.ServerTool {
	filler := ""
	if v := s.cfg.Agents[agentName].Voice; v != nil {
		filler = v.Filler
	}
	var out []agent.ServerTool
	for _, h := range s.http[agentName] {
		out = append(out, h.serverTool(filler))
	}
	for _, m := range s.mcp[agentName] {
		out = append(out, m.serverTools(filler)...)
	}
	return out
}

// HasAgent reports whether the agent is declared.
func (s *Service) HasAgent(name string) bool {
	_, ok := s.cfg.Agents[name]
	return ok
}

func fillerOf(decl config.AgentTool, agentFiller string) string {
	if decl.Filler != "" {
		return decl.Filler
	}
	return agentFiller
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
