// Package agent is the conversation core every transport uses: the agent's
// instructions, its model through the provider, server-side tools with a
// tool loop (person-memory tools among them; retrieval, memory stores,
// HTTP and MCP tools come from ToolSources), a per-agent limit of tool
// calls per turn, run history of each tool call's name, duration and
// outcome (never arguments or results), held tools that park a turn
// until a person decides, streaming of text and tool events, usage
// accounting, run history, and sessions checkpointed in Postgres.
//
// A wire turns its protocol into a TurnRequest and the events back:
//
//	res, err := rt.Turn(ctx, agent.TurnRequest{Agent: "support", Messages: msgs, SessionKey: key},
//		func(ev agent.Event) error { return writeChunk(ev) })
package agent
