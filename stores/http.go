package stores

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
)

// bodyLimit bounds a request body: 100 KiB of content can grow to six
// times that when every byte is escaped in JSON.
const bodyLimit = 1 << 20

// Register adds the memory store routes to the API server: the
// specification's REST paths with /api in place of /managed-agents/v1.
// Reads need stores:read, writes stores:write.
func (s *Service) Register(srv *api.Server) {
	r, w := auth.ScopeStoresRead, auth.ScopeStoresWrite
	srv.Route("POST /api/memory_stores", w, s.hCreateStore)
	srv.Route("GET /api/memory_stores", r, s.hListStores)
	srv.Route("GET /api/memory_stores/{store}", r, s.hGetStore)
	srv.Route("POST /api/memory_stores/{store}", w, s.hUpdateStore)
	srv.Route("PATCH /api/memory_stores/{store}", w, s.hUpdateStore)
	srv.Route("POST /api/memory_stores/{store}/archive", w, s.hArchiveStore)
	srv.Route("DELETE /api/memory_stores/{store}", w, s.hDeleteStore)

	srv.Route("POST /api/memory_stores/{store}/memories", w, s.hCreateMemory)
	srv.Route("GET /api/memory_stores/{store}/memories", r, s.hListMemories)
	srv.Route("GET /api/memory_stores/{store}/memories/search", r, s.hSearchMemories)
	srv.Route("GET /api/memory_stores/{store}/memory", r, s.hGetMemoryByPath)
	srv.Route("GET /api/memory_stores/{store}/memories/{memory}", r, s.hGetMemory)
	srv.Route("POST /api/memory_stores/{store}/memories/{memory}", w, s.hUpdateMemory)
	srv.Route("DELETE /api/memory_stores/{store}/memories/{memory}", w, s.hDeleteMemory)

	srv.Route("GET /api/memory_stores/{store}/memory_versions", r, s.hListVersions)
	srv.Route("GET /api/memory_stores/{store}/memory_versions/{version}", r, s.hGetVersion)
	srv.Route("POST /api/memory_stores/{store}/memory_versions/{version}/restore", w, s.hRestore)
	srv.Route("POST /api/memory_stores/{store}/memory_versions/{version}/redact", w, s.hRedact)

	srv.Route("GET /api/agents/{agent}/memory", r, s.hAgentMemory)
	srv.Route("GET /api/agents/{agent}/memories", r, s.hAgentMemories)
	srv.Route("GET /api/agents/{agent}/memory/activity", r, s.hAgentActivity)
	srv.Route("GET /api/agents/{agent}/learning", r, s.hGetLearning)
	srv.Route("PATCH /api/agents/{agent}/learning", w, s.hSetLearning)
	srv.Route("GET /api/agent_memory_summaries", r, s.hSummaries)
	srv.Route("GET /api/reflections", r, s.hListReflections)
	srv.Route("GET /api/reflections/{reflection}", r, s.hGetReflection)
}

// httpErrors is the one table from this package's errors to statuses.
var httpErrors = []struct {
	err    error
	status int
}{
	{ErrInvalidRequest, http.StatusBadRequest},
	{ErrNotFound, http.StatusNotFound},
	{ErrHashMismatch, http.StatusConflict},
	{ErrPathExists, http.StatusConflict},
	{ErrVersionCurrent, http.StatusConflict},
	{ErrStoreFull, http.StatusConflict},
	{ErrUnavailable, http.StatusServiceUnavailable},
}

func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error) {
	for _, e := range httpErrors {
		if errors.Is(err, e.err) {
			msg := strings.TrimPrefix(err.Error(), "stores: ")
			if e.status >= 500 {
				s.log.Warn("request failed", "route", r.Pattern, "code", Code(err), "error", err)
				msg = "the memory store database is unavailable; retry"
			}
			api.WriteError(w, e.status, Code(err), msg)
			return
		}
	}
	s.log.Error("internal error", "route", r.Pattern, "error", err)
	api.WriteError(w, http.StatusInternalServerError, "internal", "internal error")
}

func badRequest(w http.ResponseWriter, msg string) {
	api.WriteError(w, http.StatusBadRequest, "invalid_request", msg)
}

// store resolves the {store} path value (an id or a slug).
func (s *Service) store(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := s.ResolveStore(r.Context(), r.PathValue("store"))
	if err != nil {
		s.fail(w, r, err)
		return uuid.Nil, false
	}
	return id, true
}

func pathID(w http.ResponseWriter, r *http.Request, name, what string) (uuid.UUID, bool) {
	id, err := uuid.Parse(r.PathValue(name))
	if err != nil {
		api.WriteError(w, http.StatusNotFound, "not_found", "no "+what+" "+clip(r.PathValue(name), 64))
		return uuid.Nil, false
	}
	return id, true
}

func queryLimit(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		badRequest(w, "limit: must be 1 to 100")
		return 0, false
	}
	return n, true
}

func actorAuthor(r *http.Request) Author { return Author{Kind: AuthorAPI, ID: api.Actor(r)} }

func (s *Service) hCreateStore(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
		AgentID     *string `json:"agent_id"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		badRequest(w, err.Error())
		return
	}
	in := CreateStore{AgentID: b.AgentID}
	if b.Name != nil {
		in.Name = *b.Name
	}
	if b.Description != nil {
		in.Description = *b.Description
	}
	st, err := s.CreateStore(r.Context(), in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusCreated, st)
}

func (s *Service) hListStores(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	inc := q.Get("include_archived")
	if inc != "" && inc != "true" && inc != "false" {
		badRequest(w, "include_archived: must be true or false")
		return
	}
	page, err := s.ListStores(r.Context(), StoreFilter{AgentID: q.Get("agent_id"), Origin: q.Get("origin"), Status: q.Get("status"),
		IncludeArchived: inc == "true", Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, page)
}

func (s *Service) hGetStore(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	st, err := s.GetStore(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, st)
}

func (s *Service) hUpdateStore(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	var b struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		badRequest(w, err.Error())
		return
	}
	st, err := s.UpdateStore(r.Context(), id, UpdateStore{Name: b.Name, Description: b.Description})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, st)
}

func (s *Service) hArchiveStore(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	if err := s.ArchiveStore(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) hDeleteStore(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	if err := s.DeleteStore(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) hCreateMemory(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	var b struct {
		Path    *string `json:"path"`
		Summary *string `json:"summary"`
		Content *string `json:"content"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		badRequest(w, err.Error())
		return
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"path", b.Path}, {"summary", b.Summary}, {"content", b.Content}} {
		if f.v == nil {
			s.fail(w, r, invalid(f.name, "is required"))
			return
		}
	}
	m, err := s.CreateMemory(r.Context(), id, CreateMemory{Path: *b.Path, Summary: *b.Summary, Content: *b.Content}, actorAuthor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusCreated, m)
}

func (s *Service) hListMemories(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	l, err := s.ListMemories(r.Context(), id, q.Get("path_prefix"), ListOptions{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, l)
}

func (s *Service) hSearchMemories(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	res, err := s.SearchMemories(r.Context(), id, q.Get("query"), SearchOptions{PathPrefix: q.Get("path_prefix"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, res)
}

func (s *Service) hGetMemoryByPath(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	m, err := s.GetMemoryByPath(r.Context(), id, r.URL.Query().Get("path"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, m)
}

func (s *Service) hGetMemory(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	mid, ok := pathID(w, r, "memory", "memory")
	if !ok {
		return
	}
	m, err := s.GetMemory(r.Context(), id, mid)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, m)
}

func (s *Service) hUpdateMemory(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	mid, ok := pathID(w, r, "memory", "memory")
	if !ok {
		return
	}
	var b struct {
		Path          *string `json:"path"`
		Summary       *string `json:"summary"`
		Content       *string `json:"content"`
		ContentSHA256 *string `json:"content_sha256"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		badRequest(w, err.Error())
		return
	}
	m, err := s.UpdateMemory(r.Context(), id, mid, UpdateMemory{Path: b.Path, Summary: b.Summary, Content: b.Content, ContentSHA256: b.ContentSHA256}, actorAuthor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, m)
}

func (s *Service) hDeleteMemory(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	mid, ok := pathID(w, r, "memory", "memory")
	if !ok {
		return
	}
	if err := s.DeleteMemory(r.Context(), id, mid, actorAuthor(r)); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) hListVersions(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := VersionFilter{Limit: limit, Cursor: q.Get("cursor")}
	if v := q.Get("memory_id"); v != "" {
		mid, err := uuid.Parse(v)
		if err != nil {
			api.WriteError(w, http.StatusNotFound, "not_found", "no memory "+clip(v, 64))
			return
		}
		f.MemoryID = &mid
	}
	page, err := s.ListVersions(r.Context(), id, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, page)
}

func (s *Service) hGetVersion(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	vid, ok := pathID(w, r, "version", "memory version")
	if !ok {
		return
	}
	v, err := s.GetVersion(r.Context(), id, vid)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, v)
}

func (s *Service) hRestore(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	vid, ok := pathID(w, r, "version", "memory version")
	if !ok {
		return
	}
	m, err := s.RestoreVersion(r.Context(), id, vid, actorAuthor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, m)
}

func (s *Service) hRedact(w http.ResponseWriter, r *http.Request) {
	id, ok := s.store(w, r)
	if !ok {
		return
	}
	vid, ok := pathID(w, r, "version", "memory version")
	if !ok {
		return
	}
	if err := s.RedactVersion(r.Context(), id, vid, api.Actor(r)); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) hAgentMemory(w http.ResponseWriter, r *http.Request) {
	am, err := s.GetAgentMemory(r.Context(), r.PathValue("agent"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, am)
}

func (s *Service) hAgentMemories(w http.ResponseWriter, r *http.Request) {
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	out, err := s.ListAgentMemories(r.Context(), r.PathValue("agent"), AgentMemoryFilter{Query: q.Get("query"), Topic: q.Get("topic"),
		Sort: q.Get("sort"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, out)
}

func (s *Service) hAgentActivity(w http.ResponseWriter, r *http.Request) {
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	agentName := r.PathValue("agent")
	if !s.agentExists(agentName) {
		s.fail(w, r, notFound("no agent "+clip(agentName, 64)))
		return
	}
	q := r.URL.Query()
	page, err := s.ListReflections(r.Context(), ReflectionFilter{AgentID: agentName, Status: q.Get("status"),
		TriggeredBy: q.Get("triggered_by"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, page)
}

func (s *Service) hGetLearning(w http.ResponseWriter, r *http.Request) {
	l, err := s.GetLearning(r.Context(), r.PathValue("agent"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, l)
}

func (s *Service) hSetLearning(w http.ResponseWriter, r *http.Request) {
	var b struct {
		MemoryModelRef json.RawMessage `json:"memory_model_ref"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		badRequest(w, err.Error())
		return
	}
	if b.MemoryModelRef == nil {
		s.fail(w, r, invalid("memory_model_ref", "is required: a provider/model id, or null to use the agent's model"))
		return
	}
	var ref *string
	if err := json.Unmarshal(b.MemoryModelRef, &ref); err != nil {
		s.fail(w, r, invalid("memory_model_ref", "must be a provider/model id string or null"))
		return
	}
	l, err := s.SetMemoryModel(r.Context(), r.PathValue("agent"), ref)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, l)
}

func (s *Service) hSummaries(w http.ResponseWriter, r *http.Request) {
	list, err := s.ListAgentMemorySummaries(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, map[string]any{"agents": list})
}

func (s *Service) hListReflections(w http.ResponseWriter, r *http.Request) {
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	page, err := s.ListReflections(r.Context(), ReflectionFilter{AgentID: q.Get("agent_id"), Status: q.Get("status"),
		TriggeredBy: q.Get("triggered_by"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, page)
}

func (s *Service) hGetReflection(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "reflection", "reflection")
	if !ok {
		return
	}
	ref, err := s.GetReflection(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, ref)
}
