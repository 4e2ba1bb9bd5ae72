package provider

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// continuousUsage asks a streamed chat completion for usage on every chunk
// (stream_options.continuous_usage_stats: vLLM's and SGLang's extension),
// which the OpenAI client library has no field for. Only the request's
// stream_options change; every other field's value is passed on as it
// was encoded.
type continuousUsage struct {
	next http.RoundTripper
}

func (c *continuousUsage) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/chat/completions") || req.Body == nil {
		return c.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if b, ok := withContinuousUsage(body); ok {
		body = b
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return c.next.RoundTrip(out)
}

// withContinuousUsage adds continuous_usage_stats to a request body's
// stream_options; ok is false when the body asks for no usage.
func withContinuousUsage(body []byte) ([]byte, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil, false
	}
	var opts map[string]json.RawMessage
	if raw, ok := fields["stream_options"]; !ok || json.Unmarshal(raw, &opts) != nil || string(opts["include_usage"]) != "true" {
		return nil, false
	}
	opts["continuous_usage_stats"] = json.RawMessage("true")
	raw, err := json.Marshal(opts)
	if err != nil {
		return nil, false
	}
	fields["stream_options"] = raw
	b, err := json.Marshal(fields)
	return b, err == nil
}
