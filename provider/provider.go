// Package provider resolves "provider/model" ids to OpenAI-compatible clients
// (github.com/sashabaranov/go-openai). Chat, embeddings, speech-to-text and
// text-to-speech all go through the endpoint a provider names.
//
//	reg := provider.NewRegistry(cfg.Providers, nil)
//	m, err := reg.Resolve("openai/gpt-4o-mini")
//	resp, err := m.Client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: m.Name, ...})
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
)

// Errors returned by Resolve.
var (
	// ErrNotConfigured: the model names a provider with no endpoint or key.
	ErrNotConfigured = errors.New("provider: not configured")
	// ErrUnknownProvider: the model names a provider the box does not know.
	ErrUnknownProvider = errors.New("provider: unknown provider")
	// ErrInvalidModel: the id is not of the form provider/model.
	ErrInvalidModel = errors.New("provider: invalid model id")
)

// Registry holds one client per configured provider. It is safe for
// concurrent use and immutable after NewRegistry.
type Registry struct {
	providers map[string]*entry
}

type entry struct {
	client     *openai.Client
	configured bool
	prices     map[string]config.Price
	ep         *endpoint
	circuits   map[string]*Circuit // by endpoint (Endpoints)
}

// NewRegistry builds clients for every provider in cfg, each with the
// provider's own connect, first-byte and chunk timeouts (see
// newHTTPClient); calls are bounded by their context, because streams can
// be long. wrap, when not nil, wraps each provider's transport (metrics,
// tracing) without replacing its timeouts.
func NewRegistry(cfg map[string]config.Provider, wrap func(http.RoundTripper) http.RoundTripper) *Registry {
	r := &Registry{providers: map[string]*entry{}}
	for name, p := range cfg {
		cc := openai.DefaultConfig(p.APIKey)
		if p.BaseURL != "" {
			cc.BaseURL = p.BaseURL
		}
		hc := newHTTPClient(p, wrap)
		if p.ContinuousUsage {
			hc.Transport = &continuousUsage{next: hc.Transport}
		}
		cc.HTTPClient = hc
		connect := p.ConnectTimeout
		if connect <= 0 {
			connect = DefaultConnectTimeout
		}
		r.providers[name] = &entry{
			client:     openai.NewClientWithConfig(cc),
			configured: p.BaseURL != "" || p.APIKey != "",
			prices:     p.Prices,
			ep:         &endpoint{baseURL: cc.BaseURL, apiKey: p.APIKey, connect: connect},
			circuits:   newCircuits(name, p.Circuit),
		}
	}
	return r
}

// Model is a resolved model id.
type Model struct {
	// ID is the full provider/model id.
	ID string
	// Provider is the provider part of the id.
	Provider string
	// Name is what the provider's API calls the model.
	Name string
	// Client talks to the provider.
	Client *openai.Client
	// Circuit is the health of the provider's chat endpoint, shared by
	// every user of it in the box: skip the model while it does not Allow,
	// and report each request's outcome (Success, Fail). EndpointCircuit
	// has the other endpoints'.
	Circuit  *Circuit
	circuits map[string]*Circuit
	price    *config.Price
	// ep is the provider's endpoint, for the protocols the client does
	// not speak (live transcription over WebSocket): behind a pointer, so
	// a Model printed with %+v or %#v shows an address, never the key.
	ep *endpoint
}

type endpoint struct {
	baseURL, apiKey string
	connect         time.Duration
}

// Endpoint is the provider's base URL (ending in /v1 as configured), its
// API key and its connect timeout, for clients of protocols other than
// the OpenAI client's own (live transcription WebSockets). Never log the
// key.
func (m Model) Endpoint() (baseURL, apiKey string, connectTimeout time.Duration) {
	if m.ep == nil {
		return "", "", DefaultConnectTimeout
	}
	return m.ep.baseURL, m.ep.apiKey, m.ep.connect
}

// Resolve finds the client for a provider/model id. It returns
// ErrInvalidModel, ErrUnknownProvider or ErrNotConfigured (each wrapped with
// the id) when the model cannot be used.
func (r *Registry) Resolve(id string) (Model, error) {
	p, name, err := config.SplitModel(id)
	if err != nil {
		return Model{}, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	e, ok := r.providers[p]
	if !ok {
		return Model{}, fmt.Errorf("%w %q (model %s); known: %v", ErrUnknownProvider, p, id, r.names())
	}
	if !e.configured {
		return Model{}, fmt.Errorf("%w: model %s needs provider %q; set OPENAI_BASE_URL or OPENAI_API_KEY (or providers.%s in the config)", ErrNotConfigured, id, p, p)
	}
	m := Model{ID: id, Provider: p, Name: name, Client: e.client, Circuit: e.circuits[EndpointChat], circuits: e.circuits, ep: e.ep}
	if pr, ok := e.prices[name]; ok {
		m.price = &pr
	}
	return m, nil
}

// EndpointCircuit is the circuit of one of the provider's endpoints
// (EndpointChat, EndpointTranscriptions, EndpointSpeech): a provider whose
// speech is down may still answer chat.
func (m Model) EndpointCircuit(endpoint string) *Circuit { return m.circuits[endpoint] }

// Circuits returns every configured provider's circuits, by provider and
// endpoint.
func (r *Registry) Circuits() []CircuitView {
	out := []CircuitView{}
	for _, name := range r.names() {
		if e := r.providers[name]; e.configured {
			for _, ep := range Endpoints {
				out = append(out, e.circuits[ep].View())
			}
		}
	}
	return out
}

// Cost returns the price of a call in US dollars, or nil when the model has no
// configured price.
func (m Model) Cost(inputTokens, outputTokens int) *float64 {
	if m.price == nil {
		return nil
	}
	c := (float64(inputTokens)*m.price.Input + float64(outputTokens)*m.price.Output) / 1e6
	return &c
}

// Configured lists the names of the providers that have an endpoint or a
// key, sorted: the ones a model id may name.
func (r *Registry) Configured() []string {
	out := []string{}
	for _, name := range r.names() {
		if r.providers[name].configured {
			out = append(out, name)
		}
	}
	return out
}

func (r *Registry) names() []string {
	var n []string
	for k := range r.providers {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Describe says why a provider call failed, in the box's own words: the
// kind, the provider's status and its error type. The provider's message is
// never relayed (it can quote the key it was sent); Detail gives it,
// redacted, for a debug log.
func Describe(err error) string {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("provider answered %d (%s)", apiErr.HTTPStatusCode, kindOf(apiErr.HTTPStatusCode))
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return fmt.Sprintf("provider answered %d (%s)", reqErr.HTTPStatusCode, kindOf(reqErr.HTTPStatusCode))
	}
	var te *timeoutError
	if errors.As(err, &te) {
		return "the provider did not answer in time (" + te.phase + ")"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the provider did not answer in time"
	}
	if errors.Is(err, context.Canceled) {
		return "the request was cancelled"
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) || errors.Is(err, openai.ErrTooManyEmptyStreamMessages) {
		return "the provider's answer was not the API's JSON"
	}
	return "the provider could not be reached"
}

// Detail is the provider's own error text with credentials masked, for a
// debug log only.
func Detail(err error) string {
	return clip(Redact(err.Error()), 500)
}

func kindOf(status int) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "authentication failed"
	case status == http.StatusTooManyRequests:
		return "rate limited"
	case status == http.StatusNotFound:
		return "model or endpoint not found"
	case status >= 500:
		return "provider error"
	case status >= 400:
		return "request refused"
	}
	return "unexpected answer"
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
