package box_test

import (
	"context"
	"testing"
	"time"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/sip/siptest"
)

// talkOnce waits for the agent's greeting on c, says one thing, waits for
// the answer to be heard through (three heard entries on the call from
// number) and hangs up.
func talkOnce(t *testing.T, b *boxtest.Box, c *siptest.Call, number string) {
	t.Helper()
	ctx := context.Background()
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return c.Voiced() > 25 })
	c.Talk(1)
	poll.Until(t, "the answer heard through", 30*time.Second, func() bool {
		var n int
		err := b.Pool.QueryRow(ctx, `SELECT jsonb_array_length(stackbone_platform.heard_transcript(voice_calls)) FROM stackbone_platform.voice_calls WHERE phone_number = $1`, number).Scan(&n)
		return err == nil && n >= 3
	})
	if err := c.Hangup(ctx); err != nil {
		t.Error(err)
	}
}
