package studio_test

import (
	"strings"
	"testing"
	"time"
)

// A call's detail says who a warm transfer went to and how it ended.
func TestCallDetailShowsTheTransfer(t *testing.T) {
	b := newBox(t)
	b.insertCall("call_tr", "inbound", "receptionist", "+34600111555", "transferred", time.Now().Add(-time.Minute), `[]`,
		`{"read":true,"save":true,"saved":true}`,
		`[{"transfer":{"target":"sales","mode":"warm","result":"no_answer","ringMs":30000}},{"transfer":{"target":"billing","mode":"warm","result":"bridged","ringMs":1200}}]`)
	b.insertCall("call_plain_tr", "inbound", "receptionist", "+34600111556", "completed", time.Now().Add(-time.Minute), `[]`,
		`{"read":true,"save":true,"saved":true}`, `[]`)
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/calls/call_tr")
	p.waitFor(`!!document.getElementById("transfer")`, "the transfer")
	if got := p.text("#transfer"); got != "to sales: no answer: back to the caller (rang 30.0 s); to billing: joined (rang 1.2 s)" {
		t.Fatalf("transfer %q", got)
	}
	p.goTo("#/calls/call_plain_tr")
	var has bool
	p.js(`!!document.getElementById("transfer")`, &has)
	if has || strings.Contains(p.text("main"), "Transfer") {
		t.Fatal("a call without a transfer shows one")
	}
}
