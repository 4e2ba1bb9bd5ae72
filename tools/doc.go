// Package tools gives agents the tools they declare beside retrieval: kind
// http (one HTTP endpoint called with the model's arguments) and kind mcp
// (the tools of a Model Context Protocol server, over streamable HTTP or a
// stdio command, through the official Go SDK). Both are agent.ServerTools:
// every transport's turns offer and run them alike, calls say a filler
// phrase while they run long, and run history keeps their names, durations
// and outcomes, never their arguments or results.
//
// Secrets (header values written as ${NAME}, an mcp server's tokenEnv) are
// read from the environment once, at New; they are sent to the tool's own
// host only and never logged, recorded or shown to the model.
//
//	svc, err := tools.New(tools.Config{Agents: cfg.Agents, Logger: log})
//	svc.Start(ctx)        // lists each MCP server's tools
//	defer svc.Close()
//	rt := agent.New(agent.Config{..., Tools: agent.Sources(svc.Tools(), ...)})
package tools
