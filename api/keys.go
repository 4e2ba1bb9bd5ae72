package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
)

// keysSelf tells a client which key it is using and what that key may do,
// so a console can show a screen read-only with the reason instead of
// letting the operator hit 403s. Any valid key may ask about itself.
func (s *Server) keysSelf(w http.ResponseWriter, r *http.Request) error {
	k, _ := KeyFrom(r.Context())
	writeData(w, http.StatusOK, map[string]any{"name": k.Name, "scopes": k.Scopes, "createdAt": k.CreatedAt, "allScopes": auth.AllScopes,
		"personScopes": auth.PersonScopes, "identities": k.Identities, "anyIdentity": !k.Restricted()})
	return nil
}

func (s *Server) keysList(w http.ResponseWriter, r *http.Request) error {
	list, err := s.cfg.Keys.List(r.Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []auth.Key{}
	}
	writeData(w, http.StatusOK, list)
	return nil
}

// errForbiddenScope: a key tried to grant a scope it lacks.
var errForbiddenScope = fault.New(fault.Forbidden, "forbidden", "a key can only grant scopes it holds")

// keysCreate makes a key and answers its secret, the only time it is shown.
// A key can grant only scopes it holds, so keys:admin is not a way to
// widen one's own access.
func (s *Server) keysCreate(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
		// Identities restricts the key to persons (field to value or
		// pattern); AnyIdentity trusts it to name anyone. A key with a
		// person scope says one of them (auth.CheckWhom).
		Identities  map[string]string `json:"identities"`
		AnyIdentity bool              `json:"anyIdentity"`
	}
	if err := decode(w, r, 16<<10, &b); err != nil {
		return err
	}
	self, _ := KeyFrom(r.Context())
	for _, sc := range b.Scopes {
		if slices.Contains(auth.AllScopes, sc) && !self.Has(sc) {
			return fmt.Errorf("%w; this key lacks %s", errForbiddenScope, sc)
		}
	}
	if err := auth.CheckWhom(b.Scopes, b.Identities, b.AnyIdentity); err != nil {
		return err
	}
	secret, k, err := s.cfg.Keys.CreateRestricted(r.Context(), b.Name, b.Scopes, b.Identities)
	if errors.Is(err, auth.ErrExists) {
		return fmt.Errorf("%w: a key named %s exists (names stay taken after a revoke)", auth.ErrExists, b.Name)
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, map[string]any{"key": k, "secret": secret})
	return nil
}

func (s *Server) keysRevoke(w http.ResponseWriter, r *http.Request) error {
	err := s.cfg.Keys.Revoke(r.Context(), r.PathValue("name"))
	if errors.Is(err, auth.ErrNotFound) {
		return fmt.Errorf("%w: no live key named %s", auth.ErrNotFound, r.PathValue("name"))
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"revoked": r.PathValue("name")})
	return nil
}
