package api

import (
	"net/http"
	"slices"
	"strings"
)

// modelsView is what GET /api/system/models answers: the configured
// providers' names and the provider/model ids the config knows of (each
// provider's priced models, the agents' models on a configured provider,
// the memory model). A provider may serve models the config never names,
// so a client offers these as choices, not as the only ones.
type modelsView struct {
	Providers []string `json:"providers"`
	Models    []string `json:"models"`
}

// systemModels serves GET /api/system/models. Names only: no base URL or
// key of a provider leaves the box.
func (s *Server) systemModels(w http.ResponseWriter, r *http.Request) {
	cfg := s.cfg.Config
	v := modelsView{Providers: []string{}, Models: []string{}}
	for name, p := range cfg.Providers {
		v.Providers = append(v.Providers, name)
		for model := range p.Prices {
			v.Models = append(v.Models, name+"/"+model)
		}
	}
	known := func(id string) {
		if provider, model, ok := strings.Cut(id, "/"); ok && model != "" {
			if _, configured := cfg.Providers[provider]; configured {
				v.Models = append(v.Models, id)
			}
		}
	}
	for _, a := range cfg.Agents {
		known(a.Model)
	}
	known(cfg.Memory.Model)
	slices.Sort(v.Providers)
	slices.Sort(v.Models)
	v.Models = slices.Compact(v.Models)
	writeData(w, http.StatusOK, v)
}
