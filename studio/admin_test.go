package studio_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
)

// An operator creates a key with one scope (its secret shown once, in the
// page), the key works with exactly that scope, and revoking it in Studio
// stops it at once. An empty name is refused with nothing created.
func TestKeysScreen(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/keys")
	p.waitFor(`!!document.querySelector("table.keys tr[data-id=admin]")`, "the admin key in the list")
	before := b.count(`SELECT count(*) FROM stackbone_platform.api_keys`)
	p.click(`#new-key input[value="sessions:read"]`)
	p.js(`document.getElementById("new-key").requestSubmit()`)
	p.waitFor(`document.getElementById("key-result").textContent.includes("Enter a name")`, "the empty-name refusal")
	if n := b.count(`SELECT count(*) FROM stackbone_platform.api_keys`); n != before {
		t.Fatalf("%d keys after the refusal (%d before)", n, before)
	}
	p.set("#new-key input[name=name]", "ci <b>bot</b>")
	p.js(`document.getElementById("new-key").requestSubmit()`)
	p.waitFor(`!!document.querySelector("#key-secrets input.secret")`, "the new secret")
	var secret, href string
	p.js(`document.querySelector("#key-secrets input.secret").value`, &secret)
	p.js(`location.href`, &href)
	if !strings.HasPrefix(secret, "sbk_") || strings.Contains(href, secret) {
		t.Fatalf("secret %q, address %q", secret, href)
	}
	var self struct {
		Name   string
		Scopes []string
	}
	if st, _ := b.do(secret, "GET", "/api/keys/self", nil, &self); st != 200 || self.Name != "ci <b>bot</b>" || strings.Join(self.Scopes, ",") != "sessions:read" {
		t.Fatalf("the new key: %d %+v", st, self)
	}
	if st, code := b.do(secret, "GET", "/api/runs", nil, nil); st != 403 || code != "forbidden" {
		t.Fatalf("the new key outside its scope: %d %s", st, code)
	}
	p.waitFor(`!!document.querySelector('table.keys tr[data-id="ci <b>bot</b>"] button.revoke')`, "the new key's row")
	p.click(`table.keys tr[data-id="ci <b>bot</b>"] button.revoke`)
	p.click(`table.keys .confirm button.yes`)
	p.waitFor(`document.querySelector('table.keys tr[data-id="ci <b>bot</b>"]').textContent.includes("revoked")`, "the revoked row")
	if st, _ := b.do(secret, "GET", "/api/sessions", nil, nil); st != 401 {
		t.Fatalf("the revoked key answered %d", st)
	}

	// A key that may act for persons: the form asks whom, as the CLI does,
	// and the list shows the answer.
	p.set("#new-key input[name=name]", "web app")
	p.click(`#new-key input[value="sessions:read"]`)
	p.click(`#new-key input[value="agents:run"]`)
	p.waitFor(`!document.querySelector("#new-key fieldset.whom").hidden`, "the question whom the key acts for")
	p.js(`document.getElementById("new-key").requestSubmit()`)
	p.waitFor(`document.getElementById("key-result").textContent.includes("Say whom")`, "the refusal of a key that does not say whom")
	p.set("#new-key input[name=identity-value]", "cust_*")
	p.js(`document.getElementById("new-key").requestSubmit()`)
	p.waitFor(`!!document.querySelector('table.keys tr[data-id="web app"]')`, "the restricted key's row")
	if row := p.text(`table.keys tr[data-id="web app"]`); !strings.Contains(row, "customerId = cust_*") {
		t.Fatalf("the restricted key's row: %q", row)
	}
	var restricted string
	b.pool.QueryRow(context.Background(), `SELECT identities::text FROM stackbone_platform.api_keys WHERE name = 'web app'`).Scan(&restricted)
	if restricted != `{"customerId": "cust_*"}` {
		t.Fatalf("stored identities %q", restricted)
	}
	if row := p.text(`table.keys tr[data-id="admin"]`); !strings.Contains(row, "any person") {
		t.Fatalf("the trusted key's row: %q", row)
	}
}

// An operator looks a person up, reads their facts and calls, and erases
// them after a confirmation that says what goes; the counts deleted are
// shown and the database holds nothing of them.
func TestPeopleScreen(t *testing.T) {
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"Allergic to <img src=x onerror=window.pwned=1>."},` +
		`{"op":"add","content":"Prefers email."}],"summary":"Talked about allergies."}`})
	if st, code := b.do(adminKey, "POST", "/api/memory/add", map[string]any{"agentId": "support", "userId": "crm/42",
		"content": "I am allergic to nuts and prefer email.", "call": map[string]any{"startedAt": "2026-11-30T10:00:00Z", "durationSeconds": 83, "outcome": "completed"}}, nil); st != 200 {
		t.Fatalf("add: %d %s", st, code)
	}
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/people")
	p.set("#lookup select[name=agent]", "support")
	p.set("#lookup input[name=user]", "crm/42")
	p.js(`document.getElementById("lookup").requestSubmit()`)
	p.waitFor(`document.querySelectorAll("#facts li").length === 2 && document.querySelectorAll("#recent-calls li").length === 1`, "the person's facts and call")
	var pwned any
	p.js(`window.pwned`, &pwned)
	if !strings.Contains(p.text("#facts"), "Allergic to <img src=x onerror=window.pwned=1>.") || pwned != nil {
		t.Fatalf("facts shown %q (pwned %v)", p.text("#facts"), pwned)
	}
	if !strings.Contains(p.text("#recent-calls"), "Talked about allergies.") {
		t.Fatalf("calls shown %q", p.text("#recent-calls"))
	}
	p.click("#erase")
	p.waitFor(`!!document.querySelector("#person .confirm")`, "the confirmation")
	if got := p.text("#person .confirm"); !strings.Contains(got, "2 facts and every call record (1 shown here)") {
		t.Fatalf("confirmation %q", got)
	}
	p.click("#person .confirm button.yes")
	p.waitFor(`document.getElementById("erase-result") && document.getElementById("erase-result").textContent.includes("3 rows deleted")`, "the counts deleted")
	if n := b.count(`SELECT (SELECT count(*) FROM stackbone_platform.memory_facts WHERE user_id = 'crm/42') +
		(SELECT count(*) FROM stackbone_platform.memory_calls WHERE user_id = 'crm/42')`); n != 0 {
		t.Fatalf("%d rows left after the erase", n)
	}
}

// An operator picks the extraction model from the configured providers'
// models (or types another), saves a guidance draft (which does not run),
// publishes it, and resets back to the built-in guidance. A malformed
// model id is refused on the screen with nothing stored.
func TestSystemScreen(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/system")
	var choices []string
	p.js(`[...document.querySelectorAll("#selection select[name=modelChoice] option")].map(o => o.value)`, &choices)
	if strings.Join(choices, "|") != "|openai/chat|openai/extractor|other" {
		t.Fatalf("model choices %q", choices)
	}
	p.set("#selection select[name=modelChoice]", "openai/chat")
	p.js(`document.getElementById("selection").requestSubmit()`)
	p.waitFor(`document.getElementById("model-in-force").textContent === "openai/chat"`, "the chosen model in force")
	p.set("#selection select[name=modelChoice]", "other")
	p.set("#selection input[name=model]", "not a model")
	p.js(`document.getElementById("selection").requestSubmit()`)
	p.waitFor(`document.querySelector("#extraction .status").textContent.includes("provider/model")`, "the refusal")
	var v struct {
		Selection      struct{ Model *string }
		ActiveGuidance string
		Prompt         struct{ Draft, Published *string }
	}
	b.do(adminKey, "GET", "/api/system/memory-extraction", nil, &v)
	if v.Selection.Model == nil || *v.Selection.Model != "openai/chat" {
		t.Fatalf("the refused model changed the selection: %v", v.Selection.Model)
	}
	p.set("#selection select[name=modelChoice]", "other")
	p.set("#selection input[name=model]", "openai/gpt-4o-mini")
	p.set("#selection select[name=reasoningEffort]", "low")
	p.js(`document.getElementById("selection").requestSubmit()`)
	p.waitFor(`document.getElementById("model-in-force").textContent === "openai/gpt-4o-mini"`, "the selection in force")
	p.set("#extraction textarea[name=draft]", "Keep dietary needs.")
	p.click("#save-draft")
	p.waitFor(`document.querySelector("#extraction .status").textContent.includes("Draft saved")`, "the draft")
	b.do(adminKey, "GET", "/api/system/memory-extraction", nil, &v)
	if v.ActiveGuidance != "built-in" || v.Prompt.Draft == nil || *v.Prompt.Draft != "Keep dietary needs." {
		t.Fatalf("after the draft: %+v", v)
	}
	p.click("#publish")
	p.waitFor(`document.getElementById("guidance-in-force").textContent === "published"`, "the published guidance")
	p.click("#reset-prompt")
	p.click("#extraction .confirm button.yes")
	p.waitFor(`document.getElementById("guidance-in-force").textContent === "built-in"`, "the built-in guidance again")
	b.do(adminKey, "GET", "/api/system/memory-extraction", nil, &v)
	if v.ActiveGuidance != "built-in" || *v.Selection.Model != "openai/gpt-4o-mini" {
		t.Fatalf("after reset: %+v", v)
	}
}

// The System screen shows each provider's circuit: a provider that failed
// again and again reads "open", with its latest failures in the box's
// words (never the provider's text).
func TestSystemScreenShowsProviderCircuits(t *testing.T) {
	b := newBox(t)
	for range provider.DefaultCircuitFailures {
		b.model.Script(providertest.Reply{Status: 500, Message: "upstream exploded with sk-secret"})
		if st, _ := b.do(adminKey, "POST", "/openai/v1/chat/completions", map[string]any{"model": "support",
			"messages": []map[string]string{{"role": "user", "content": "hi"}}}, nil); st != 502 {
			t.Fatalf("a failing provider answered %d", st)
		}
	}
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/system")
	p.waitFor(`!!document.querySelector('table.providers tr[data-id="openai/chat"]')`, "the provider's chat row")
	row := p.text(`table.providers tr[data-id="openai/chat"]`)
	if !strings.Contains(row, "open") || !strings.Contains(row, "provider_failed") || strings.Contains(row, "sk-secret") {
		t.Fatalf("the provider's row: %q", row)
	}
}

// An operator lists runs, filters them by kind, and opens one: tokens,
// model and duration, and never the text of the conversation.
func TestRunsScreen(t *testing.T) {
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Secret reply text."}, providertest.Reply{Content: "Another reply."})
	b.chat("support", "r-1", "crm/1", "Private question one.")
	b.chat("guarded", "r-2", "crm/2", "Private question two.")
	_, err := b.pool.Exec(context.Background(), `INSERT INTO stackbone_platform.runs (id, kind, agent_id, status, model, input_tokens, output_tokens, started_at, duration_ms, metadata)
		VALUES (gen_random_uuid(), 'memory_extraction', 'support', 'failed', 'openai/extractor', 10, 0, now(), 77, '{}')`)
	if err != nil {
		t.Fatal(err)
	}
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/runs")
	p.waitFor(`document.querySelector("table.runs").dataset.rows === "3"`, "three runs")
	if got := p.text("main"); strings.Contains(got, "Private question") || strings.Contains(got, "Secret reply") {
		t.Fatalf("the runs screen shows conversation text: %q", got)
	}
	p.set("#run-filters input[name=kind]", "memory_extraction")
	p.js(`document.getElementById("run-filters").requestSubmit()`)
	p.waitFor(`location.hash.includes("kind=memory_extraction") && document.getElementById("root").dataset.state === "ready" &&
		document.querySelector("table.runs").dataset.rows === "1"`, "the extraction run alone")
	p.click("table.runs tbody tr td")
	p.waitFor(`!!document.getElementById("run")`, "the run's detail")
	if got := p.text("#run"); !strings.Contains(got, "openai/extractor") || !strings.Contains(got, "77 ms") {
		t.Fatalf("run detail %q", got)
	}
}

// A key's secret stays on the screen until the operator dismisses it: a
// second Create key (the same name again, refused, or another key) does
// not wipe it, and each new key's secret is shown beside the others.
func TestKeySecretStaysUntilDismissed(t *testing.T) {
	b := newBox(t)
	p := b.openAt(t, "#/keys")
	p.set("#new-key input[name=name]", "deploy")
	p.click(`#new-key input[value="sessions:read"]`)
	p.js(`document.getElementById("new-key").requestSubmit()`)
	// The secret is read wherever the form shows it (a read-only field
	// holding sbk_…).
	secrets := `[...document.querySelectorAll("#new-key input[readonly], #key-secrets input[readonly]")].map(i => i.value).filter(v => v.startsWith("sbk_"))`
	p.waitFor(secrets+`.length === 1`, "the first secret")
	var first string
	p.js(secrets+`[0]`, &first)
	if !strings.HasPrefix(first, "sbk_") {
		t.Fatalf("first secret %q", first)
	}
	// Create key again, as a second click does: the name is taken now.
	p.set("#new-key input[name=name]", "deploy")
	p.js(`document.getElementById("new-key").requestSubmit()`)
	p.waitFor(`!!document.querySelector("#key-result .error")`, "the refusal of the second Create key")
	var shown []string
	p.js(secrets, &shown)
	if len(shown) != 1 || shown[0] != first {
		t.Fatalf("after a second Create key the secrets shown are %q (the first was %q)", shown, first)
	}
	if st, _ := b.do(first, "GET", "/api/keys/self", nil, nil); st != 200 {
		t.Fatalf("the first key answered %d", st)
	}
	// Another key: both secrets are on the screen, each under its name.
	p.set("#new-key input[name=name]", "backup")
	p.js(`document.getElementById("new-key").requestSubmit()`)
	p.waitFor(`document.querySelectorAll("#key-secrets input.secret").length === 2`, "the second secret beside the first")
	var names []string
	p.js(`[...document.querySelectorAll("#key-secrets [data-name]")].map(e => e.dataset.name)`, &names)
	if strings.Join(names, ",") != "backup,deploy" {
		t.Fatalf("secrets shown for %q", names)
	}
	// Dismissed, a secret goes; the other stays.
	p.click(`#key-secrets [data-name="deploy"] button.dismiss`)
	p.waitFor(`document.querySelectorAll("#key-secrets input.secret").length === 1`, "the dismissed secret gone")
	p.js(`[...document.querySelectorAll("#key-secrets [data-name]")].map(e => e.dataset.name)`, &names)
	if strings.Join(names, ",") != "backup" {
		t.Fatalf("after the dismissal, secrets shown for %q", names)
	}
}
