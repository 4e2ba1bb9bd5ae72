// Package stores is learned memory and curated memory stores (seed 002):
// knowledge an agent keeps across sessions as short text documents at
// paths such as /releases/versioning.md, each with a one-line summary.
//
// Every agent has one learned store (origin "reflection"), written only by
// learning runs; curated stores (origin "curated") are written through the
// API, scoped to one agent or to the whole workspace, and attached to an
// agent's sessions by its memoryStores in the configuration. Sessions never
// get store contents in the prompt: Tools offers list_memories,
// search_memories and read_memory (and create/update/delete_memory for
// read_write attachments), describing each store by name and description,
// and only when they can help: a curated store is attached, the learned
// store holds memories, or the agent's storeTools asks. After Subscribe,
// each agent's tools are cached until migration 019's trigger notifies a
// change (topic "stores").
//
// Every create, update, rename, delete, restore, merge and retirement
// writes an immutable version with who wrote it; versions can be listed,
// read, restored (recreating a deleted memory) and redacted (content
// removed for good; never a memory's current version). Writes to one store
// are serialized by a lock on its row, so counts, bytes and revision stay
// exact and content_sha256 compare-and-swap is reliable.
//
// Learning: a periodic tick finds sessions that finished (idle for
// IdleAfter, not running or held) and enqueues a report job per session;
// the memory model writes a short report, most saying nothing was learned.
// When ReportsPerRun useful reports wait (or one has waited Schedule), a
// learning job asks the memory model for a small set of add, refine, merge
// and retire changes, validated all or nothing, and applies them as
// versions with a rationale and evidence session ids, in one transaction
// with its reflection row and its run in run history. A failed run moves
// the agent to "delayed" and retries at next_retry_at.
//
// Wiring, once, in cmd/stackbone:
//
//	svc := stores.New(stores.Config{Pool: pool, Agents: cfg.Agents, Models: registry, Logger: log})
//	if err := svc.Sync(ctx); err != nil { ... }           // learned stores of declared agents
//	svc.Register(apiServer)                               // the /api routes
//	svc.Subscribe(listener)                               // cache the tools, dropped by NOTIFY
//	if err := svc.AddWorkers(reg); err != nil { ... }     // before jobs.NewClient(pool, reg, log)
//	client.PeriodicJobs().AddMany(svc.PeriodicJobs())     // tick and retention
//	rt := agent.New(agent.Config{..., Tools: agent.Sources(svc.Tools(), ...)})
package stores
