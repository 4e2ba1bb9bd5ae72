package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stackbone/box/api"
)

func TestCheckTextNamesTheField(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"a":"ok","b":[1,{"c":"x\u0000"}]}`:   "b[1].c",
		"{\"meta\":{\"k\":\"v\xff\"}}":         "meta.k",
		"{\"meta\":{\"k\xff\":\"v\"}}":         "a member name in meta",
		`"\u0000"`:                             "the body",
		`{"a":"\\u0000 is only text","b":"é"}`: "",
		`{"a":`:                                "",
	} {
		err := api.CheckText([]byte(body))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", body, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), want+" must be UTF-8 text") {
			t.Errorf("%q: %v, want %s", body, err, want)
		}
	}
}

// Two userIds that differ only in invalid bytes must not become one person:
// both are refused, before the model is called.
func TestBadBytesInMemoryRoutes(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	env := b.expect("POST", "/api/memory/add", devKey, "{\"agentId\":\"support\",\"userId\":\"ann\xff\",\"content\":\"hi\"}",
		http.StatusBadRequest, "memory_invalid_request")
	if !strings.Contains(env.Error.Message, "userId") {
		t.Fatalf("message %q does not name userId", env.Error.Message)
	}
	b.expect("POST", "/api/memory/recall", devKey, `{"agentId":"support","userId":"ann\u0000"}`, http.StatusBadRequest, "memory_invalid_request")
	b.expect("GET", "/api/runs?kind=%00", devKey, "", http.StatusBadRequest, "invalid_request")
	b.expect("GET", "/api/runs?kind=%ff", devKey, "", http.StatusBadRequest, "invalid_request")
	if n := len(b.model.Requests()); n != 0 {
		t.Fatalf("%d model calls", n)
	}
}
