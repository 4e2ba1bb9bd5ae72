package provider

import (
	"net/http"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
)

// Register mounts GET /api/system/providers: each configured provider's
// circuit (state, times opened, the latest failures in the box's words),
// for Studio's System screen. Names and states only: no base URL or key.
func (r *Registry) Register(srv *api.Server) {
	srv.Route("GET /api/system/providers", auth.ScopeConfigRead, func(w http.ResponseWriter, _ *http.Request) error {
		api.WriteData(w, http.StatusOK, r.Circuits())
		return nil
	})
}
