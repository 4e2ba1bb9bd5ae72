package openaiwire_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
)

const agentsYAML = `
agents:
  plain:
    model: openai/chat
    instructions: You are plain.
  support:
    model: openai/chat
    instructions: You help customers.
    memory: {identityKey: customerId, read: true, save: false}
  phone:
    model: openai/chat
    memory: {identityKey: phoneNumber, read: true, save: false}
  guarded:
    model: openai/chat
    instructions: You ask before saving.
    memory: {identityKey: customerId, read: false, save: true}
    interruptOn: [memory_save]
`

// openaiRequest is what the scripted model decodes a chat request into.
type openaiRequest = goopenai.ChatCompletionRequest

const (
	testKey   = boxtest.Key
	readerKey = "reader-key" // holds memory:read only
)

// box is a whole box on its own database, with the scripted model behind it
// and the OpenAI wire mounted, served over HTTP.
type box struct {
	t     *testing.T
	url   string
	model *providertest.Server
	pool  *pgxpool.Pool
	box   *boxtest.Box
}

func newBox(t *testing.T) *box {
	t.Helper()
	b := boxtest.New(t, agentsYAML)
	if err := b.Keys.Ensure(t.Context(), "reader", readerKey, []string{auth.ScopeMemoryRead}); err != nil {
		t.Fatal(err)
	}
	return &box{t: t, url: b.URL, model: b.Model, pool: b.Pool, box: b}
}

// client is the official OpenAI client pointed at the box. Retries are off
// so every error reaches the test as answered.
func (b *box) client(opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(b.url + "/openai/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0),
	}, opts...)...)
	return &c
}

// sent returns "role: content" of each message of the model's nth chat
// request (negative n counts from the end).
func (b *box) sent(n int) []string {
	b.t.Helper()
	reqs := b.model.ChatRequests()
	if n < 0 {
		n += len(reqs)
	}
	if n < 0 || n >= len(reqs) {
		b.t.Fatalf("the model received %d chat requests, not a request %d", len(reqs), n)
	}
	var out []string
	for _, m := range reqs[n].Messages {
		out = append(out, m.Role+": "+m.Content)
	}
	return out
}

// toolsSent returns the tool names of the model's nth chat request.
func (b *box) toolsSent(n int) []string {
	b.t.Helper()
	reqs := b.model.ChatRequests()
	if n < 0 {
		n += len(reqs)
	}
	var out []string
	for _, t := range reqs[n].Tools {
		out = append(out, t.Function.Name)
	}
	return out
}
