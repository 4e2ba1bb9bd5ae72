package api

import (
	"errors"
	"net/http"

	"github.com/stackbone/box/agent"
)

var sessionErrors = []struct {
	err    error
	status int
	code   string
}{
	{agent.ErrSessionNotFound, http.StatusNotFound, "session_not_found"},
	{agent.ErrNoDecisionPending, http.StatusConflict, "no_decision_pending"},
	{agent.ErrSessionBusy, http.StatusConflict, "session_busy"},
	{agent.ErrDecisionPending, http.StatusConflict, "decision_pending"},
	{agent.ErrUnknownAgent, http.StatusNotFound, "agent_not_found"},
	{agent.ErrInvalidRequest, http.StatusBadRequest, "invalid_request"},
	{agent.ErrProvider, http.StatusBadGateway, "provider_failed"},
	{agent.ErrMemory, http.StatusServiceUnavailable, "memory_unavailable"},
	{agent.ErrStorage, http.StatusServiceUnavailable, "unavailable"},
}

func (s *Server) failAgent(w http.ResponseWriter, r *http.Request, err error) {
	for _, e := range sessionErrors {
		if errors.Is(err, e.err) {
			writeError(w, e.status, e.code, err.Error())
			return
		}
	}
	s.fail(w, r, err)
}

func (s *Server) sessionsList(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 50, 1, 200)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	q := r.URL.Query()
	list, err := s.cfg.Runtime.ListSessions(r.Context(), agent.SessionFilter{Agent: q.Get("agent"), Status: q.Get("status"), Before: q.Get("before"), Limit: limit})
	if err != nil {
		s.failAgent(w, r, err)
		return
	}
	writeData(w, http.StatusOK, list)
}

func (s *Server) sessionsGet(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Runtime.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failAgent(w, r, err)
		return
	}
	writeData(w, http.StatusOK, d)
}

// sessionsDecide approves or rejects the held tool call of a session and
// runs the rest of the turn; the answer lands in the session's transcript.
func (s *Server) sessionsDecide(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Decision field[string] `json:"decision"`
		Reason   field[string] `json:"reason"`
	}
	if err := decode(w, r, 64<<10, &b); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if !b.Decision.Set || (b.Decision.V != "approve" && b.Decision.V != "reject") {
		writeError(w, http.StatusBadRequest, "invalid_request", `decision must be "approve" or "reject"`)
		return
	}
	res, err := s.cfg.Runtime.Decide(r.Context(), r.PathValue("id"),
		agent.Decision{Approve: b.Decision.V == "approve", Reason: b.Reason.V}, func(agent.Event) error { return nil })
	if err != nil {
		s.failAgent(w, r, err)
		return
	}
	out := map[string]any{"runId": res.RunID, "finish": res.Finish, "text": res.Text, "held": res.Held, "toolCalls": res.ToolCalls}
	writeData(w, http.StatusOK, out)
}
