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
	"github.com/stackbone/box/webhooks"
)

// A campaign's calls are the agent's with each contact's variables in its
// instructions ({name}, {topic}): a Go phone answers both contacts and
// talks; the model is sent each contact's own instructions; the campaign
// finishes once both calls ended and campaign.finished reaches a signed
// webhook with its progress; the person's erasure removes their contact.
func TestCampaignCallsCarryTheirContactsVariables(t *testing.T) {
	t.Parallel()
	phone := siptest.NewPhone(t)
	b := boxtest.New(t, fmt.Sprintf(`
agents:
  renewals:
    model: openai/chat
    instructions: You call {name} about {topic}. Braces that name nothing, like {this}, stay.
    greeting: Hello, this is the renewals desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice:
      stt: openai/whisper-1
      tts: openai/tts-1
sip:
  trunks:
    outbound:
      - {name: out, proxy: "%s"}
`, phone.Addr), boxtest.TuneWebhooks(func(c *webhooks.Config) { c.Backoff = func(int) time.Duration { return 50 * time.Millisecond } }))
	b.Model.RespondTranscripts(func([]byte) string { return "Is it about my renewal?" })
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[],"summary":"A renewal call."}`}
		}
		return providertest.Reply{Content: "Thanks, I will note that."}
	})
	c := &client{t: t, url: b.URL}
	ctx := context.Background()
	hook := newReceiver(t, func(int, int) string { return "ok" })
	_, raw := c.want(boxtest.Key, "POST", "/api/webhooks", fmt.Sprintf(`{"url":%q,"events":["campaign.finished"]}`, hook.url), nil, 201)
	var sub struct {
		Data webhooks.Subscription `json:"data"`
	}
	_ = json.Unmarshal([]byte(raw), &sub)
	hook.mu.Lock()
	hook.secret = sub.Data.Secret
	hook.mu.Unlock()

	_, raw = c.want(boxtest.Key, "POST", "/api/voice/campaigns",
		`{"name":"renewals","agent":"renewals","trunk":"out","maxConcurrent":1,"windows":[{"start":"00:00","end":"24:00"}]}`, nil, 201)
	var camp struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(raw), &camp); err != nil || camp.Data.ID == "" {
		t.Fatalf("create: %s", raw)
	}
	id := camp.Data.ID
	contacts := map[string]string{"+12125550101": "You call Ada about the boiler service.", "+12125550102": "You call Bo about the gas contract."}
	c.want(boxtest.Key, "POST", "/api/voice/campaigns/"+id+"/contacts", `{"contacts":[
		{"number":"+1 212 555 0101","variables":{"name":"Ada","topic":"the boiler service"}},
		{"number":"+1 212 555 0102","variables":{"name":"Bo","topic":"the gas contract"}}]}`, nil, 201)
	c.want(boxtest.Key, "POST", "/api/voice/campaigns/"+id+"/start", "", nil, 200)

	// The cap is one: the calls come one after the other.
	for range 2 {
		var sc *siptest.Call
		select {
		case sc = <-phone.Answered():
		case <-time.After(30 * time.Second):
			t.Fatal("no campaign call reached the phone")
		}
		var number string
		poll.Until(t, "the call's record", 10*time.Second, func() bool {
			return b.Pool.QueryRow(ctx, `SELECT phone_number FROM stackbone_platform.voice_calls
				WHERE status <> 'ended' ORDER BY started_at DESC LIMIT 1`).Scan(&number) == nil
		})
		// The caller speaks over the greeting (its turn is cut, so not
		// heard whole) and hangs up once the answer was heard.
		poll.Until(t, "the greeting", 30*time.Second, func() bool { return sc.Voiced() > 25 })
		sc.Talk(1)
		poll.Until(t, "the answer heard through", 30*time.Second, func() bool {
			var heard bool
			err := b.Pool.QueryRow(ctx, `SELECT stackbone_platform.heard_transcript(voice_calls) @> '[{"role":"assistant","text":"Thanks, I will note that."}]'
				FROM stackbone_platform.voice_calls WHERE phone_number = $1`, number).Scan(&heard)
			return err == nil && heard
		})
		if err := sc.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, "the campaign to finish", 30*time.Second, func() bool {
		var status string
		b.Pool.QueryRow(ctx, `SELECT status FROM stackbone_platform.campaigns WHERE id = $1`, id).Scan(&status)
		return status == "finished"
	})

	// Each contact's call told the model its own instructions.
	sent := map[string]bool{}
	for _, req := range b.Model.ChatRequests() {
		for _, m := range req.Messages {
			if m.Role == openai.ChatMessageRoleSystem && strings.HasPrefix(m.Content, "You call ") {
				sent[m.Content] = true
			}
		}
	}
	for number, want := range contacts {
		full := want + " Braces that name nothing, like {this}, stay."
		if !sent[full] {
			t.Errorf("%s: the model was never sent %q (sent %v)", number, full, sent)
		}
		var state, lastCall string
		if err := b.Pool.QueryRow(ctx, `SELECT state, last_call_id FROM stackbone_platform.campaign_contacts
			WHERE campaign_id = $1 AND number = $2`, id, number).Scan(&state, &lastCall); err != nil || state != "done" {
			t.Errorf("%s: %s (%v)", number, state, err)
		}
		var callNumber string
		b.Pool.QueryRow(ctx, `SELECT phone_number FROM stackbone_platform.voice_calls WHERE id = $1`, lastCall).Scan(&callNumber)
		if callNumber != number {
			t.Errorf("%s: its last call %s dialled %q", number, lastCall, callNumber)
		}
	}

	poll.Until(t, "campaign.finished to be delivered", 30*time.Second, func() bool { return len(hook.byType()["campaign.finished"]) == 1 })
	ev := hook.byType()["campaign.finished"][0]
	data, _ := ev["data"].(map[string]any)
	progress, _ := data["progress"].(map[string]any)
	byState, _ := progress["byState"].(map[string]any)
	if data["campaignId"] != id || data["status"] != "finished" || byState["done"] != float64(2) {
		t.Fatalf("campaign.finished: %v", ev)
	}
	if hook.badSigns > 0 {
		t.Fatalf("%d deliveries with a bad signature", hook.badSigns)
	}

	// Erasing Ada's memory erases her from the campaign too.
	c.want(boxtest.Key, "POST", "/api/memory/delete-all", `{"agentId":"renewals","userId":"+12125550101"}`, nil, 200)
	var left []string
	rows, _ := b.Pool.Query(ctx, `SELECT number FROM stackbone_platform.campaign_contacts WHERE campaign_id = $1`, id)
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		left = append(left, n)
	}
	rows.Close()
	if len(left) != 1 || left[0] != "+12125550102" {
		t.Fatalf("contacts after Ada's erasure: %v", left)
	}
}
