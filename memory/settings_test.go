package memory_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
)

func newSettings(t *testing.T, agents map[string]*config.AgentMemory) (*memory.Settings, *harness) {
	t.Helper()
	h := newHarness(t)
	s := memory.NewSettings(h.pool, agents, pgtest.Logger(t))
	if err := s.FixDeclaredKeys(h.ctx); err != nil {
		t.Fatal(err)
	}
	return s, h
}

func TestSettingsOrigins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	policy := "Remember product preferences."
	s, h := newSettings(t, map[string]*config.AgentMemory{
		"support": {IdentityKey: "customerId", Read: ptr(true), Instructions: &policy},
		"bare":    nil,
	})
	v, err := s.Get(ctx, "support")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Value.Read || v.Value.Save || *v.Value.Instructions != policy ||
		v.Origins != (memory.Origins{Read: "code", Save: "default", Instructions: "code"}) ||
		v.Overrides != (memory.Overrides{}) {
		t.Fatalf("code defaults: %+v", v)
	}
	if v.Binding == nil || v.Binding.IdentityKey != "customerId" || v.Binding.Source != "code" || v.Binding.FixedAt.IsZero() {
		t.Fatalf("binding from code: %+v", v.Binding)
	}

	// An explicit false is an override.
	v, err = s.Put(ctx, "key:ops", "support", memory.Patch{Read: ptr(false), Save: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	if v.Value.Read || !v.Value.Save || v.Origins.Read != "studio" || v.Origins.Save != "studio" ||
		v.Overrides.Read == nil || *v.Overrides.Read || v.Origins.Instructions != "code" {
		t.Fatalf("after put: %+v", v)
	}
	// Omitted fields stay unchanged.
	v, _ = s.Put(ctx, "key:ops", "support", memory.Patch{Instructions: ptr("Studio policy.")})
	if v.Value.Read || !v.Value.Save || *v.Value.Instructions != "Studio policy." || v.Origins.Instructions != "studio" {
		t.Fatalf("partial put: %+v", v)
	}
	// Reset one field falls back to code; the others stay.
	v, _ = s.Reset(ctx, "key:ops", "support", "read")
	if !v.Value.Read || v.Origins.Read != "code" || v.Origins.Save != "studio" || v.Overrides.Read != nil {
		t.Fatalf("reset read: %+v", v)
	}
	// Reset all falls back to the current code and default.
	v, _ = s.Reset(ctx, "key:ops", "support", "")
	if v.Origins != (memory.Origins{Read: "code", Save: "default", Instructions: "code"}) || *v.Value.Instructions != policy {
		t.Fatalf("reset all: %+v", v)
	}
	// Overrides persist across a restart: a new Settings reads them back.
	s.Put(ctx, "key:ops", "support", memory.Patch{Save: ptr(false)})
	s2 := memory.NewSettings(h.pool, map[string]*config.AgentMemory{"support": {Read: ptr(true)}}, nil)
	v, _ = s2.Get(ctx, "support")
	if v.Origins.Save != "studio" || v.Value.Save || v.Origins.Instructions != "default" || v.Value.Instructions != nil {
		t.Fatalf("after restart with changed code: %+v", v)
	}

	// An agent without a memory block: defaults, no binding.
	v, _ = s.Get(ctx, "bare")
	if v.Value.Read || v.Value.Save || v.Value.Instructions != nil || v.Value.IdentityKey != nil || v.Binding != nil ||
		v.Origins != (memory.Origins{Read: "default", Save: "default", Instructions: "default"}) {
		t.Fatalf("bare agent: %+v", v)
	}

	// Unknown agents and invalid values.
	for _, err := range []error{
		func() error { _, err := s.Get(ctx, "nobody"); return err }(),
		func() error { _, err := s.Put(ctx, "key:ops", "nobody", memory.Patch{Read: ptr(true)}); return err }(),
		func() error { _, err := s.Reset(ctx, "key:ops", "nobody", ""); return err }(),
	} {
		wantCode(t, err, memory.ErrUnknownAgent)
	}
	for _, p := range []memory.Patch{{}, {Instructions: ptr("")}, {Instructions: ptr(strings.Repeat("x", 20001))}, {IdentityKey: ptr("")}, {IdentityKey: ptr(strings.Repeat("k", 101))}} {
		_, err := s.Put(ctx, "key:ops", "support", p)
		wantCode(t, err, memory.ErrInvalidRequest)
	}
	_, err = s.Reset(ctx, "key:ops", "support", "identityKey")
	wantCode(t, err, memory.ErrInvalidRequest)

	// The activity log names fields, never instruction text.
	rows, _ := h.pool.Query(ctx, `SELECT actor, action, subject, fields FROM stackbone_platform.activity_log ORDER BY id`)
	var log []string
	for rows.Next() {
		var actor, action, subject string
		var fields []string
		rows.Scan(&actor, &action, &subject, &fields)
		log = append(log, actor+" "+action+" "+subject+" "+strings.Join(fields, ","))
	}
	want := []string{
		"key:ops memory.settings.saved agent:support read,save",
		"key:ops memory.settings.saved agent:support instructions",
		"key:ops memory.settings.reset agent:support read",
		"key:ops memory.settings.reset agent:support read,save,instructions",
		"key:ops memory.settings.saved agent:support save",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("activity log:\n%q\nwant\n%q", log, want)
	}
	var leaked int
	h.pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.activity_log WHERE array_to_string(fields, ' ') LIKE '%Studio policy%'`).Scan(&leaked)
	if leaked != 0 {
		t.Fatal("instruction text in the activity log")
	}
}

func TestIdentityKeyIsFixedForGood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, h := newSettings(t, map[string]*config.AgentMemory{"support": {IdentityKey: "customerId"}, "fresh": {Read: ptr(true)}})

	// Code fixed support's key at startup; the same key again succeeds.
	if _, err := s.Put(ctx, "key:ops", "support", memory.Patch{IdentityKey: ptr("customerId")}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(ctx, "key:ops", "support", memory.Patch{IdentityKey: ptr("email"), Read: ptr(true)})
	wantCode(t, err, memory.ErrIdentityKeyFixed)
	// A refused put saves nothing else either.
	if v, _ := s.Get(ctx, "support"); v.Overrides.Read != nil {
		t.Fatal("a refused put saved read")
	}

	// An agent without a declared key: null binding until the first PUT.
	v, _ := s.Get(ctx, "fresh")
	if v.Binding != nil {
		t.Fatalf("binding before configuration: %+v", v.Binding)
	}
	v, err = s.Put(ctx, "key:ops", "fresh", memory.Patch{IdentityKey: ptr("contact.email")})
	if err != nil || v.Binding == nil || v.Binding.IdentityKey != "contact.email" || v.Binding.Source != "studio" || *v.Value.IdentityKey != "contact.email" {
		t.Fatalf("first put: %+v %v", v, err)
	}
	fixedAt := v.Binding.FixedAt
	_, err = s.Put(ctx, "key:ops", "fresh", memory.Patch{IdentityKey: ptr("phoneNumber")})
	wantCode(t, err, memory.ErrIdentityKeyFixed)

	// Reset, erasure and removing or changing the code declaration keep it.
	s.Reset(ctx, "key:ops", "fresh", "")
	h.svc.DeleteAll(ctx, "fresh", "someone")
	changed := memory.NewSettings(h.pool, map[string]*config.AgentMemory{"support": {IdentityKey: "phoneNumber"}, "fresh": nil}, nil)
	if err := changed.FixDeclaredKeys(ctx); err != nil {
		t.Fatal(err)
	}
	for agent, key := range map[string]string{"support": "customerId", "fresh": "contact.email"} {
		v, _ := changed.Get(ctx, agent)
		if v.Binding == nil || v.Binding.IdentityKey != key {
			t.Fatalf("%s: binding %+v, want %s kept", agent, v.Binding, key)
		}
	}
	if v, _ := changed.Get(ctx, "fresh"); !v.Binding.FixedAt.Equal(fixedAt) {
		t.Fatal("fixedAt moved")
	}

	// Concurrent first configurations: exactly one key wins.
	s3, _ := newSettings(t, map[string]*config.AgentMemory{"race": nil})
	keys := []string{"a", "b", "c", "d", "e", "f"}
	errs := make(chan error, len(keys))
	for _, k := range keys {
		go func(k string) {
			_, err := s3.Put(ctx, "key:ops", "race", memory.Patch{IdentityKey: &k})
			errs <- err
		}(k)
	}
	ok := 0
	for range keys {
		err := <-errs
		if err == nil {
			ok++
		} else if !errors.Is(err, memory.ErrIdentityKeyFixed) {
			t.Fatal(err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d concurrent first keys accepted, want 1", ok)
	}
}
