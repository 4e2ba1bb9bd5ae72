package sip

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// Register mounts the outbound-call route: POST /api/voice/calls places a
// call through the trunks (Dial) and answers 202 with its id while it
// rings; the call's record is read through the calls routes of package
// voice.
func (s *Server) Register(srv *api.Server) {
	srv.Route("POST /api/voice/calls", auth.ScopeVoice, s.dial)
}

func (s *Server) dial(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Agent      string          `json:"agent"`
		To         string          `json:"to"`
		Trunk      string          `json:"trunk"`
		Identities json.RawMessage `json:"identities"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return fault.Recode(ErrInvalidDial, err)
	}
	if b.Agent == "" || b.To == "" {
		return fmt.Errorf("%w: %s", ErrInvalidDial, "agent and to are required")
	}
	ids, err := identity.ParseJSONValue(b.Identities, nil)
	if err != nil {
		return fault.Recode(ErrInvalidDial, err)
	}
	id, err := s.Dial(r.Context(), DialRequest{Agent: b.Agent, To: b.To, Trunk: b.Trunk, Identities: ids})
	if err != nil && fault.Of(err) == nil {
		err = fmt.Errorf("%w: %v", ErrDialFailed, err)
	}
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusAccepted, map[string]string{"callId": id})
	return nil
}
