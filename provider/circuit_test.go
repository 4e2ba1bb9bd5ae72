package provider

import (
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/config"
)

// A circuit opens after its failures within the window (older ones do not
// count), refuses while open, lets one probe through after the cooldown,
// closes on the probe's success and reopens on its failure.
func TestCircuitOpensProbesAndCloses(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	c := newCircuit("p", config.Circuit{Failures: 3, Window: 10 * time.Second, Cooldown: 5 * time.Second}, func() time.Time { return now })
	c.Fail("provider_failed")
	now = now.Add(11 * time.Second) // the first failure leaves the window
	c.Fail("provider_failed")
	c.Fail("provider_timeout")
	if !c.Allow() || c.View().State != CircuitClosed {
		t.Fatalf("closed after 2 failures in the window: %+v", c.View())
	}
	c.Fail("provider_failed")
	if c.Allow() || c.View().State != CircuitOpen || c.View().Opened != 1 || len(c.View().LastFailures) != 4 {
		t.Fatalf("after 3 failures in the window: %+v", c.View())
	}
	now = now.Add(5 * time.Second)
	if !c.Allow() || c.Allow() || c.View().State != CircuitHalfOpen {
		t.Fatalf("after the cooldown: one probe, then none while it runs: %+v", c.View())
	}
	c.Fail("provider_failed") // the probe failed: open again, for a new cooldown
	if c.Allow() || c.View().State != CircuitOpen || c.View().Opened != 2 {
		t.Fatalf("after a failed probe: %+v", c.View())
	}
	now = now.Add(5 * time.Second)
	if !c.Allow() {
		t.Fatal("no probe after the second cooldown")
	}
	c.Success()
	if !c.Allow() || !c.Allow() || c.View().State != CircuitClosed {
		t.Fatalf("after a good probe: %+v", c.View())
	}
	// A busy provider's failures do not open it while most requests
	// succeed; one failing half its requests opens.
	for range 10 {
		c.Success()
	}
	for range 4 {
		c.Fail("provider_failed")
	}
	if c.View().State != CircuitClosed {
		t.Fatalf("4 failures among 14 requests opened the circuit: %+v", c.View())
	}
	for range 6 {
		c.Success()
		c.Fail("provider_failed")
		c.Fail("provider_failed")
	}
	if c.View().State != CircuitOpen {
		t.Fatalf("16 failures among 32 requests: %+v", c.View())
	}
	now = now.Add(5 * time.Second)
	if !c.Allow() {
		t.Fatal("no probe")
	}
	c.Success()
	// A probe that reached no verdict frees the slot for the next one.
	for range 3 {
		c.Fail("provider_failed")
	}
	now = now.Add(5 * time.Second)
	if !c.Allow() {
		t.Fatal("no probe")
	}
	c.Release()
	if !c.Allow() {
		t.Fatal("the released probe's slot stayed taken")
	}
}

// Many requests at once see one circuit.
func TestCircuitIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	c := newCircuit("p", config.Circuit{}, nil)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Allow() {
				if i%2 == 0 {
					c.Fail("provider_failed")
				} else {
					c.Success()
				}
			}
			_ = c.View()
		}()
	}
	wg.Wait()
}
