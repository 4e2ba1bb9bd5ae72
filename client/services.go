package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/stores"
	"github.com/stackbone/box/voice"
)

// MemoryService is person memory: facts and call records per agent and
// person.
type MemoryService struct{ c *Client }

// Message is a chat message of a transcript.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// MemoryAdd is the rest of an add: who the memory is for, the call record
// and extraction policy.
type MemoryAdd struct {
	AgentID      string      `json:"agentId"`
	UserID       string      `json:"userId"`
	Call         *CallRecord `json:"call,omitempty"`
	Instructions string      `json:"instructions,omitempty"`
	// IdempotencyKey is sent as Idempotency-Key: a retried add with the
	// same key returns the first result. Default: a new key per Add.
	IdempotencyKey string `json:"-"`
}

// CallRecord is the call metadata of an add.
type CallRecord struct {
	StartedAt       string   `json:"startedAt,omitempty"`
	DurationSeconds *float64 `json:"durationSeconds,omitempty"`
	Outcome         string   `json:"outcome,omitempty"`
	RunID           string   `json:"runId,omitempty"`
}

// Add updates the person's facts from content (a transcript string or
// []Message) and stores one call record. Errors (errors.Is):
// ErrMemoryInvalidRequest, ErrAgentNotFound, ErrMemoryModelFailed,
// ErrMemoryInvalidModelOutput, ErrMemoryConflict, ErrMemoryUnavailable.
func (s *MemoryService) Add(ctx context.Context, content any, req MemoryAdd) (memory.AddResult, error) {
	var out memory.AddResult
	key := req.IdempotencyKey
	if key == "" {
		key = newKey()
	}
	body := struct {
		Content any `json:"content"`
		MemoryAdd
	}{content, req}
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory/add", body: body, header: http.Header{"Idempotency-Key": {key}}}, &out)
	return out, err
}

// Recall returns every fact of the person and their newest calls first
// (calls: nil for the default 5, else 0 to 100).
func (s *MemoryService) Recall(ctx context.Context, agentID, userID string, calls *int) (memory.RecallResult, error) {
	var out memory.RecallResult
	body := map[string]any{"agentId": agentID, "userId": userID}
	if calls != nil {
		body["calls"] = *calls
	}
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory/recall", body: body}, &out)
	return out, err
}

// DeleteAll deletes every fact and call record of one person for one agent
// and returns how many rows went.
func (s *MemoryService) DeleteAll(ctx context.Context, agentID, userID string) (int64, error) {
	var out struct{ Deleted int64 }
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory/delete-all", body: map[string]string{"agentId": agentID, "userId": userID}}, &out)
	return out.Deleted, err
}

// Settings reads an agent's memory settings.
func (s *MemoryService) Settings(ctx context.Context, agentID string) (memory.View, error) {
	var out memory.View
	err := s.c.do(ctx, request{method: "GET", path: "/api/memory/settings/" + seg(agentID)}, &out)
	return out, err
}

// SettingsPatch are the fields to save; nil fields stay unchanged.
type SettingsPatch struct {
	Read         *bool   `json:"read,omitempty"`
	Save         *bool   `json:"save,omitempty"`
	Instructions *string `json:"instructions,omitempty"`
	IdentityKey  *string `json:"identityKey,omitempty"`
}

// UpdateSettings saves fields of an agent's memory settings.
func (s *MemoryService) UpdateSettings(ctx context.Context, agentID string, p SettingsPatch) (memory.View, error) {
	var out memory.View
	err := s.c.do(ctx, request{method: "PUT", path: "/api/memory/settings/" + seg(agentID), body: p}, &out)
	return out, err
}

// ResetSettings removes one override (field read, save or instructions),
// or all of them when field is "".
func (s *MemoryService) ResetSettings(ctx context.Context, agentID, field string) (memory.View, error) {
	var out memory.View
	q := url.Values{}
	if field != "" {
		q.Set("field", field)
	}
	err := s.c.do(ctx, request{method: "DELETE", path: "/api/memory/settings/" + seg(agentID), query: q}, &out)
	return out, err
}

// RAGService is retrieval: collections of chunked, embedded documents.
type RAGService struct{ c *Client }

// Retrieve returns the chunks of one collection closest to req.Text.
func (s *RAGService) Retrieve(ctx context.Context, req rag.RetrieveRequest) ([]rag.Hit, error) {
	var out []rag.Hit
	err := s.c.do(ctx, request{method: "POST", path: "/api/rag/retrieve", body: req}, &out)
	return out, err
}

// Ingest stores a document's chunks; the same id replaces them.
func (s *RAGService) Ingest(ctx context.Context, req rag.IngestRequest) (rag.Document, error) {
	var out rag.Document
	err := s.c.do(ctx, request{method: "POST", path: "/api/rag/ingest", body: req}, &out)
	return out, err
}

// CreateCollection creates a collection.
func (s *RAGService) CreateCollection(ctx context.Context, req rag.CreateCollection) (rag.Collection, error) {
	var out rag.Collection
	err := s.c.do(ctx, request{method: "POST", path: "/api/rag/collections", body: req}, &out)
	return out, err
}

// Collections lists every collection.
func (s *RAGService) Collections(ctx context.Context) ([]rag.Collection, error) {
	var out []rag.Collection
	err := s.c.do(ctx, request{method: "GET", path: "/api/rag/collections"}, &out)
	return out, err
}

// Documents lists a collection's documents.
func (s *RAGService) Documents(ctx context.Context, collection string) ([]rag.Document, error) {
	var out []rag.Document
	err := s.c.do(ctx, request{method: "GET", path: "/api/rag/collections/" + seg(collection) + "/documents"}, &out)
	return out, err
}

// Document reads one document.
func (s *RAGService) Document(ctx context.Context, id string) (rag.Document, error) {
	var out rag.Document
	err := s.c.do(ctx, request{method: "GET", path: "/api/rag/documents/" + seg(id)}, &out)
	return out, err
}

// DeleteDocument deletes a document and its chunks.
func (s *RAGService) DeleteDocument(ctx context.Context, id string) error {
	return s.c.do(ctx, request{method: "DELETE", path: "/api/rag/documents/" + seg(id)}, nil)
}

// StoresService is curated memory stores.
type StoresService struct{ c *Client }

// Create makes a curated store.
func (s *StoresService) Create(ctx context.Context, name, description string) (stores.Store, error) {
	var out stores.Store
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory_stores", body: map[string]string{"name": name, "description": description}}, &out)
	return out, err
}

// List yields every store the filter admits (q: agent_id, origin, status,
// include_archived, limit), page by page.
func (s *StoresService) List(ctx context.Context, q url.Values) iter.Seq2[stores.Store, error] {
	return func(yield func(stores.Store, error) bool) {
		q := cloneValues(q)
		for {
			var page stores.StorePage
			if err := s.c.do(ctx, request{method: "GET", path: "/api/memory_stores", query: q}, &page); err != nil {
				yield(stores.Store{}, err)
				return
			}
			for _, st := range page.Stores {
				if !yield(st, nil) {
					return
				}
			}
			if page.NextCursor == nil || *page.NextCursor == "" {
				return
			}
			q.Set("cursor", *page.NextCursor)
		}
	}
}

// Get reads one store.
func (s *StoresService) Get(ctx context.Context, storeID string) (stores.Store, error) {
	var out stores.Store
	err := s.c.do(ctx, request{method: "GET", path: "/api/memory_stores/" + seg(storeID)}, &out)
	return out, err
}

// CreateMemory adds a memory at a path that holds none.
func (s *StoresService) CreateMemory(ctx context.Context, storeID, path, summary, content string) (stores.Memory, error) {
	var out stores.Memory
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory_stores/" + seg(storeID) + "/memories",
		body: map[string]string{"path": path, "summary": summary, "content": content}}, &out)
	return out, err
}

// Memory reads a memory by id.
func (s *StoresService) Memory(ctx context.Context, storeID, memoryID string) (stores.Memory, error) {
	var out stores.Memory
	err := s.c.do(ctx, request{method: "GET", path: "/api/memory_stores/" + seg(storeID) + "/memories/" + seg(memoryID)}, &out)
	return out, err
}

// Delete deletes a curated store and its memories.
func (s *StoresService) Delete(ctx context.Context, storeID string) error {
	return s.c.do(ctx, request{method: "DELETE", path: "/api/memory_stores/" + seg(storeID)}, nil)
}

// VoiceService is phone and browser calls.
type VoiceService struct{ c *Client }

// CallQuery narrows Calls; zero fields do not filter.
type CallQuery struct {
	Direction, Agent, Status, Outcome, Number string
	// Limit is the page size (1 to 200, default 50).
	Limit int
}

// Calls yields every call the query admits, newest first, page by page.
func (s *VoiceService) Calls(ctx context.Context, q CallQuery) iter.Seq2[voice.CallRecord, error] {
	v := url.Values{}
	for k, x := range map[string]string{"direction": q.Direction, "agent": q.Agent, "status": q.Status, "outcome": q.Outcome, "number": q.Number} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return byBefore(ctx, s.c, "/api/voice/calls", v, func(c voice.CallRecord) string { return c.ID })
}

// Call reads one call with its heard transcript (ErrCallNotFound).
func (s *VoiceService) Call(ctx context.Context, id string) (voice.CallRecord, error) {
	var out voice.CallRecord
	err := s.c.do(ctx, request{method: "GET", path: "/api/voice/calls/" + seg(id)}, &out)
	return out, err
}

// Dial places an outbound phone call and returns its id while it rings.
func (s *VoiceService) Dial(ctx context.Context, agentName, to, trunk string, identities map[string]string) (string, error) {
	body := map[string]any{"agent": agentName, "to": to}
	if trunk != "" {
		body["trunk"] = trunk
	}
	if identities != nil {
		body["identities"] = identities
	}
	var out struct{ CallID string }
	err := s.c.do(ctx, request{method: "POST", path: "/api/voice/calls", body: body}, &out)
	return out.CallID, err
}

// Hangup ends a ringing or running call from outside (ErrCallNotFound,
// ErrCallEnded).
func (s *VoiceService) Hangup(ctx context.Context, id string) error {
	return s.c.do(ctx, request{method: "POST", path: "/api/voice/calls/" + seg(id) + "/hangup"}, nil)
}

// CreateRoom opens a browser test call for an agent.
func (s *VoiceService) CreateRoom(ctx context.Context, agentName string, identities map[string]string) (rooms.View, error) {
	body := map[string]any{"agent": agentName}
	if identities != nil {
		body["identities"] = identities
	}
	var out rooms.View
	err := s.c.do(ctx, request{method: "POST", path: "/api/voice/rooms", body: body}, &out)
	return out, err
}

// Room reads one browser call (ErrRoomNotFound).
func (s *VoiceService) Room(ctx context.Context, id string) (rooms.View, error) {
	var out rooms.View
	err := s.c.do(ctx, request{method: "GET", path: "/api/voice/rooms/" + seg(id)}, &out)
	return out, err
}

// EndRoom ends a browser call.
func (s *VoiceService) EndRoom(ctx context.Context, id string) error {
	return s.c.do(ctx, request{method: "DELETE", path: "/api/voice/rooms/" + seg(id)}, nil)
}

// SessionsService is the conversations the box keeps.
type SessionsService struct{ c *Client }

// List yields every session (of agent, when not ""), newest activity
// first, page by page.
func (s *SessionsService) List(ctx context.Context, agentName string, limit int) iter.Seq2[agent.SessionSummary, error] {
	v := url.Values{}
	if agentName != "" {
		v.Set("agent", agentName)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	return byBefore(ctx, s.c, "/api/sessions", v, func(x agent.SessionSummary) string { return x.ID })
}

// Get reads a session with its transcript (ErrSessionNotFound).
func (s *SessionsService) Get(ctx context.Context, id string) (agent.SessionDetail, error) {
	var out agent.SessionDetail
	err := s.c.do(ctx, request{method: "GET", path: "/api/sessions/" + seg(id)}, &out)
	return out, err
}

// Decide approves ("approve") or rejects ("reject") the held tool call
// (ErrNoDecisionPending).
func (s *SessionsService) Decide(ctx context.Context, id, decision, reason string) error {
	body := map[string]string{"decision": decision}
	if reason != "" {
		body["reason"] = reason
	}
	return s.c.do(ctx, request{method: "POST", path: "/api/sessions/" + seg(id) + "/decision", body: body}, nil)
}

// RunsService is run history.
type RunsService struct{ c *Client }

// List yields every run (of agent, when not ""), newest first, page by page.
func (s *RunsService) List(ctx context.Context, agentName string, limit int) iter.Seq2[runs.Run, error] {
	v := url.Values{}
	if agentName != "" {
		v.Set("agent", agentName)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	return byBefore(ctx, s.c, "/api/runs", v, func(r runs.Run) string { return r.ID.String() })
}

// Get reads one run (ErrNotFound).
func (s *RunsService) Get(ctx context.Context, id string) (runs.Run, error) {
	var out runs.Run
	err := s.c.do(ctx, request{method: "GET", path: "/api/runs/" + seg(id)}, &out)
	return out, err
}

// KeysService is the box's API keys.
type KeysService struct{ c *Client }

// Self is the key making the request.
type Self struct {
	Name        string            `json:"name"`
	Scopes      []string          `json:"scopes"`
	Identities  map[string]string `json:"identities"`
	AnyIdentity bool              `json:"anyIdentity"`
}

// Self tells which key the client uses and what it may do.
func (s *KeysService) Self(ctx context.Context) (Self, error) {
	var out Self
	err := s.c.do(ctx, request{method: "GET", path: "/api/keys/self"}, &out)
	return out, err
}

// List lists every key (never a secret).
func (s *KeysService) List(ctx context.Context) ([]auth.Key, error) {
	var out []auth.Key
	err := s.c.do(ctx, request{method: "GET", path: "/api/keys"}, &out)
	return out, err
}

// Create makes a key trusted to name any person and returns its secret,
// shown only here (ErrKeyExists).
func (s *KeysService) Create(ctx context.Context, name string, scopes []string) (auth.Key, string, error) {
	var out struct {
		Key    auth.Key `json:"key"`
		Secret string   `json:"secret"`
	}
	err := s.c.do(ctx, request{method: "POST", path: "/api/keys", body: map[string]any{"name": name, "scopes": scopes, "anyIdentity": true}}, &out)
	return out.Key, out.Secret, err
}

// Revoke revokes a key (ErrKeyNotFound).
func (s *KeysService) Revoke(ctx context.Context, name string) error {
	return s.c.do(ctx, request{method: "DELETE", path: "/api/keys/" + seg(name)}, nil)
}

// byBefore pages a list keyed on before (the last id of the previous page).
func byBefore[T any](ctx context.Context, c *Client, path string, q url.Values, id func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := cloneValues(q)
		for {
			var page []T
			if err := c.do(ctx, request{method: "GET", path: path, query: q}, &page); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, x := range page {
				if !yield(x, nil) {
					return
				}
			}
			if len(page) == 0 {
				return
			}
			q.Set("before", id(page[len(page)-1]))
		}
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, x := range v {
		out[k] = append([]string(nil), x...)
	}
	return out
}

// Update renames or redescribes a store; "" leaves a field as it is.
func (s *StoresService) Update(ctx context.Context, storeID, name, description string) (stores.Store, error) {
	body := map[string]string{}
	if name != "" {
		body["name"] = name
	}
	if description != "" {
		body["description"] = description
	}
	var out stores.Store
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory_stores/" + seg(storeID), body: body}, &out)
	return out, err
}

// Archive makes a curated store read-only.
func (s *StoresService) Archive(ctx context.Context, storeID string) error {
	return s.c.do(ctx, request{method: "POST", path: "/api/memory_stores/" + seg(storeID) + "/archive"}, nil)
}

// Memories lists one level of a store under prefix (whole path segments).
func (s *StoresService) Memories(ctx context.Context, storeID, prefix string) (stores.Listing, error) {
	var out stores.Listing
	q := url.Values{}
	if prefix != "" {
		q.Set("path_prefix", prefix)
	}
	err := s.c.do(ctx, request{method: "GET", path: "/api/memory_stores/" + seg(storeID) + "/memories", query: q}, &out)
	return out, err
}

// MemoryUpdate changes a memory; empty fields stay. ContentSHA256, when
// set, refuses the change if the memory changed since it was read
// (ErrContentSHA256Mismatch).
type MemoryUpdate struct {
	Path          string `json:"path,omitempty"`
	Summary       string `json:"summary,omitempty"`
	Content       string `json:"content,omitempty"`
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// UpdateMemory changes a memory and returns it with its new version.
func (s *StoresService) UpdateMemory(ctx context.Context, storeID, memoryID string, u MemoryUpdate) (stores.Memory, error) {
	var out stores.Memory
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory_stores/" + seg(storeID) + "/memories/" + seg(memoryID), body: u}, &out)
	return out, err
}

// DeleteMemory removes a memory from every read path.
func (s *StoresService) DeleteMemory(ctx context.Context, storeID, memoryID string) error {
	return s.c.do(ctx, request{method: "DELETE", path: "/api/memory_stores/" + seg(storeID) + "/memories/" + seg(memoryID)}, nil)
}

// Versions yields a store's history (of one memory when memoryID is not
// ""), newest first, page by page.
func (s *StoresService) Versions(ctx context.Context, storeID, memoryID string) iter.Seq2[stores.Version, error] {
	return func(yield func(stores.Version, error) bool) {
		q := url.Values{}
		if memoryID != "" {
			q.Set("memory_id", memoryID)
		}
		for {
			var page stores.VersionPage
			if err := s.c.do(ctx, request{method: "GET", path: "/api/memory_stores/" + seg(storeID) + "/memory_versions", query: q}, &page); err != nil {
				yield(stores.Version{}, err)
				return
			}
			for _, v := range page.Versions {
				if !yield(v, nil) {
					return
				}
			}
			if page.NextCursor == nil || *page.NextCursor == "" {
				return
			}
			q.Set("cursor", *page.NextCursor)
		}
	}
}

// Restore writes a version's content back as a new version.
func (s *StoresService) Restore(ctx context.Context, storeID, versionID string) (stores.Memory, error) {
	var out stores.Memory
	err := s.c.do(ctx, request{method: "POST", path: "/api/memory_stores/" + seg(storeID) + "/memory_versions/" + seg(versionID) + "/restore"}, &out)
	return out, err
}

// Redact removes a version's content for good.
func (s *StoresService) Redact(ctx context.Context, storeID, versionID string) error {
	return s.c.do(ctx, request{method: "POST", path: "/api/memory_stores/" + seg(storeID) + "/memory_versions/" + seg(versionID) + "/redact"}, nil)
}

// Jobs lists background ingest jobs (of a collection, when not "").
func (s *RAGService) Jobs(ctx context.Context, collection string) ([]rag.Job, error) {
	var out []rag.Job
	q := url.Values{}
	if collection != "" {
		q.Set("collection", collection)
	}
	err := s.c.do(ctx, request{method: "GET", path: "/api/rag/jobs", query: q}, &out)
	return out, err
}

// Job reads one ingest job.
func (s *RAGService) Job(ctx context.Context, id int64) (rag.Job, error) {
	var out rag.Job
	err := s.c.do(ctx, request{method: "GET", path: "/api/rag/jobs/" + strconv.FormatInt(id, 10)}, &out)
	return out, err
}

// Rooms lists the browser calls this box carries.
func (s *VoiceService) Rooms(ctx context.Context) ([]rooms.View, error) {
	var out []rooms.View
	err := s.c.do(ctx, request{method: "GET", path: "/api/voice/rooms"}, &out)
	return out, err
}
