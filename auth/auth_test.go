package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/store/notify"
	"github.com/stackbone/box/store/storetest"
)

// Two boxes on one database: a key revoked on one stops working on the
// other, although the other had it cached, through LISTEN/NOTIFY.
func TestRevocationReachesAnotherBoxCache(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := storetest.Pool(t)
	a, b := auth.NewStore(pool), auth.NewStore(pool)
	l := notify.New(pool, storetest.Logger(t))
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
