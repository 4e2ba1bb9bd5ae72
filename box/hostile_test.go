package box_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
)

// hostileBodies is how many hostile requests the test sends in all, spread
// over every route the box registers.
const hostileBodies = 10000

// hostileAgents declares no outbound trunk: a well-formed dial is the one
// 503 a hostile body may earn (voice_no_trunk).
const hostileAgents = `
agents:
  support:
    model: openai/chat
    instructions: You are the support agent.
    memory: {identityKey: customerId, read: true, save: true}
  receptionist:
    model: openai/chat
    greeting: Hello.
    memory: {identityKey: phoneNumber, read: true, save: true}
`

// Ten thousand hostile requests across every route family, with the key
// that may do everything: random bytes, truncated and type-confused JSON,
// deep nesting, huge numbers, NUL and invalid UTF-8, long strings, odd
// path values and query strings. None is answered 500 or breaks the
// connection, and the box is healthy afterwards.
func TestHostileBodiesOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, hostileAgents)
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[],"summary":"A short talk."}`}
		}
		return providertest.Reply{Content: "ok"}
	})
	var routes []string
	for _, r := range b.API.Routes() {
		routes = append(routes, r.Pattern)
	}
	slices.Sort(routes)
	rng := rand.New(rand.NewPCG(1, uint64(len(routes))))
	c := &client{t: t, url: b.URL}
	statuses := map[int]int{}
	for i := range hostileBodies {
		pattern := routes[i%len(routes)]
		method, path := hostileRequest(rng, pattern)
		body := hostileBody(rng)
		req, err := http.NewRequest(method, c.url+path, bytes.NewReader(body))
		if err != nil {
			continue // not a request a client can send
		}
		req.Header.Set("Authorization", "Bearer "+boxtest.Key)
		req.Header.Set("Content-Type", hostileContentType(rng))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s with %q: the connection broke: %v", method, path, clip(string(body)), err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		statuses[resp.StatusCode]++
		if resp.StatusCode >= 500 && !(resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(raw), "voice_no_trunk")) {
			t.Errorf("%s %s (route %s) with %q: %d %s", method, path, pattern, clip(string(body)), resp.StatusCode, clip(string(raw)))
		}
	}
	c.want("", "GET", "/healthz", "", nil, 200)
	t.Logf("statuses: %v", statuses)
}

// hostileRequest fills pattern's path values with hostile text and may add
// a hostile query string.
func hostileRequest(rng *rand.Rand, pattern string) (method, path string) {
	values := []string{"x1", "support", "%00", "..%2F..%2Fetc%2Fpasswd", "%FF%FE", strings.Repeat("a", 5000), "room_" + strings.Repeat("0", 36),
		"call_00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000", "%E2%80%AE", "-1", "1e309", "null", "%20"}
	method, path = requestFor(pattern, func(string) string { return values[rng.IntN(len(values))] })
	if rng.IntN(3) == 0 {
		q := url.Values{}
		for _, k := range []string{"limit", "before", "after", "from", "to", "agent", "status", "kind", "q", "direction", "number", "cursor", "offset", "field"} {
			if rng.IntN(3) == 0 {
				q.Set(k, []string{"-1", "99999999999999999999", "x\x00y", "\xff", "2026-13-45", strings.Repeat("z", 3000), "", "' OR 1=1 --"}[rng.IntN(8)])
			}
		}
		path += "?" + q.Encode()
	}
	return method, path
}

// fields are names the box's bodies use, so type confusion reaches the
// decoders' checks and not only their unknown-field refusal.
var fields = []string{"agentId", "userId", "content", "call", "instructions", "calls", "name", "scopes", "identities", "anyIdentity",
	"agent", "to", "trunk", "type", "sdp", "model", "messages", "input", "stream", "user", "max_tokens", "metadata", "threadId",
	"runId", "forwardedProps", "tools", "query", "collection", "topK", "text", "path", "description", "read", "save", "decision",
	"reasoningEffort", "prompt", "filter", "metadata", "documents", "previous_response_id", "role", "system", "temperature"}

// hostileValue is a JSON value of a random kind, some of them hostile.
func hostileValue(rng *rand.Rand, depth int) string {
	switch rng.IntN(12) {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[rng.IntN(2)]
	case 2:
		return []string{"0", "-1", "1e309", "99999999999999999999999", "-0.0", "1.5", "NaN"}[rng.IntN(7)]
	case 3:
		return `"` + strings.Repeat("A", rng.IntN(70000)) + `"`
	case 4:
		return `"\u0000 nul"`
	case 5:
		return "\"\xff\xfe invalid\""
	case 6:
		return `"` + []string{"", " ", "support", "receptionist", "+34600000000", "../../etc/passwd", "<script>alert(1)</script>", "user", "system", "tool", "sbk_x"}[rng.IntN(11)] + `"`
	case 7:
		if depth > 2 {
			return "[]"
		}
		n := rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = hostileValue(rng, depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case 8:
		return strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	default:
		if depth > 2 {
			return "{}"
		}
		return hostileObject(rng, depth+1)
	}
}

func hostileObject(rng *rand.Rand, depth int) string {
	n := rng.IntN(5)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%q:%s", fields[rng.IntN(len(fields))], hostileValue(rng, depth))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// hostileBody is a request body: a hostile object, cut short or not,
// random bytes, or nothing.
func hostileBody(rng *rand.Rand) []byte {
	switch rng.IntN(6) {
	case 0:
		raw := make([]byte, rng.IntN(400))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		return raw
	case 1:
		return nil
	case 2:
		o := hostileObject(rng, 0)
		return []byte(o[:rng.IntN(len(o)+1)])
	case 3:
		return []byte(hostileValue(rng, 0))
	default:
		return []byte(hostileObject(rng, 0))
	}
}

func hostileContentType(rng *rand.Rand) string {
	return []string{"application/json", "application/json", "multipart/form-data; boundary=x", "multipart/form-data",
		"text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-16"}[rng.IntN(7)]
}
