package voice

import (
	"context"
	"errors"
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
}
