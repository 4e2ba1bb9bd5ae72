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
//
// An agent's provider chains (model, and a call's speech-to-text and
// text-to-speech) and its turn-taking (VAD, endpointing, interruptions)
// can be overridden in Studio: ChainSettings keeps the overrides, and the
// runtime's Agent is the agent with the settings in force, which every
// turn and every call that opens uses:
//
//	chains := agent.NewChainSettings(agent.ChainSettingsConfig{Pool: pool, Agents: cfg.Agents, Providers: registry.Configured()})
//	rt := agent.New(agent.Config{Pool: pool, Agents: cfg.Agents, Chains: chains, ...})
//	chains.Put(ctx, "key:ops", "support", agent.ChainsPatch{Model: []string{"backup/gpt-4o-mini"}})
//	mode := config.EndpointingSilence
//	chains.PutTurnTaking(ctx, "key:ops", "support", agent.TurnOverrides{EndpointingMode: &mode})
package agent
