package campaigns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
)

// maxUpload bounds a contacts upload (10,000 contacts with a few variables
// take about 1 MB).
const maxUpload = 32 << 20

// Register mounts the campaign routes (scope voice: a campaign places
// calls).
func (s *Service) Register(srv *api.Server) {
	srv.Route("GET /api/voice/campaigns", auth.ScopeVoice, s.httpList)
	srv.Route("POST /api/voice/campaigns", auth.ScopeVoice, s.httpCreate)
	srv.Route("GET /api/voice/campaigns/{id}", auth.ScopeVoice, s.httpGet)
	srv.Route("DELETE /api/voice/campaigns/{id}", auth.ScopeVoice, s.httpDelete)
	srv.Route("POST /api/voice/campaigns/{id}/contacts", auth.ScopeVoice, s.httpAddContacts)
	srv.Route("GET /api/voice/campaigns/{id}/contacts", auth.ScopeVoice, s.httpContacts)
	for _, a := range []struct {
		name string
		do   func(context.Context, string) (Campaign, error)
	}{{"start", s.Start}, {"pause", s.Pause}, {"resume", s.Resume}, {"cancel", s.Cancel}} {
		srv.Route("POST /api/voice/campaigns/{id}/"+a.name, auth.ScopeVoice, func(w http.ResponseWriter, r *http.Request) error {
			c, err := a.do(r.Context(), r.PathValue("id"))
			if err != nil {
				return err
			}
			api.WriteData(w, http.StatusOK, c)
			return nil
		})
	}
}

func (s *Service) httpList(w http.ResponseWriter, r *http.Request) error {
	list, err := s.List(r.Context())
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

func (s *Service) httpCreate(w http.ResponseWriter, r *http.Request) error {
	var n NewCampaign
	if err := api.Decode(w, r, 64<<10, &n); err != nil {
		return err
	}
	c, err := s.Create(r.Context(), n, api.Actor(r))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusCreated, c)
	return nil
}

func (s *Service) httpGet(w http.ResponseWriter, r *http.Request) error {
	c, err := s.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, c)
	return nil
}

func (s *Service) httpDelete(w http.ResponseWriter, r *http.Request) error {
	if err := s.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// httpAddContacts takes text/csv (a header line, then one contact a line)
// or JSON ({"contacts": [...]} or a list).
func (s *Service) httpAddContacts(w http.ResponseWriter, r *http.Request) error {
	raw, err := api.ReadBody(w, r, maxUpload)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: the upload is larger than %d MB; split it", ErrInvalidRequest, maxUpload>>20)
		}
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	var in []ContactInput
	var lines []int
	media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch media {
	case "text/csv":
		in, lines, err = ParseCSV(bytes.NewReader(raw))
	case "application/json", "":
		in, lines, err = ParseJSON(raw)
	default:
		return fmt.Errorf("%w: send contacts as text/csv or application/json", ErrInvalidRequest)
	}
	if err != nil {
		return err
	}
	n, err := s.AddContacts(r.Context(), r.PathValue("id"), in, lines)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusCreated, map[string]int{"added": n})
	return nil
}

func (s *Service) httpContacts(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := ContactFilter{State: q.Get("state")}
	for name, dst := range map[string]*int{"after": &f.After, "limit": &f.Limit} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%w: %s is a whole number", ErrInvalidRequest, name)
			}
			*dst = n
		}
	}
	list, err := s.Contacts(r.Context(), r.PathValue("id"), f)
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}
