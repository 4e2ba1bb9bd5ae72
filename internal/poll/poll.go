// Package poll is the one way the box's tests wait: poll a condition until
// it holds or a deadline passes, never a fixed sleep.
//
//	poll.Until(t, "the call to complete", 20*time.Second, func() bool { return done(call) })
package poll

import (
	"testing"
	"time"
)

// Every is how often Until checks its condition.
const Every = 10 * time.Millisecond

// Until checks cond every 10 ms until it holds, and fails the test (saying
// what it waited for) if it does not within limit.
func Until(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(Every)
	}
}
