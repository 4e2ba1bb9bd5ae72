package api

import (
	"errors"
	"net/http"
	"slices"

	"github.com/stackbone/box/auth"
)

// keysSelf tells a client which key it is using and what that key may do,
// so a console can show a screen read-only with the reason instead of
// letting the operator hit 403s. Any valid key may ask about itself.
func (s *Server) keysSelf(w http.ResponseWriter, r *http.Request) {
	k, _ := KeyFrom(r.Context())
	writeData(w, http.StatusOK, map[string]any{"name": k.Name, "scopes": k.Scopes, "createdAt": k.CreatedAt, "allScopes": auth.AllScopes})
}

func (s *Server) keysList(w http.ResponseWriter, r *http.Request) {
	list, err := s.cfg.Keys.List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if list == nil {
		list = []auth.Key{}
	}
	writeData(w, http.StatusOK, list)
}

// keysCreate makes a key and answers its secret, the only time it is shown.
// A key can grant only scopes it holds, so keys:admin is not a way to
// widen one's own access.
func (s *Server) keysCreate(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	if err := decode(w, r, 16<<10, &b); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	self, _ := KeyFrom(r.Context())
	for _, sc := range b.Scopes {
		if slices.Contains(auth.AllScopes, sc) && !self.Has(sc) {
			writeError(w, http.StatusForbidden, "forbidden", "a key can only grant scopes it holds; this key lacks "+sc)
			return
		}
	}
	secret, k, err := s.cfg.Keys.Create(r.Context(), b.Name, b.Scopes)
	switch {
	case errors.Is(err, auth.ErrInvalidName), errors.Is(err, auth.ErrInvalidScope):
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	case errors.Is(err, auth.ErrExists):
		writeError(w, http.StatusConflict, "key_exists", "a key named "+b.Name+" exists (names stay taken after a revoke)")
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, map[string]any{"key": k, "secret": secret})
}

func (s *Server) keysRevoke(w http.ResponseWriter, r *http.Request) {
	err := s.cfg.Keys.Revoke(r.Context(), r.PathValue("name"))
	if errors.Is(err, auth.ErrNotFound) {
		writeError(w, http.StatusNotFound, "key_not_found", "no live key named "+r.PathValue("name"))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeData(w, http.StatusOK, map[string]any{"revoked": r.PathValue("name")})
}
