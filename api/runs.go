package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/runs"
)

type agentView struct {
	Name  string `json:"name"`
	Model string `json:"model"`
}

func (s *Server) agentsList(w http.ResponseWriter, r *http.Request) {
	out := []agentView{}
	for _, name := range s.cfg.Config.AgentNames() {
		out = append(out, agentView{Name: name, Model: s.cfg.Config.Agents[name].Model})
	}
	writeData(w, http.StatusOK, out)
}

func (s *Server) runsList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := queryInt(r, "limit", 50, 1, 200)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f := runs.Filter{Kind: q.Get("kind"), AgentID: q.Get("agent"), Status: q.Get("status"), Limit: limit}
	if b := q.Get("before"); b != "" {
		id, err := uuid.Parse(b)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "before must be a run id")
			return
		}
		f.Before = id
	}
	list, err := s.cfg.Runs.List(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		list = []runs.Run{}
	}
	writeData(w, http.StatusOK, list)
}

func (s *Server) runsGet(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusNotFound, "not_found", "no run with that id")
		return
	}
	run, err := s.cfg.Runs.Get(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, run)
}

type activityEntry struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Subject string    `json:"subject"`
	Fields  []string  `json:"fields"`
}

// activityList shows the operator activity log, newest first, optionally for
// one subject ("agent:support", "system").
func (s *Server) activityList(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 50, 1, 200)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	rows, err := s.cfg.Pool.Query(r.Context(), `
		SELECT id, at, actor, action, subject, fields FROM stackbone_platform.activity_log
		WHERE ($1 = '' OR subject = $1) ORDER BY id DESC LIMIT $2`, r.URL.Query().Get("subject"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[activityEntry])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		list = []activityEntry{}
	}
	writeData(w, http.StatusOK, list)
}
