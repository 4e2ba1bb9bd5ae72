package box_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

const hangupAgents = `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, this is the front desk calling.
    memory: {identityKey: phoneNumber, read: true, save: true}
sip:
  trunks:
    outbound:
      - {name: ringing, proxy: "%s"}
      - {name: answering, proxy: "%s"}
`

// A call is ended from outside (POST /api/voice/calls/{id}/hangup) while it
// rings (the box cancels its INVITE: the phone stops ringing) and while it
// runs (the box hangs up: the phone's call ends); each ends
// operator_hangup, completed once and, the answered one, saved once. A
// second hang-up is refused as ended, an unknown call as not found.
func TestHangupFromOutside(t *testing.T) {
	t.Parallel()
	ringing, answering := siptest.NewRingingPhone(t), siptest.NewPhone(t)
	b := boxtest.New(t, fmt.Sprintf(hangupAgents, ringing.Addr, answering.Addr))
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: `{"operations":[],"summary":"An outbound call, ended by the operator."}`}
	})
	c := &client{t: t, url: b.URL}
	dial := func(trunk, to string) string {
		_, raw := c.want(boxtest.Key, "POST", "/api/voice/calls", fmt.Sprintf(`{"agent":"receptionist","to":%q,"trunk":%q}`, to, trunk), nil, 202)
		var out struct {
			Data struct {
				CallID string `json:"callId"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(raw), &out); err != nil || out.Data.CallID == "" {
			t.Fatalf("dial: %s", raw)
		}
		return out.Data.CallID
	}
	ended := func(id, number string) (outcome string, saves int) {
		t.Helper()
		poll.Until(t, "the call to end", 30*time.Second, func() bool {
			err := b.Pool.QueryRow(context.Background(), `SELECT coalesce(outcome, '') FROM stackbone_platform.voice_calls
				WHERE id = $1 AND status = 'ended'`, id).Scan(&outcome)
			return err == nil
		})
		if err := b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM stackbone_platform.memory_calls WHERE agent_id = 'receptionist' AND user_id = $1`, number).Scan(&saves); err != nil {
			t.Fatal(err)
		}
		return outcome, saves
	}

	// Ringing: nobody answers, the operator gives up.
	id := dial("ringing", "+34600100100")
	poll.Until(t, "the phone to ring", 20*time.Second, func() bool { return ringing.Rang() == 1 })
	c.want(boxtest.Key, "POST", "/api/voice/calls/"+id+"/hangup", "", nil, 202)
	poll.Until(t, "the phone to stop ringing", 20*time.Second, func() bool { return ringing.Cancelled() == 1 })
	if outcome, saves := ended(id, "+34600100100"); outcome != "operator_hangup" || saves != 0 {
		t.Fatalf("a ringing call ended %s with %d saves", outcome, saves)
	}

	// Running: answered, greeted, then ended.
	id = dial("answering", "+34600100200")
	var call *siptest.Call
	select {
	case call = <-answering.Answered():
	case <-time.After(20 * time.Second):
		t.Fatal("the phone was never called")
	}
	poll.Until(t, "the greeting to be heard through", 20*time.Second, func() bool {
		var n int
		err := b.Pool.QueryRow(context.Background(), `SELECT jsonb_array_length(stackbone_platform.heard_transcript(voice_calls)) FROM stackbone_platform.voice_calls WHERE id = $1`, id).Scan(&n)
		return err == nil && n >= 1 && call.Voiced() > 20
	})
	c.want(boxtest.Key, "POST", "/api/voice/calls/"+id+"/hangup", "", nil, 202)
	select {
	case <-call.Ended():
	case <-time.After(20 * time.Second):
		t.Fatal("the box did not hang up")
	}
	outcome, _ := ended(id, "+34600100200")
	var saves int
	poll.Until(t, "the save", 30*time.Second, func() bool {
		_, saves = ended(id, "+34600100200")
		return saves > 0
	})
	if outcome != "operator_hangup" || saves != 1 {
		t.Fatalf("a running call ended %s with %d saves", outcome, saves)
	}
	var logged int
	if err := b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM stackbone_platform.voice_calls WHERE id = $1`, id).Scan(&logged); err != nil || logged != 1 {
		t.Fatalf("%d call records (%v)", logged, err)
	}

	if _, raw := c.want(boxtest.Key, "POST", "/api/voice/calls/"+id+"/hangup", "", nil, 409); !strings.Contains(raw, "call_ended") {
		t.Fatalf("a second hang-up: %s", raw)
	}
	if _, raw := c.want(boxtest.Key, "POST", "/api/voice/calls/call_nobody/hangup", "", nil, 404); !strings.Contains(raw, "call_not_found") {
		t.Fatalf("an unknown call: %s", raw)
	}
}
