package runs

import (
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
)

// Register adds the run history routes to the API server (runs:read).
func (s *Store) Register(srv *api.Server) {
	srv.Route("GET /api/runs", auth.ScopeRunsRead, s.httpList)
	srv.Route("GET /api/runs/{id}", auth.ScopeRunsRead, s.httpGet)
}

func (s *Store) httpList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := api.QueryInt(r, "limit", 50, 1, 200)
	if err != nil {
		return err
	}
	f := Filter{Kind: q.Get("kind"), AgentID: q.Get("agent"), Status: q.Get("status"), Limit: limit}
	if b := q.Get("before"); b != "" {
		id, err := uuid.Parse(b)
		if err != nil {
			return fmt.Errorf("%w: before must be a run id", api.ErrInvalidRequest)
		}
		f.Before = id
	}
	list, err := s.List(r.Context(), f)
	if err != nil {
		return err
	}
	if list == nil {
		list = []Run{}
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

func (s *Store) httpGet(w http.ResponseWriter, r *http.Request) error {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return fmt.Errorf("%w: no run with that id", ErrNotFound)
	}
	run, err := s.Get(r.Context(), id)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, run)
	return nil
}
