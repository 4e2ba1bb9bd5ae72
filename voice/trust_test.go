package voice

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stackbone/box/identity"
)

// A call started through a key restricted to one person cannot be a call
// with another person: neither a browser call naming them nor an outbound
// call to their number opens.
func TestRestrictedKeyCannotStartAnotherPersonsCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := identity.WithPolicy(context.Background(), identity.Policy{Allowed: map[string]string{"email": "a@example.com"}})
	for _, info := range []CallInfo{
		{Direction: Browser, Agent: "mailer", Identities: identity.Set{"email": "b@example.com"}},
		{Direction: Browser, Agent: "receptionist", Identities: identity.Set{identity.PhoneNumber: "+15550002"}},
		{Direction: Outbound, Agent: "receptionist", PhoneNumber: "+15550002"},
	} {
		if call, err := e.mgr.Open(ctx, info); !errors.Is(err, identity.ErrForbidden) {
			t.Errorf("%+v: call %v, err %v; want ErrForbidden", info, call, err)
		}
	}
	// A key restricted to its own number may dial it, but naming another
	// person's identity beside it is refused, naming the field: the call
	// would otherwise read and save that person's memory.
	own := identity.WithPolicy(context.Background(), identity.Policy{Allowed: map[string]string{identity.PhoneNumber: "+15550001"}})
	for _, info := range []CallInfo{
		{Direction: Outbound, Agent: "mailer", PhoneNumber: "+15550001", Identities: identity.Set{"email": "victim@example.com"}},
	} {
		call, err := e.mgr.Open(own, info)
		if !errors.Is(err, identity.ErrForbidden) {
			t.Errorf("%+v: call %v, err %v; want ErrForbidden", info, call, err)
		} else if !strings.Contains(err.Error(), "email") {
			t.Errorf("%+v: %v does not name the identity", info, err)
		}
	}
	var opened int
	if err := e.mgr.cfg.Pool.QueryRow(context.Background(), `SELECT count(*) FROM stackbone_platform.voice_calls`).Scan(&opened); err != nil || opened != 0 {
		t.Fatalf("%d call records (%v) for refused calls", opened, err)
	}
}
