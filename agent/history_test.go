package agent

import (
	"strings"
	"testing"
	"time"
)

// The cache keeps what fits in its bound, the most recently used first,
// and never holds a conversation larger than the bound.
func TestHistoryCacheStaysWithinItsBound(t *testing.T) {
	t.Parallel()
	conv := func(n int) []Message { return []Message{{Role: RoleUser, Content: strings.Repeat("x", n)}} }
	one := historySize(conv(1000))
	c := historyCache{max: 3 * one}
	at := time.Now()
	for _, id := range []string{"a", "b", "c"} {
		c.put(id, 1, at, conv(1000))
	}
	if _, ok := c.get("a"); !ok { // a is now the most recent
		t.Fatal("a fits and was dropped")
	}
	c.put("d", 1, at, conv(1000)) // b, the least recently used, goes
	if _, ok := c.get("b"); ok {
		t.Fatal("b should have made room for d")
	}
	for _, id := range []string{"a", "c", "d"} {
		if _, ok := c.get(id); !ok {
			t.Fatalf("%s dropped", id)
		}
	}
	c.put("c", 2, at, conv(2000)) // c grows: it takes two places, a goes
	if got, ok := c.get("c"); !ok || got.step != 2 {
		t.Fatalf("c after it grew: %+v %v", got, ok)
	}
	if c.size > c.max {
		t.Fatalf("size %d over the bound %d", c.size, c.max)
	}
	c.put("huge", 1, at, conv(4000))
	if _, ok := c.get("huge"); ok || c.size > c.max {
		t.Fatalf("a conversation larger than the bound was kept (size %d)", c.size)
	}
	c.drop("c")
	c.drop("d")
	if c.size != 0 || c.lru.Len() != 0 {
		t.Fatalf("emptied cache: size %d, %d entries", c.size, c.lru.Len())
	}
}
