package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/postgres/notify"
	"github.com/stackbone/box/postgres/pgtest"
)

// Two boxes on one database: a key revoked on one stops working on the
// other, although the other had it cached, through LISTEN/NOTIFY.
func TestRevocationReachesAnotherBoxCache(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := pgtest.Pool(t)
	a, b := auth.NewStore(pool), auth.NewStore(pool)
	l := notify.New(pool, pgtest.Logger(t))
	l.Subscribe("auth", b.Invalidate)
	go l.Run(ctx)

	secret, _, err := a.Create(ctx, "ops", []string{auth.ScopeRunsRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, secret); err != nil { // now cached on b
		t.Fatal(err)
	}
	if err := a.Revoke(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.Authenticate(ctx, secret)
		if errors.Is(err, auth.ErrUnauthenticated) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other box still accepts a revoked key: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The revoking box itself refuses at once.
	if _, err := a.Authenticate(ctx, secret); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("revoking box: %v", err)
	}
}

// A revoked key stays revoked: `stackbone dev` (Ensure) does not bring the
// dev key back.
func TestRevocationSticks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := auth.NewStore(pgtest.Pool(t))
	if err := keys.Ensure(ctx, auth.DevKey, auth.DevKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	if live, err := keys.Live(ctx, auth.DevKey); err != nil || !live {
		t.Fatalf("live = %v, %v", live, err)
	}
	if err := keys.Revoke(ctx, auth.DevKey); err != nil {
		t.Fatal(err)
	}
	if err := keys.Ensure(ctx, auth.DevKey, auth.DevKey, auth.AllScopes); !errors.Is(err, auth.ErrRevoked) {
		t.Fatalf("Ensure after revoke: %v", err)
	}
	if _, err := keys.Authenticate(ctx, auth.DevKey); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("the revoked dev key authenticates: %v", err)
	}
	if live, _ := keys.Live(ctx, auth.DevKey); live {
		t.Fatal("the revoked dev key is live")
	}
}

// A restricted key keeps its identities through the store.
func TestRestrictedKeyRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := auth.NewStore(pgtest.Pool(t))
	secret, _, err := keys.CreateRestricted(ctx, "browser", []string{auth.ScopeAgentsRun}, map[string]string{"customerId": "cust_*"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := keys.Authenticate(ctx, secret)
	if err != nil || !k.Restricted() || k.Identities["customerId"] != "cust_*" {
		t.Fatalf("key = %+v, %v", k, err)
	}
	if _, _, err := keys.CreateRestricted(ctx, "all", []string{auth.ScopeAgentsRun}, map[string]string{"customerId": "*"}); err == nil {
		t.Fatal("a restriction to * was taken")
	}
	trusted, _, _ := keys.Create(ctx, "backend", []string{auth.ScopeAgentsRun})
	if k, _ := keys.Authenticate(ctx, trusted); k.Restricted() {
		t.Fatal("a plain key is restricted")
	}
}
