package stores

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
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
	srv.Route("GET /api/memory_stores/{store}", r, s.inStore(s.hGetStore))
	srv.Route("POST /api/memory_stores/{store}", w, s.inStore(s.hUpdateStore))
	srv.Route("PATCH /api/memory_stores/{store}", w, s.inStore(s.hUpdateStore))
	srv.Route("POST /api/memory_stores/{store}/archive", w, s.inStore(s.hArchiveStore))
	srv.Route("DELETE /api/memory_stores/{store}", w, s.inStore(s.hDeleteStore))

	srv.Route("POST /api/memory_stores/{store}/memories", w, s.inStore(s.hCreateMemory))
	srv.Route("GET /api/memory_stores/{store}/memories", r, s.inStore(s.hListMemories))
	srv.Route("GET /api/memory_stores/{store}/memories/search", r, s.inStore(s.hSearchMemories))
	srv.Route("GET /api/memory_stores/{store}/memory", r, s.inStore(s.hGetMemoryByPath))
	srv.Route("GET /api/memory_stores/{store}/memories/{memory}", r, s.inStore(s.hGetMemory))
	srv.Route("POST /api/memory_stores/{store}/memories/{memory}", w, s.inStore(s.hUpdateMemory))
	srv.Route("DELETE /api/memory_stores/{store}/memories/{memory}", w, s.inStore(s.hDeleteMemory))

	srv.Route("GET /api/memory_stores/{store}/memory_versions", r, s.inStore(s.hListVersions))
	srv.Route("GET /api/memory_stores/{store}/memory_versions/{version}", r, s.inStore(s.hGetVersion))
	srv.Route("POST /api/memory_stores/{store}/memory_versions/{version}/restore", w, s.inStore(s.hRestore))
	srv.Route("POST /api/memory_stores/{store}/memory_versions/{version}/redact", w, s.inStore(s.hRedact))

	srv.Route("GET /api/agents/{agent}/memory", r, s.hAgentMemory)
	srv.Route("GET /api/agents/{agent}/memories", r, s.hAgentMemories)
	srv.Route("GET /api/agents/{agent}/memory/activity", r, s.hAgentActivity)
	srv.Route("GET /api/agents/{agent}/learning", r, s.hGetLearning)
	srv.Route("PATCH /api/agents/{agent}/learning", w, s.hSetLearning)
	srv.Route("GET /api/agent_memory_summaries", r, s.hSummaries)
	srv.Route("GET /api/reflections", r, s.hListReflections)
	srv.Route("GET /api/reflections/{reflection}", r, s.hGetReflection)
}

// inStore adapts a handler of one store: the {store} path value (an id or
// a slug) is resolved before h runs.
func (s *Service) inStore(h func(w http.ResponseWriter, r *http.Request, store uuid.UUID) error) api.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := s.ResolveStore(r.Context(), r.PathValue("store"))
		if err != nil {
			return err
		}
		return h(w, r, id)
	}
}

// badBody reports a body that does not decode as an invalid request.
func badBody(err error) error { return fault.Recode(ErrInvalidRequest, err) }

func pathID(r *http.Request, name, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue(name))
	if err != nil {
		return uuid.Nil, notFound("no " + what + " " + clip(r.PathValue(name), 64))
	}
	return id, nil
}

func queryLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, invalid("limit", "must be 1 to 100")
	}
	return n, nil
}

func actorAuthor(r *http.Request) Author { return Author{Kind: AuthorAPI, ID: api.Actor(r)} }

func (s *Service) hCreateStore(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
		AgentID     *string `json:"agent_id"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		return badBody(err)
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
		return err
	}
	api.WriteData(w, http.StatusCreated, st)
	return nil
}

func (s *Service) hListStores(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	inc := q.Get("include_archived")
	if inc != "" && inc != "true" && inc != "false" {
		return invalid("include_archived", "must be true or false")
	}
	page, err := s.ListStores(r.Context(), StoreFilter{AgentID: q.Get("agent_id"), Origin: q.Get("origin"), Status: q.Get("status"),
		IncludeArchived: inc == "true", Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, page)
	return nil
}

func (s *Service) hGetStore(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	st, err := s.GetStore(r.Context(), id)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, st)
	return nil
}

func (s *Service) hUpdateStore(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	var b struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		return badBody(err)
	}
	st, err := s.UpdateStore(r.Context(), id, UpdateStore{Name: b.Name, Description: b.Description})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, st)
	return nil
}

func (s *Service) hArchiveStore(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	if err := s.ArchiveStore(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) hDeleteStore(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	if err := s.DeleteStore(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) hCreateMemory(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	var b struct {
		Path    *string `json:"path"`
		Summary *string `json:"summary"`
		Content *string `json:"content"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		return badBody(err)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"path", b.Path}, {"summary", b.Summary}, {"content", b.Content}} {
		if f.v == nil {
			return invalid(f.name, "is required")
		}
	}
	m, err := s.CreateMemory(r.Context(), id, CreateMemory{Path: *b.Path, Summary: *b.Summary, Content: *b.Content}, actorAuthor(r))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusCreated, m)
	return nil
}

func (s *Service) hListMemories(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	l, err := s.ListMemories(r.Context(), id, q.Get("path_prefix"), ListOptions{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, l)
	return nil
}

func (s *Service) hSearchMemories(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	res, err := s.SearchMemories(r.Context(), id, q.Get("query"), SearchOptions{PathPrefix: q.Get("path_prefix"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, res)
	return nil
}

func (s *Service) hGetMemoryByPath(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	m, err := s.GetMemoryByPath(r.Context(), id, r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, m)
	return nil
}

func (s *Service) hGetMemory(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	mid, err := pathID(r, "memory", "memory")
	if err != nil {
		return err
	}
	m, err := s.GetMemory(r.Context(), id, mid)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, m)
	return nil
}

func (s *Service) hUpdateMemory(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	mid, err := pathID(r, "memory", "memory")
	if err != nil {
		return err
	}
	var b struct {
		Path          *string `json:"path"`
		Summary       *string `json:"summary"`
		Content       *string `json:"content"`
		ContentSHA256 *string `json:"content_sha256"`
	}
	if err := api.Decode(w, r, bodyLimit, &b); err != nil {
		return badBody(err)
	}
	m, err := s.UpdateMemory(r.Context(), id, mid, UpdateMemory{Path: b.Path, Summary: b.Summary, Content: b.Content, ContentSHA256: b.ContentSHA256}, actorAuthor(r))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, m)
	return nil
}

func (s *Service) hDeleteMemory(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	mid, err := pathID(r, "memory", "memory")
	if err != nil {
		return err
	}
	if err := s.DeleteMemory(r.Context(), id, mid, actorAuthor(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) hListVersions(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := VersionFilter{Limit: limit, Cursor: q.Get("cursor")}
	if v := q.Get("memory_id"); v != "" {
		mid, err := uuid.Parse(v)
		if err != nil {
			return notFound("no memory " + clip(v, 64))
		}
		f.MemoryID = &mid
	}
	page, err := s.ListVersions(r.Context(), id, f)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, page)
	return nil
}

func (s *Service) hGetVersion(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	vid, err := pathID(r, "version", "memory version")
	if err != nil {
		return err
	}
	v, err := s.GetVersion(r.Context(), id, vid)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (s *Service) hRestore(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	vid, err := pathID(r, "version", "memory version")
	if err != nil {
		return err
	}
	m, err := s.RestoreVersion(r.Context(), id, vid, actorAuthor(r))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, m)
	return nil
}

func (s *Service) hRedact(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	vid, err := pathID(r, "version", "memory version")
	if err != nil {
		return err
	}
	if err := s.RedactVersion(r.Context(), id, vid, api.Actor(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) hAgentMemory(w http.ResponseWriter, r *http.Request) error {
	am, err := s.GetAgentMemory(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, am)
	return nil
}

func (s *Service) hAgentMemories(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	out, err := s.ListAgentMemories(r.Context(), r.PathValue("agent"), AgentMemoryFilter{Query: q.Get("query"), Topic: q.Get("topic"),
		Sort: q.Get("sort"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, out)
	return nil
}

func (s *Service) hAgentActivity(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	agentName := r.PathValue("agent")
	if !s.agentExists(agentName) {
		return notFound("no agent " + clip(agentName, 64))
	}
	q := r.URL.Query()
	page, err := s.ListReflections(r.Context(), ReflectionFilter{AgentID: agentName, Status: q.Get("status"),
		TriggeredBy: q.Get("triggered_by"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, page)
	return nil
}

func (s *Service) hGetLearning(w http.ResponseWriter, r *http.Request) error {
	l, err := s.GetLearning(r.Context(), r.PathValue("agent"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, l)
	return nil
}

func (s *Service) hSetLearning(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		MemoryModelRef json.RawMessage `json:"memory_model_ref"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return badBody(err)
	}
	if b.MemoryModelRef == nil {
		return invalid("memory_model_ref", "is required: a provider/model id, or null to use the agent's model")
	}
	var ref *string
	if err := json.Unmarshal(b.MemoryModelRef, &ref); err != nil {
		return invalid("memory_model_ref", "must be a provider/model id string or null")
	}
	l, err := s.SetMemoryModel(r.Context(), r.PathValue("agent"), ref)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, l)
	return nil
}

func (s *Service) hSummaries(w http.ResponseWriter, r *http.Request) error {
	list, err := s.ListAgentMemorySummaries(r.Context())
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, map[string]any{"agents": list})
	return nil
}

func (s *Service) hListReflections(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.ListReflections(r.Context(), ReflectionFilter{AgentID: q.Get("agent_id"), Status: q.Get("status"),
		TriggeredBy: q.Get("triggered_by"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, page)
	return nil
}

func (s *Service) hGetReflection(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "reflection", "reflection")
	if err != nil {
		return err
	}
	ref, err := s.GetReflection(r.Context(), id)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, ref)
	return nil
}
