package stores

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/postgres/notify"
)

// Names of the memory store tools.
const (
	ToolListMemories   = "list_memories"
	ToolSearchMemories = "search_memories"
	ToolReadMemory     = "read_memory"
	ToolCreateMemory   = "create_memory"
	ToolUpdateMemory   = "update_memory"
	ToolDeleteMemory   = "delete_memory"
)

// Attached is a store a session may use.
type Attached struct {
	Store        Store
	Access       string
	Instructions string
}

// Attachments resolves the stores a session of the agent uses: its learned
// memory (read only: learning runs write it) and the agent's configured
// memoryStores that are active, curated, and workspace or scoped to this
// agent, in configured order, at most MaxStoresPerSession in all. Stores
// left out are logged with the reason. Errors: ErrNotFound (an unknown
// agent), ErrUnavailable.
func (s *Service) Attachments(ctx context.Context, agentName string) ([]Attached, error) {
	learned, err := s.learnedStore(ctx, agentName)
	if err != nil {
		return nil, err
	}
	out := []Attached{{Store: learned, Access: config.AccessReadOnly}}
	want := s.cfg.Agents[agentName].MemoryStores
	if len(want) == 0 {
		return out, nil
	}
	refs := make([]string, len(want))
	for i, w := range want {
		refs[i] = w.MemoryStoreID
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+storeCols+` FROM stackbone_platform.memory_stores
		WHERE id::text = ANY($1) OR slug = ANY($1)`, refs)
	if err != nil {
		return nil, dbErr("resolve attachments", err)
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Store, error) { return scanStore(r) })
	if err != nil {
		return nil, dbErr("resolve attachments", err)
	}
	for _, w := range want {
		i := slices.IndexFunc(found, func(st Store) bool { return st.ID.String() == w.MemoryStoreID || st.Slug == w.MemoryStoreID })
		why := ""
		switch {
		case i < 0:
			why = "no such store"
		case found[i].Origin != OriginCurated:
			why = "not a curated store"
		case found[i].Status != StatusActive:
			why = "archived"
		case found[i].AgentID != nil && *found[i].AgentID != agentName:
			why = "scoped to another agent"
		case slices.ContainsFunc(out, func(a Attached) bool { return a.Store.ID == found[i].ID }):
			why = "attached twice"
		case len(out) >= MaxStoresPerSession:
			why = "past the per-session limit of 8 stores"
		}
		if why != "" {
			s.log.Warn("memory store not attached", "agent", agentName, "store", clip(w.MemoryStoreID, 100), "reason", why)
			continue
		}
		access := w.Access
		if access == "" {
			access = config.AccessReadOnly
		}
		out = append(out, Attached{Store: found[i], Access: access, Instructions: w.Instructions})
	}
	return out, nil
}

// Tools is the agent.ToolSource of memory stores: for each turn it offers
// list_memories, search_memories and read_memory over the stores the
// session uses, and create_memory, update_memory and delete_memory when
// one of them is read_write. The tools show each store's slug, name,
// description, access and instructions, never its contents: the model
// browses, searches and reads only what helps the task. They are offered
// only when they can help (a curated store is attached, the learned store
// holds memories, or the agent's storeTools asks for them), since their
// definitions cost input tokens on every request. A database failure fails
// the turn with agent.ErrMemory; a bad call answers the model with an
// error result. After Subscribe, each agent's tools are cached until a
// store changes.
func (s *Service) Tools() agent.ToolSource {
	return func(ctx context.Context, agentName string) ([]agent.ServerTool, error) {
		if !s.agentExists(agentName) {
			return nil, nil
		}
		gen, tools, ok := s.tools.get(agentName)
		if ok {
			return tools, nil
		}
		att, err := s.Attachments(ctx, agentName)
		if err != nil {
			return nil, fmt.Errorf("%w: memory stores: %v", agent.ErrMemory, err)
		}
		if len(att) > 1 || att[0].Store.MemoryCount > 0 || s.cfg.Agents[agentName].StoreTools {
			tools = s.toolsFor(att)
		}
		s.tools.put(gen, agentName, tools)
		return tools, nil
	}
}

// Subscribe caches each agent's tools from now on, dropped whenever a
// store changes: migration 019 notifies every box (topic "stores") of a
// change to what the tools show or to whether a store is empty, and the
// listener drops everything when it (re)connects; an entry is trusted for
// at most 30 s without a notification.
func (s *Service) Subscribe(l *notify.Listener) {
	s.tools.mu.Lock()
	s.tools.on = true
	s.tools.mu.Unlock()
	l.Subscribe("stores", func(string) { s.tools.invalidate() })
}

// toolCacheTTL bounds how long cached tools are trusted without a
// notification (a listener that lost its connection hears none until it
// reconnects).
const toolCacheTTL = 30 * time.Second

// toolCache holds each agent's store tools between changes.
type toolCache struct {
	mu     sync.Mutex
	on     bool
	gen    uint64 // bumped by each invalidation
	agents map[string]cachedTools
}

type cachedTools struct {
	tools []agent.ServerTool
	at    time.Time
}

// get returns the agent's cached tools, or the generation a fill must
// present to put.
func (c *toolCache) get(name string) (uint64, []agent.ServerTool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.agents[name]
	return c.gen, ct.tools, ok && c.on && time.Since(ct.at) < toolCacheTTL
}

// put caches tools read in generation gen, unless a change came since:
// what was read before it may be stale.
func (c *toolCache) put(gen uint64, name string, tools []agent.ServerTool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || gen != c.gen {
		return
	}
	if c.agents == nil {
		c.agents = map[string]cachedTools{}
	}
	c.agents[name] = cachedTools{tools: tools, at: time.Now()}
}

func (c *toolCache) invalidate() {
	c.mu.Lock()
	c.gen++
	clear(c.agents)
	c.mu.Unlock()
}

// storeTools builds the memory store tools of one session from the
// stores it uses.
type storeTools struct {
	s        *Service
	att      []Attached
	slugs    []string // every store, in attachment order
	writable []string // the read_write stores
}

func (s *Service) toolsFor(att []Attached) []agent.ServerTool {
	st := storeTools{s: s, att: att}
	for _, a := range att {
		st.slugs = append(st.slugs, a.Store.Slug)
		if a.Access == config.AccessReadWrite {
			st.writable = append(st.writable, a.Store.Slug)
		}
	}
	tools := []agent.ServerTool{st.list(), st.search(), st.read()}
	if len(st.writable) == 0 {
		return tools
	}
	return append(tools, st.create(), st.update(), st.remove())
}

// catalog describes the stores of the conversation (never their contents);
// it heads list_memories' description.
func (st storeTools) catalog() string {
	var b strings.Builder
	b.WriteString("Memory stores of this conversation (their contents are not in the prompt; browse, search and read them when it helps the task):\n")
	for _, a := range st.att {
		access := "read only"
		if a.Access == config.AccessReadWrite {
			access = "read and write"
		}
		fmt.Fprintf(&b, "- %s (%s, %s): %s", a.Store.Slug, a.Store.Name, access, oneLine(a.Store.Description))
		if a.Instructions != "" {
			fmt.Fprintf(&b, " Instructions: %s", oneLine(a.Instructions))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// target is the store a call names in "store"; needWrite asks for a
// read_write one.
func (st storeTools) target(args map[string]any, needWrite bool) (Attached, error) {
	slug := arg(args, "store")
	i := slices.IndexFunc(st.att, func(a Attached) bool { return a.Store.Slug == slug })
	if i < 0 {
		return Attached{}, invalid("store", "must be one of %s", strings.Join(st.slugs, ", "))
	}
	if needWrite && st.att[i].Access != config.AccessReadWrite {
		return Attached{}, invalid("store", "%s is read only in this conversation", slug)
	}
	return st.att[i], nil
}

func (st storeTools) list() agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: ToolListMemories, Parameters: toolSchema(map[string]any{
			"store":       storeProp(st.slugs, "The memory store to browse."),
			"path_prefix": strProp("The folder to list, such as / or /releases/. Defaults to /."),
			"cursor":      strProp("next_cursor of the previous page, for more entries."),
		}, "store"),
			Description: st.catalog() + "\nlist_memories lists one folder of a store like a directory: memories (path, summary, byte_size) and memory_prefix entries for the folders beneath, with how many memories each holds. Content is not included; read a memory with read_memory."},
		Run: runTool(func(ctx context.Context, args map[string]any, _ agent.Scope) (any, error) {
			a, err := st.target(args, false)
			if err != nil {
				return nil, err
			}
			l, err := st.s.ListMemories(ctx, a.Store.ID, arg(args, "path_prefix"), ListOptions{Cursor: arg(args, "cursor")})
			if err != nil {
				return nil, err
			}
			return map[string]any{"store": a.Store.Slug, "entries": l.Entries, "next_cursor": l.NextCursor}, nil
		}),
	}
}

func (st storeTools) search() agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: ToolSearchMemories, Parameters: toolSchema(map[string]any{
			"query":       strProp("Words to look for in the memories' content, summaries and paths."),
			"store":       storeProp(st.slugs, "Search one store; leave it out to search every store of this conversation."),
			"path_prefix": strProp("Only memories under this folder, such as /releases/."),
		}, "query"),
			Description: "Find memories by content in the memory stores of this conversation (listed in list_memories), best matches first: path, summary and size of each. Read one with read_memory."},
		Run: runTool(func(ctx context.Context, args map[string]any, _ agent.Scope) (any, error) {
			list := st.att
			if arg(args, "store") != "" {
				a, err := st.target(args, false)
				if err != nil {
					return nil, err
				}
				list = []Attached{a}
			}
			hits, err := st.searchIn(ctx, list, arg(args, "query"), arg(args, "path_prefix"))
			if err != nil {
				return nil, err
			}
			return map[string]any{"results": hits}, nil
		}),
	}
}

// toolHit is one search_memories result.
type toolHit struct {
	Store    string  `json:"store"`
	MemoryID string  `json:"memory_id"`
	Path     string  `json:"path"`
	Summary  string  `json:"summary"`
	ByteSize int     `json:"byte_size"`
	Rank     float32 `json:"-"`
}

// searchIn searches each store for the best ten of each, and keeps the
// best ten of all.
func (st storeTools) searchIn(ctx context.Context, list []Attached, query, prefix string) ([]toolHit, error) {
	hits := []toolHit{}
	for _, a := range list {
		res, err := st.s.SearchMemories(ctx, a.Store.ID, query, SearchOptions{PathPrefix: prefix, Limit: 10})
		if err != nil {
			return nil, err
		}
		for _, h := range res.Memories {
			hits = append(hits, toolHit{Store: a.Store.Slug, MemoryID: h.MemoryID.String(), Path: h.Path, Summary: h.Summary, ByteSize: h.ByteSize, Rank: h.Rank})
		}
	}
	slices.SortStableFunc(hits, func(x, y toolHit) int { return cmp.Compare(y.Rank, x.Rank) })
	if len(hits) > 10 {
		hits = hits[:10]
	}
	return hits, nil
}

func (st storeTools) read() agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: ToolReadMemory, Parameters: toolSchema(map[string]any{
			"store":     storeProp(st.slugs, "The memory store."),
			"path":      strProp("The memory's path, such as /releases/versioning.md."),
			"memory_id": strProp("The memory's id (from search_memories), instead of path."),
		}, "store"),
			Description: "Read one memory in full: its path, summary, content and content_sha256 (needed to update it)."},
		Run: runTool(func(ctx context.Context, args map[string]any, _ agent.Scope) (any, error) {
			a, m, err := st.named(ctx, args, false)
			if err != nil {
				return nil, err
			}
			return toolMemory(a, m, true), nil
		}),
	}
}

// named reads the memory a call names by store and memory_id or path.
func (st storeTools) named(ctx context.Context, args map[string]any, needWrite bool) (Attached, Memory, error) {
	a, err := st.target(args, needWrite)
	if err != nil {
		return Attached{}, Memory{}, err
	}
	m, err := st.s.readArg(ctx, a.Store.ID, args)
	return a, m, err
}

// writableProp is the "store" parameter of the writing tools.
func (st storeTools) writableProp() map[string]any {
	return storeProp(st.writable, "A memory store of this conversation you may write.")
}

func (st storeTools) create() agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: ToolCreateMemory, Parameters: toolSchema(map[string]any{
			"store": st.writableProp(), "path": strProp("A new path, such as /releases/tagging.md; an existing path is refused."),
			"summary": strProp("One line saying what the memory tells (at most 512 characters)."),
			"content": strProp("The memory's text (at most 100 KiB). One idea per memory."),
		}, "store", "path", "summary", "content"),
			Description: "Add a memory to a writable memory store. It never overwrites: use update_memory for an existing path."},
		Run: runTool(func(ctx context.Context, args map[string]any, scope agent.Scope) (any, error) {
			a, err := st.target(args, true)
			if err != nil {
				return nil, err
			}
			m, err := st.s.CreateMemory(ctx, a.Store.ID, CreateMemory{Path: arg(args, "path"), Summary: arg(args, "summary"), Content: arg(args, "content")}, sessionAuthor(scope))
			if err != nil {
				return nil, err
			}
			return toolMemory(a, m, false), nil
		}),
	}
}

func (st storeTools) update() agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: ToolUpdateMemory, Parameters: toolSchema(map[string]any{
			"store": st.writableProp(), "path": strProp("The memory's current path."), "memory_id": strProp("The memory's id, instead of path."),
			"content_sha256": strProp("The content_sha256 you read; the update is refused if the memory changed since."),
			"content":        strProp("New content (leave out to keep)."), "summary": strProp("New summary (leave out to keep)."),
			"new_path": strProp("A new path, to rename the memory."),
		}, "store", "content_sha256"),
			Description: "Change a memory of a writable store. Read it first: the update needs its content_sha256 and is refused if someone changed it since."},
		Run: runTool(func(ctx context.Context, args map[string]any, scope agent.Scope) (any, error) {
			a, m, err := st.named(ctx, args, true)
			if err != nil {
				return nil, err
			}
			in := UpdateMemory{ContentSHA256: optional(args, "content_sha256"), Content: optional(args, "content"),
				Summary: optional(args, "summary"), Path: optional(args, "new_path")}
			if in.ContentSHA256 == nil {
				return nil, invalid("content_sha256", "is required: read the memory first")
			}
			m, err = st.s.UpdateMemory(ctx, a.Store.ID, m.ID, in, sessionAuthor(scope))
			if err != nil {
				return nil, err
			}
			return toolMemory(a, m, false), nil
		}),
	}
}

func (st storeTools) remove() agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: ToolDeleteMemory, Parameters: toolSchema(map[string]any{
			"store": st.writableProp(), "path": strProp("The memory's path."), "memory_id": strProp("The memory's id, instead of path."),
		}, "store"),
			Description: "Delete a memory of a writable store. Its history is kept and people can restore it."},
		Run: runTool(func(ctx context.Context, args map[string]any, scope agent.Scope) (any, error) {
			a, m, err := st.named(ctx, args, true)
			if err != nil {
				return nil, err
			}
			if err := st.s.DeleteMemory(ctx, a.Store.ID, m.ID, sessionAuthor(scope)); err != nil {
				return nil, err
			}
			return map[string]any{"deleted": true, "path": m.Path}, nil
		}),
	}
}

// runTool adapts a tool's body to agent.ServerTool.Run: arguments are a
// JSON object, a store's own error is the model's error result, and an
// unavailable database fails the turn.
func runTool(fn func(ctx context.Context, args map[string]any, scope agent.Scope) (any, error)) func(context.Context, agent.ToolCall, agent.Scope) (string, error) {
	return func(ctx context.Context, call agent.ToolCall, scope agent.Scope) (string, error) {
		args := map[string]any{}
		if strings.TrimSpace(call.Arguments) != "" {
			if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
				return toolError(invalid("arguments", "must be a JSON object")), nil
			}
		}
		out, err := fn(ctx, args, scope)
		if errors.Is(err, ErrUnavailable) {
			return "", fmt.Errorf("%w: memory stores: %v", agent.ErrMemory, err)
		}
		if err != nil {
			return toolError(err), nil
		}
		b, err := json.Marshal(out)
		return string(b), err
	}
}

func toolSchema(props map[string]any, required ...string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	return b
}

func storeProp(list []string, desc string) map[string]any {
	return map[string]any{"type": "string", "enum": list, "description": desc}
}

func strProp(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

// arg is a string argument, empty when absent or not a string.
func arg(args map[string]any, k string) string { v, _ := args[k].(string); return v }

// readArg reads the memory a tool call names by memory_id or path.
func (s *Service) readArg(ctx context.Context, storeID uuid.UUID, args map[string]any) (Memory, error) {
	if v, _ := args["memory_id"].(string); v != "" {
		id, err := uuid.Parse(v)
		if err != nil {
			return Memory{}, notFound("no memory " + clip(v, 64))
		}
		return s.GetMemory(ctx, storeID, id)
	}
	p, _ := args["path"].(string)
	if p == "" {
		return Memory{}, invalid("path", "is required (or memory_id)")
	}
	return s.GetMemoryByPath(ctx, storeID, p)
}

func sessionAuthor(scope agent.Scope) Author {
	id := scope.SessionID
	if id == "" {
		id = "run:" + scope.RunID.String()
	}
	return Author{Kind: AuthorSession, ID: id}
}

func optional(args map[string]any, k string) *string {
	if v, ok := args[k].(string); ok {
		return &v
	}
	return nil
}

func toolMemory(a Attached, m Memory, content bool) map[string]any {
	out := map[string]any{"store": a.Store.Slug, "memory_id": m.ID, "path": m.Path, "summary": m.Summary,
		"content_sha256": m.ContentSHA256, "byte_size": m.ByteSize, "updated_at": m.UpdatedAt}
	if content {
		out["content"] = m.Content
	}
	return out
}

func toolError(err error) string {
	code := Code(err)
	if code == "" {
		code = "internal"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": strings.TrimPrefix(err.Error(), "stores: ")}})
	return string(b)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
