package sip

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// Register mounts the outbound-call route: POST /api/voice/calls places a
// call through the trunks (Dial) and answers 202 with its id while it
// rings; the call's record is read through the calls routes of package
// voice.
func (s *Server) Register(srv *api.Server) {
	srv.PersonRoute("POST /api/voice/calls", auth.ScopeVoice, s.dial)
}

func (s *Server) dial(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Agent      string          `json:"agent"`
		To         string          `json:"to"`
		Trunk      string          `json:"trunk"`
		Identities json.RawMessage `json:"identities"`
		// AnsweringMachine overrides the agent's answering-machine policy
		// for this call (detect, voicemail, message, menu).
		AnsweringMachine *config.AnsweringMachine `json:"answeringMachine"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return fault.Recode(ErrInvalidDial, err)
	}
	if msg := checkDial(b.Agent, b.To, b.Trunk); msg != "" {
		return fmt.Errorf("%w: %s", ErrInvalidDial, msg)
	}
	if m := b.AnsweringMachine; m != nil {
		if problems := config.AnsweringMachineProblems("answeringMachine.", *m); len(problems) > 0 {
			return fmt.Errorf("%w: %s", ErrInvalidDial, problems[0])
		}
	}
	ids, err := identity.ParseJSONValue(b.Identities, nil)
	if err != nil {
		return fault.Recode(ErrInvalidDial, err)
	}
	id, err := s.Dial(r.Context(), DialRequest{Agent: b.Agent, To: b.To, Trunk: b.Trunk, Identities: ids, AnsweringMachine: b.AnsweringMachine})
	if err != nil && fault.Of(err) == nil {
		err = fmt.Errorf("%w: %v", ErrDialFailed, err)
	}
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusAccepted, map[string]string{"callId": id})
	return nil
}

// Lengths of a dial request's fields: an agent's or a trunk's name, and the
// number as typed (spaces, dashes and dots are dropped before it is
// checked against the at most 32 digits a number holds).
const (
	maxNameLen   = 128
	maxNumberLen = 64
)

// checkDial says what is wrong with a dial request's fields ("" when
// nothing), before anything is looked up, so no error quotes more than
// the limits allow.
func checkDial(agent, to, trunk string) string {
	switch {
	case agent == "" && to == "":
		return "agent and to are required"
	case agent == "":
		return "agent is required"
	case to == "":
		return "to is required: the number to call"
	case len(agent) > maxNameLen:
		return fmt.Sprintf("agent is too long (%d bytes; at most %d)", len(agent), maxNameLen)
	case len(to) > maxNumberLen:
		return fmt.Sprintf("to is too long (%d bytes; at most %d)", len(to), maxNumberLen)
	case len(trunk) > maxNameLen:
		return fmt.Sprintf("trunk is too long (%d bytes; at most %d)", len(trunk), maxNameLen)
	}
	return ""
}
