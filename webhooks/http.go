package webhooks

import (
	"net/http"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
)

// Register adds the webhook routes: reading subscriptions and their
// delivery log needs config:read; creating, deleting and replaying needs
// config:write (a subscription sends the box's events, transcripts
// included when it asks, to a URL outside the box).
func (s *Service) Register(srv *api.Server) {
	srv.Route("GET /api/webhooks", auth.ScopeConfigRead, s.httpList)
	srv.Route("POST /api/webhooks", auth.ScopeConfigWrite, s.httpCreate)
	srv.Route("GET /api/webhooks/event-types", auth.ScopeConfigRead, s.httpTypes)
	srv.Route("GET /api/webhooks/{id}", auth.ScopeConfigRead, s.httpGet)
	srv.Route("DELETE /api/webhooks/{id}", auth.ScopeConfigWrite, s.httpDelete)
	srv.Route("GET /api/webhooks/{id}/deliveries", auth.ScopeConfigRead, s.httpDeliveries)
	srv.Route("GET /api/webhooks/{id}/deliveries/{delivery}", auth.ScopeConfigRead, s.httpDelivery)
	srv.Route("POST /api/webhooks/{id}/deliveries/{delivery}/replay", auth.ScopeConfigWrite, s.httpReplay)
}

func (s *Service) httpList(w http.ResponseWriter, r *http.Request) error {
	list, err := s.List(r.Context())
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

func (s *Service) httpTypes(w http.ResponseWriter, r *http.Request) error {
	api.WriteData(w, http.StatusOK, Types)
	return nil
}

func (s *Service) httpCreate(w http.ResponseWriter, r *http.Request) error {
	var n NewSubscription
	if err := api.Decode(w, r, 16<<10, &n); err != nil {
		return err
	}
	sub, err := s.Create(r.Context(), n, api.Actor(r))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusCreated, sub)
	return nil
}

func (s *Service) httpGet(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, sub)
	return nil
}

func (s *Service) httpDelete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.Delete(r.Context(), id, api.Actor(r)); err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
	return nil
}

func (s *Service) httpDeliveries(w http.ResponseWriter, r *http.Request) error {
	limit, err := api.QueryInt(r, "limit", 50, 1, 200)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	list, err := s.Deliveries(r.Context(), r.PathValue("id"), DeliveryFilter{Status: q.Get("status"), EventType: q.Get("type"), Limit: limit})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

func (s *Service) httpDelivery(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Delivery(r.Context(), r.PathValue("id"), r.PathValue("delivery"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, d)
	return nil
}

func (s *Service) httpReplay(w http.ResponseWriter, r *http.Request) error {
	id, delivery := r.PathValue("id"), r.PathValue("delivery")
	if err := s.Replay(r.Context(), id, delivery, api.Actor(r)); err != nil {
		return err
	}
	api.WriteData(w, http.StatusAccepted, map[string]any{"id": delivery, "replayed": true})
	return nil
}
