package box_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/lockedbuf"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/webhooks"
)

// receiver is a webhook endpoint on loopback that verifies every
// signature and deduplicates on webhook-id, as a receiver should. Its
// misbehaviour is chosen per request.
type receiver struct {
	t      *testing.T
	url    string
	secret string
	// fail says how to treat the n-th request (from 1) of an event id:
	// "ok", "500" or "hang" (until the box gives up).
	fail func(total, ofID int) string

	mu       sync.Mutex
	total    int
	perID    map[string]int
	events   map[string]map[string]any // by webhook-id, the first accepted body
	hanging  int
	hungAt   []time.Time
	badSigns int
}

func newReceiver(t *testing.T, fail func(total, ofID int) string) *receiver {
	r := &receiver{t: t, fail: fail, perID: map[string]int{}, events: map[string]map[string]any{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: r}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Close() })
	r.url = "http://" + ln.Addr().String() + "/hook"
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if err := webhooks.Verify(secret, req.Header, body, time.Now(), 0); err != nil {
		r.mu.Lock()
		r.badSigns++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id := req.Header.Get(webhooks.HeaderID)
	r.mu.Lock()
	r.total++
	r.perID[id]++
	how := r.fail(r.total, r.perID[id])
	if how == "hang" {
		r.hanging++
		r.hungAt = append(r.hungAt, time.Now())
	}
	r.mu.Unlock()
	switch how {
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
		return
	case "hang":
		<-req.Context().Done() // the box's timeout ends it
		r.mu.Lock()
		r.hanging--
		r.mu.Unlock()
		return
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		r.t.Errorf("a delivery is not JSON: %v", err)
	}
	r.mu.Lock()
	if _, seen := r.events[id]; !seen {
		r.events[id] = ev
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// byType is the deduplicated events of each type.
func (r *receiver) byType() map[string][]map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]map[string]any{}
	for _, ev := range r.events {
		typ, _ := ev["type"].(string)
		out[typ] = append(out[typ], ev)
	}
	return out
}

func (r *receiver) requestsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.perID[id]
}

// Events reach two receivers through River: one that fails the first three
// deliveries it gets and one that hangs on the first attempt of every
// event. Each sees every event of a call, of its memory save and of a
// document ingest exactly once after deduplication, signed; the transcript
// goes only to the subscription that asked for it; the delivery log shows
// the failures and the timeouts; a replay resends the same event id. A
// call placed while the hanging receiver holds deliveries is set up as
// fast as one placed with no subscription at all, and calls placed while
// every delivery to it hangs as fast as calls placed while it answers.
func TestWebhooksDeliverEveryEventOnce(t *testing.T) {
	t.Parallel()
	phone := siptest.NewPhone(t)
	var logs lockedbuf.Buffer
	b := boxtest.New(t, fmt.Sprintf(`
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, this is the front desk calling.
    memory: {identityKey: phoneNumber, read: true, save: true}
sip:
  trunks:
    outbound:
      - {name: out, proxy: "%s"}
`, phone.Addr), boxtest.LogTo(&logs), boxtest.TuneWebhooks(func(c *webhooks.Config) {
		c.Timeout = 700 * time.Millisecond
		c.Backoff = func(int) time.Duration { return 50 * time.Millisecond }
	}))
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Asked for a call back."}],"summary":"An outbound call."}`}
	})
	c := &client{t: t, url: b.URL}
	ctx := context.Background()

	// call places an outbound call, waits for the greeting to be heard,
	// hangs it up and waits for its save; it returns its id and its setup
	// time (the dial request to the phone answering).
	call := func(number string) (string, time.Duration) {
		t.Helper()
		start := time.Now()
		_, raw := c.want(boxtest.Key, "POST", "/api/voice/calls", fmt.Sprintf(`{"agent":"receptionist","to":%q,"trunk":"out"}`, number), nil, 202)
		var out struct {
			Data struct {
				CallID string `json:"callId"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(raw), &out); err != nil || out.Data.CallID == "" {
			t.Fatalf("dial: %s", raw)
		}
		var sc *siptest.Call
		select {
		case sc = <-phone.Answered():
		case <-time.After(20 * time.Second):
			t.Fatal("the phone was never called")
		}
		setup := time.Since(start)
		poll.Until(t, "the greeting to be heard through", 20*time.Second, func() bool {
			var n int
			err := b.Pool.QueryRow(ctx, `SELECT jsonb_array_length(stackbone_platform.heard_transcript(voice_calls)) FROM stackbone_platform.voice_calls WHERE id = $1`, out.Data.CallID).Scan(&n)
			return err == nil && n >= 1 && sc.Voiced() > 20
		})
		c.want(boxtest.Key, "POST", "/api/voice/calls/"+out.Data.CallID+"/hangup", "", nil, 202)
		// The save, then the end recorded (call.ended says whether it
		// saved, so it is written after the save).
		poll.Until(t, "the call's save and end", 30*time.Second, func() bool {
			var saves, ended int
			_ = b.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM stackbone_platform.memory_calls WHERE run_id = $1),
				(SELECT count(*) FROM stackbone_platform.voice_calls WHERE id = $1 AND status = 'ended')`, out.Data.CallID).Scan(&saves, &ended)
			return saves == 1 && ended == 1
		})
		return out.Data.CallID, setup
	}

	// A call with no subscription: the baseline, and no event recorded.
	_, baseline := call("+34600100300")
	var events int
	if err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.webhook_events`).Scan(&events); err != nil || events != 0 {
		t.Fatalf("%d events recorded with no subscription (%v)", events, err)
	}

	flaky := newReceiver(t, func(total, _ int) string {
		if total <= 3 {
			return "500"
		}
		return "ok"
	})
	var hangAll atomic.Bool // every attempt hangs, while calls are measured
	slow := newReceiver(t, func(_, ofID int) string {
		if ofID == 1 || hangAll.Load() {
			return "hang"
		}
		return "ok"
	})
	subscribe := func(r *receiver, body string) string {
		_, raw := c.want(boxtest.Key, "POST", "/api/webhooks", body, nil, 201)
		var out struct {
			Data webhooks.Subscription `json:"data"`
		}
		if err := json.Unmarshal([]byte(raw), &out); err != nil || !strings.HasPrefix(out.Data.Secret, "whsec_") {
			t.Fatalf("create: %s", raw)
		}
		r.mu.Lock()
		r.secret = out.Data.Secret
		r.mu.Unlock()
		return out.Data.ID
	}
	all := `"call.started","call.answered","call.ended","memory.saved","rag.document.ingested"`
	flakyID := subscribe(flaky, fmt.Sprintf(`{"url":%q,"events":[%s],"includeTranscript":true}`, flaky.url, all))
	slowID := subscribe(slow, fmt.Sprintf(`{"url":%q,"events":[%s]}`, slow.url, all))
	// The secret is shown once.
	if _, raw := c.want(boxtest.Key, "GET", "/api/webhooks/"+flakyID, "", nil, 200); strings.Contains(raw, "whsec_") {
		t.Fatalf("a subscription read back shows its secret: %s", raw)
	}
	c.want(boxtest.Key, "POST", "/api/webhooks", `{"url":"ftp://x","events":["call.ended"]}`, nil, 400)
	c.want(boxtest.Key, "POST", "/api/webhooks", fmt.Sprintf(`{"url":%q,"events":["call.nothing"]}`, flaky.url), nil, 400)

	// The measured call: the hanging receiver holds its first deliveries
	// while the call is set up and greets.
	began := time.Now()
	id, setup := call("+34600100400")
	slow.mu.Lock()
	hungDuringCall := slices.ContainsFunc(slow.hungAt, func(at time.Time) bool { return at.After(began) && at.Before(began.Add(setup+time.Second)) })
	slow.mu.Unlock()
	if !hungDuringCall {
		t.Error("the hanging receiver was not holding a delivery while the call was set up")
	}
	t.Logf("call setup: %v with no subscription, %v with a failing and a hanging receiver subscribed", baseline, setup)
	if setup > baseline+500*time.Millisecond {
		t.Errorf("the call took %v to set up with a hanging receiver, %v without", setup, baseline)
	}

	// A document ingested with its own vectors.
	if _, err := b.RAG.CreateCollection(ctx, rag.CreateCollection{Name: "faq", Model: "openai/embed", Dimensions: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RAG.IngestEmbedded(ctx, rag.IngestRequest{ID: "doc-1", Collection: "faq", Chunks: []rag.Chunk{{Content: "Opening hours."}}},
		[][]float32{{1, 0, 0}}); err != nil {
		t.Fatal(err)
	}

	want := []string{"call.answered", "call.ended", "call.started", "memory.saved", "rag.document.ingested"}
	complete := func(r *receiver) bool {
		got := r.byType()
		for _, typ := range want {
			if len(got[typ]) != 1 {
				return false
			}
		}
		return len(got) == len(want)
	}
	poll.Until(t, "every event at both receivers", 60*time.Second, func() bool { return complete(flaky) && complete(slow) })
	// A receiver has an event before the box records its answer: the log
	// is read once every delivery is recorded as delivered.
	poll.Until(t, "every delivery recorded as delivered", 30*time.Second, func() bool {
		var delivered, all int
		err := b.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'delivered'), count(*)
			FROM stackbone_platform.webhook_deliveries`).Scan(&delivered, &all)
		return err == nil && all == 2*len(want) && delivered == all
	})

	for name, r := range map[string]*receiver{"failing": flaky, "hanging": slow} {
		r.mu.Lock()
		if r.badSigns > 0 {
			t.Errorf("the %s receiver got %d deliveries with a bad signature", name, r.badSigns)
		}
		r.mu.Unlock()
		got := r.byType()
		ended := got["call.ended"][0]["data"].(map[string]any)
		if ended["callId"] != id || ended["outcome"] != "operator_hangup" || ended["durationSeconds"] == nil || ended["answeredAt"] == nil {
			t.Errorf("%s: call.ended data %v", name, ended)
		}
		_, hasTranscript := ended["transcript"]
		if hasTranscript != (r == flaky) {
			t.Errorf("%s: transcript in call.ended: %v", name, hasTranscript)
		}
		if started := got["call.started"][0]["data"].(map[string]any); started["callId"] != id || started["phoneNumber"] != "+34600100400" {
			t.Errorf("%s: call.started data %v", name, started)
		}
		if saved := got["memory.saved"][0]["data"].(map[string]any); saved["added"] != float64(1) || saved["runId"] != id {
			t.Errorf("%s: memory.saved data %v", name, saved)
		}
		if doc := got["rag.document.ingested"][0]["data"].(map[string]any); doc["documentId"] != "doc-1" || doc["collection"] != "faq" {
			t.Errorf("%s: rag.document.ingested data %v", name, doc)
		}
	}
	if tr, _ := flaky.byType()["call.ended"][0]["data"].(map[string]any)["transcript"].([]any); len(tr) == 0 {
		t.Error("the transcript the subscription asked for is empty")
	}

	// The log: the failing receiver's 500s, the hanging one's timeouts.
	type delivery = webhooks.Delivery
	log := func(sub string) []delivery {
		_, raw := c.want(boxtest.Key, "GET", "/api/webhooks/"+sub+"/deliveries?limit=200", "", nil, 200)
		var out struct {
			Data []delivery `json:"data"`
		}
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatal(err)
		}
		return out.Data
	}
	var fails, timeouts int
	for _, d := range log(flakyID) {
		for _, a := range d.Attempts {
			if a.StatusCode != nil && *a.StatusCode == 500 {
				fails++
			}
		}
	}
	slowLog := log(slowID)
	for _, d := range slowLog {
		if d.Status != webhooks.StatusDelivered {
			t.Errorf("delivery %s of %s is %s", d.ID, d.EventType, d.Status)
		}
		if len(d.Attempts) < 2 || d.Attempts[0].Error == nil || *d.Attempts[0].Error != "timeout" || d.Attempts[0].StatusCode != nil {
			t.Errorf("delivery %s of %s: attempts %+v, want a timeout first", d.ID, d.EventType, d.Attempts)
			continue
		}
		timeouts++
		if d.Attempts[0].LatencyMS < 600 || d.Attempts[0].LatencyMS > 5000 {
			t.Errorf("a timed-out attempt took %d ms (timeout 700 ms)", d.Attempts[0].LatencyMS)
		}
	}
	if fails != 3 || timeouts != len(want) || len(slowLog) != len(want) {
		t.Fatalf("log: %d answers 500 (want 3), %d timeouts in %d deliveries (want %d)", fails, timeouts, len(slowLog), len(want))
	}

	// A replay resends the same event id; the receiver deduplicates it.
	d := slowLog[0]
	before := slow.requestsOf(d.EventID)
	c.want(boxtest.Key, "POST", "/api/webhooks/"+slowID+"/deliveries/"+d.ID+"/replay", "", nil, 202)
	poll.Until(t, "the replay", 20*time.Second, func() bool { return slow.requestsOf(d.EventID) == before+1 })
	poll.Until(t, "the replay in the log", 20*time.Second, func() bool {
		_, raw := c.want(boxtest.Key, "GET", "/api/webhooks/"+slowID+"/deliveries/"+d.ID, "", nil, 200)
		var out struct {
			Data delivery `json:"data"`
		}
		_ = json.Unmarshal([]byte(raw), &out)
		n := len(out.Data.Attempts)
		return n > 0 && out.Data.Attempts[n-1].Replay && out.Data.Attempts[n-1].StatusCode != nil && *out.Data.Attempts[n-1].StatusCode == 204
	})
	if !complete(slow) {
		t.Fatal("a replay showed up as a new event")
	}
	c.want(boxtest.Key, "POST", "/api/webhooks/"+slowID+"/deliveries/dlv_nothing/replay", "", nil, 404)

	// Setup times of calls placed while every delivery to the slow
	// receiver hangs (its deliveries fill the box's delivery workers) and
	// while it answers at once, taken in turn.
	quick := func(number string) time.Duration {
		t.Helper()
		start := time.Now()
		_, raw := c.want(boxtest.Key, "POST", "/api/voice/calls", fmt.Sprintf(`{"agent":"receptionist","to":%q,"trunk":"out"}`, number), nil, 202)
		var out struct {
			Data struct {
				CallID string `json:"callId"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatal(err)
		}
		select {
		case <-phone.Answered():
		case <-time.After(20 * time.Second):
			t.Fatal("the phone was never called")
		}
		setup := time.Since(start)
		c.want(boxtest.Key, "POST", "/api/voice/calls/"+out.Data.CallID+"/hangup", "", nil, 202)
		poll.Until(t, "the call to end", 20*time.Second, func() bool {
			var st string
			_ = b.Pool.QueryRow(ctx, `SELECT status FROM stackbone_platform.voice_calls WHERE id = $1`, out.Data.CallID).Scan(&st)
			return st == "ended"
		})
		return setup
	}
	var hung, free []time.Duration
	for i := range 8 {
		hangAll.Store(i%2 == 0)
		d := quick(fmt.Sprintf("+3460020%04d", i))
		if i%2 == 0 {
			hung = append(hung, d)
		} else {
			free = append(free, d)
		}
	}
	hangAll.Store(false)
	slices.Sort(hung)
	slices.Sort(free)
	t.Logf("call setup while a receiver hangs: median %v, max %v; while it answers: median %v, max %v", hung[len(hung)/2], hung[len(hung)-1], free[len(free)/2], free[len(free)-1])
	if hung[len(hung)/2] > free[len(free)/2]+150*time.Millisecond || hung[len(hung)-1] > 2*time.Second {
		t.Errorf("calls were set up slower while a receiver hung: %v against %v", hung, free)
	}

	// Deleting a subscription takes its log with it.
	c.want(boxtest.Key, "DELETE", "/api/webhooks/"+slowID, "", nil, 200)
	c.want(boxtest.Key, "GET", "/api/webhooks/"+slowID+"/deliveries", "", nil, 404)
	_, raw := c.want(boxtest.Key, "GET", "/api/webhooks", "", nil, 200)
	if strings.Contains(raw, slowID) || !strings.Contains(raw, flakyID) || strings.Contains(raw, "whsec_") {
		t.Fatalf("list after delete: %s", raw)
	}
	// Neither a secret nor what was said reaches the logs.
	flaky.mu.Lock()
	secret := flaky.secret
	flaky.mu.Unlock()
	if text := logs.String(); strings.Contains(text, secret) || strings.Contains(text, "whsec_") || strings.Contains(text, "front desk") {
		t.Error("the logs hold a signing secret or the transcript")
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for typ := range flaky.byType() {
			if !yield(typ) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("types %v", got)
	}
}
