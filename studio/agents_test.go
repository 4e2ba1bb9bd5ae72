package studio_test

import (
	"strings"
	"testing"
)

// An operator turns save off for an agent (the value in force and its
// origin change, the next call would save nothing), saves instructions
// holding markup (kept and shown as text), is refused an over-long one
// with nothing changed, resets a field and reads the activity log; then
// fixes the identity key of an agent that had none.
func TestAgentsScreen(t *testing.T) {
	b := newBox(t)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/agents")
	p.waitFor(`!!document.querySelector('#agent-support [data-field=save] input')`, "the support agent's card")
	if got := p.text("#agent-support [data-field=save]"); !strings.Contains(got, "code") {
		t.Fatalf("save's origin before: %q", got)
	}
	p.click("#agent-support [data-field=save] input")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Applies to the next call")`, "the saved toggle")
	v, err := settingsOf(b, "support")
	if err != nil || v.Value.Save || v.Origins.Save != "studio" || !v.Value.Read {
		t.Fatalf("after turning save off: %+v %v", v, err)
	}
	if got := p.text("#agent-support [data-field=save]"); !strings.Contains(got, "studio") {
		t.Fatalf("save's origin after: %q", got)
	}

	hostile := `<script>window.pwned=1</script> Keep allergies.`
	p.set("#agent-support textarea[name=instructions]", hostile)
	p.clickText("#agent-support button", "Save instructions")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Instructions saved")`, "saved instructions")
	if v, _ := settingsOf(b, "support"); v.Value.Instructions == nil || *v.Value.Instructions != hostile {
		t.Fatalf("instructions stored %+v", v.Value.Instructions)
	}
	var shown string
	var pwned any
	p.js(`document.querySelector("#agent-support textarea[name=instructions]").value`, &shown)
	p.js(`window.pwned`, &pwned)
	if shown != hostile || pwned != nil {
		t.Fatalf("instructions shown %q, pwned %v", shown, pwned)
	}

	p.set("#agent-support textarea[name=instructions]", strings.Repeat("x", 20001))
	p.clickText("#agent-support button", "Save instructions")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("at most 20,000")`, "the refusal of long instructions")
	if v, _ := settingsOf(b, "support"); *v.Value.Instructions != hostile {
		t.Fatal("the refused instructions changed the stored ones")
	}
	p.click("#agent-support [data-field=save] button.reset")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("reset")`, "the reset")
	if v, _ := settingsOf(b, "support"); !v.Value.Save || v.Origins.Save != "code" {
		t.Fatalf("after reset: %+v", v)
	}
	p.js(`document.querySelector("#agent-support details.log").open = true`)
	p.waitFor(`document.querySelectorAll("#agent-support details.log li").length === 3`, "three entries in the activity log")
	if got := p.text("#agent-support details.log"); !strings.Contains(got, "key:admin") || strings.Contains(got, "Keep allergies") {
		t.Fatalf("activity log %q", got)
	}

	// The receptionist has no identity key: fixing one is confirmed first.
	p.set("#agent-receptionist input[name=identityKey]", "phoneNumber")
	p.click("#agent-receptionist button.fix")
	p.click("#agent-receptionist .confirm button.yes")
	p.waitFor(`!!document.querySelector("#agent-receptionist p.binding code")`, "the fixed binding")
	if v, _ := settingsOf(b, "receptionist"); v.Binding == nil || v.Binding.IdentityKey != "phoneNumber" {
		t.Fatalf("binding %+v", v.Binding)
	}
}

type settingsView struct {
	Value struct {
		Read, Save   bool
		Instructions *string
	}
	Origins struct{ Read, Save, Instructions string }
	Binding *struct{ IdentityKey string }
}

func settingsOf(b *box, name string) (settingsView, error) {
	var v settingsView
	if st, code := b.do(adminKey, "GET", "/api/memory/settings/"+name, nil, &v); st != 200 {
		b.t.Fatalf("settings of %s: %d %s", name, st, code)
	}
	return v, nil
}
