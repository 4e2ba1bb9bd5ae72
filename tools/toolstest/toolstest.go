// Package toolstest is a real HTTP order service on loopback for the tests
// and benchmarks of agents' http tools, with the agent declaration that
// calls it:
//
//	orders := toolstest.NewOrders(t)
//	yaml := orders.AgentYAML("receptionist", "")
//	env := map[string]string{"ORDERS_TOKEN": toolstest.Token}
package toolstest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Token is the bearer token the service wants, read by the declaration
// from ORDERS_TOKEN.
const Token = "toolstest-orders-token-3e8a"

// Orders is the service: GET /orders/{id} answers
// {"order":ID,"status":"shipped","eta":"tomorrow"} after Delay.
type Orders struct {
	URL   string
	srv   *httptest.Server
	delay atomic.Int64
	calls atomic.Int64

	mu        sync.Mutex
	cancelled int
}

// NewOrders starts the service, stopped when the test ends.
func NewOrders(t testing.TB) *Orders {
	o := Start()
	t.Cleanup(o.Close)
	return o
}

// Start starts the service outside a test; Close stops it.
func Start() *Orders {
	o := &Orders{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		o.calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+Token {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if d := time.Duration(o.delay.Load()); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				o.mu.Lock()
				o.cancelled++
				o.mu.Unlock()
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"order":%q,"status":"shipped","eta":"tomorrow"}`, r.PathValue("id"))
	})
	o.srv = httptest.NewServer(mux)
	o.URL = o.srv.URL
	return o
}

// Close stops the service.
func (o *Orders) Close() { o.srv.Close() }

// SetDelay makes every answer wait d (a slow service).
func (o *Orders) SetDelay(d time.Duration) { o.delay.Store(int64(d)) }

// Calls is how many requests the service received.
func (o *Orders) Calls() int { return int(o.calls.Load()) }

// Cancelled is how many requests the caller gave up on while they waited.
func (o *Orders) Cancelled() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cancelled
}

// Answer is what the service answers for an order.
func Answer(id string) string {
	return fmt.Sprintf(`{"order":%q,"status":"shipped","eta":"tomorrow"}`, id)
}

// ToolYAML is the order_status tool's declaration, indented for an
// agent's tools list; extra lines (already indented by 8 spaces) follow.
func (o *Orders) ToolYAML(extra string) string {
	return fmt.Sprintf(`    tools:
      - name: order_status
        kind: http
        description: Look up an order by its number.
        method: GET
        url: %s/orders/{orderId}
        parameters: {type: object, properties: {orderId: {type: string}}, required: [orderId]}
        headers: {Authorization: "Bearer ${ORDERS_TOKEN}"}
%s`, o.URL, extra)
}

// Env is the environment the declaration reads its secret from.
func Env() map[string]string { return map[string]string{"ORDERS_TOKEN": Token} }
