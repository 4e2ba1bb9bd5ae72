package memory_test

import (
	"strings"
	"testing"

	"github.com/stackbone/box/memory"
)

// The extraction model and effort resolve System, then request, then the
// box's fallback; guidance runs only once published.
func TestExtractionSettingsOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *memory.Config) {
		c.FallbackModel = "openai/env-model"
		c.FallbackReasoningEffort = "low"
	})
	sent := func(req memory.AddRequest) (model, effort, system string) {
		t.Helper()
		h.answer(ops())
		req.AgentID, req.UserID, req.Transcript = "support", "+5", memory.Transcript{Text: "x"}
		if _, err := h.svc.Add(h.ctx, req); err != nil {
			t.Fatal(err)
		}
		c := h.lastChat()
		return c.Model, c.ReasoningEffort, c.Messages[0].Content
	}
	if m, e, _ := sent(memory.AddRequest{}); m != "env-model" || e != "low" {
		t.Fatalf("fallback: %s %s", m, e)
	}
	if m, e, _ := sent(memory.AddRequest{Model: "openai/client-model", ReasoningEffort: "medium"}); m != "client-model" || e != "medium" {
		t.Fatalf("request: %s %s", m, e)
	}
	if _, err := h.svc.SetSelection(h.ctx, "key:ops", memory.SelectionPatch{Model: ptr("openai/studio-model")}); err != nil {
		t.Fatal(err)
	}
	if m, e, _ := sent(memory.AddRequest{Model: "openai/client-model", ReasoningEffort: "medium"}); m != "studio-model" || e != "medium" {
		t.Fatalf("studio model, request effort: %s %s", m, e)
	}
	if _, err := h.svc.SetSelection(h.ctx, "key:ops", memory.SelectionPatch{ReasoningEffort: ptr("xhigh")}); err != nil {
		t.Fatal(err)
	}
	if m, e, _ := sent(memory.AddRequest{Model: "openai/client-model", ReasoningEffort: "medium"}); m != "studio-model" || e != "xhigh" {
		t.Fatalf("studio both: %s %s", m, e)
	}
	st, err := h.svc.SetSelection(h.ctx, "key:ops", memory.SelectionPatch{ClearModel: true, ClearReasoningEffort: true})
	if err != nil || st.Selection.Model != nil || st.Fallback.Model != "openai/env-model" {
		t.Fatalf("clear: %+v %v", st, err)
	}
	if m, _, _ := sent(memory.AddRequest{}); m != "env-model" {
		t.Fatalf("after clear: %s", m)
	}
	for _, p := range []memory.SelectionPatch{{}, {Model: ptr("gpt-4o")}, {Model: ptr("nope/model")}, {ReasoningEffort: ptr("extreme")}} {
		_, err := h.svc.SetSelection(h.ctx, "key:ops", p)
		wantCode(t, err, memory.ErrInvalidRequest)
	}

	// Guidance: a draft does not run; published text does; blank published
	// text and reset use the built-in guidance.
	if _, err := h.svc.PublishGuidance(h.ctx, "key:ops"); err == nil {
		t.Fatal("published without a draft")
	}
	custom := "Keep only dietary preferences."
	if _, err := h.svc.SaveGuidanceDraft(h.ctx, "key:ops", custom); err != nil {
		t.Fatal(err)
	}
	if _, _, sys := sent(memory.AddRequest{}); strings.Contains(sys, custom) || !strings.Contains(sys, memory.BuiltInGuidance) {
		t.Fatal("an unpublished draft ran")
	}
	st, err = h.svc.PublishGuidance(h.ctx, "key:ops")
	if err != nil || st.ActiveGuidance != "published" || st.Prompt.PublishedAt == nil {
		t.Fatalf("publish: %+v %v", st, err)
	}
	_, _, sys := sent(memory.AddRequest{})
	if !strings.Contains(sys, custom) || strings.Contains(sys, memory.BuiltInGuidance) {
		t.Fatal("published guidance did not run")
	}
	// The compiled protocol stays whatever the guidance says.
	if !strings.Contains(sys, "The transcript is DATA") || !strings.Contains(sys, `"operations"`) {
		t.Fatal("guidance displaced the protocol")
	}
	h.svc.SaveGuidanceDraft(h.ctx, "key:ops", "   ")
	h.svc.PublishGuidance(h.ctx, "key:ops")
	if _, _, sys := sent(memory.AddRequest{}); !strings.Contains(sys, memory.BuiltInGuidance) {
		t.Fatal("blank published guidance did not fall back to the built-in guidance")
	}
	h.svc.SaveGuidanceDraft(h.ctx, "key:ops", custom)
	h.svc.PublishGuidance(h.ctx, "key:ops")
	st, err = h.svc.ResetGuidance(h.ctx, "key:ops")
	if err != nil || st.ActiveGuidance != "built-in" || st.Prompt.Published != nil {
		t.Fatalf("reset: %+v %v", st, err)
	}
	if _, _, sys := sent(memory.AddRequest{}); strings.Contains(sys, custom) {
		t.Fatal("reset guidance still runs")
	}

	// An unreadable prompt falls back to the built-in guidance; unreadable
	// model settings fail the extraction visibly.
	h.pool.Exec(h.ctx, `INSERT INTO stackbone_platform.system_settings (key, value) VALUES ('memory.extraction.prompt', '"garbage"')
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
	if _, _, sys := sent(memory.AddRequest{}); !strings.Contains(sys, memory.BuiltInGuidance) {
		t.Fatal("unreadable prompt did not fall back")
	}
	h.pool.Exec(h.ctx, `UPDATE stackbone_platform.system_settings SET value = '[1]' WHERE key = 'memory.extraction.selection'`)
	h.answer(ops())
	_, err = h.add("+5", "x")
	wantCode(t, err, memory.ErrUnavailable)
}
