// Package config loads the box's YAML configuration: the HTTP address, the
// database, model providers and the agents with their memory defaults.
//
// The agent declarations here are what the product specification calls
// "code": Studio overrides stored in the database win over them, and they win
// over the platform defaults.
//
//	cfg, err := config.Load("configs/dev.yaml")
//	cfg.ApplyEnv(os.Getenv)
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Errors returned by Load and Parse.
var (
	ErrInvalid = errors.New("config: invalid")
)

// DefaultHTTPAddr is where the box listens when nothing says otherwise.
const DefaultHTTPAddr = "127.0.0.1:4242"

// Config is the whole configuration of one box.
type Config struct {
	// HTTP holds the listener settings.
	HTTP HTTP `yaml:"http"`
	// Database holds the Postgres connection. Empty URL in `dev` means: start
	// a private cluster under .stackbone/.
	Database Database `yaml:"database"`
	// Providers are OpenAI-compatible endpoints by name; a model id
	// "openai/gpt-4o-mini" picks provider "openai", model "gpt-4o-mini".
	// A provider "openai" always exists, filled from OPENAI_BASE_URL and
	// OPENAI_API_KEY when the file does not set it.
	Providers map[string]Provider `yaml:"providers"`
	// Memory holds box-wide person-memory settings.
	Memory Memory `yaml:"memory"`
	// Agents by catalog name.
	Agents map[string]Agent `yaml:"agents"`
	// RAG holds box-wide retrieval settings.
	RAG RAG `yaml:"rag"`
	// ObjectStore is where uploaded originals are kept.
	ObjectStore ObjectStore `yaml:"objectStore"`
	// SIP holds the SIP listener, call limits and trunks.
	SIP SIP `yaml:"sip"`
	// Rooms holds browser test calls: LiveKit or the embedded WebRTC peer.
	Rooms Rooms `yaml:"rooms"`
	// Media says how the box runs its calls' audio.
	Media Media `yaml:"media"`
	// Shutdown says how the box stops.
	Shutdown Shutdown `yaml:"shutdown"`
	// Telemetry says where traces go.
	Telemetry Telemetry `yaml:"telemetry"`
	// Webhooks tunes the delivery of events to webhook subscriptions.
	Webhooks Webhooks `yaml:"webhooks"`
	// Costs says what currency the price table is in.
	Costs Costs `yaml:"costs"`
}

// Telemetry holds the box's tracing. Metrics are always served at
// /metrics.
type Telemetry struct {
	// OTLPEndpoint, when set, is an OTLP/HTTP collector's base URL
	// (http://127.0.0.1:4318) the box sends its traces to; empty: no
	// tracing.
	OTLPEndpoint string `yaml:"otlpEndpoint"`
}

// Media says how the box runs its calls' audio.
type Media struct {
	// Scheduling is how the box's threads are scheduled while it carries
	// calls: "realtime" raises them to real-time round-robin at the lowest
	// real-time priority, so a call's 20 ms frames go out on time on a busy
	// machine (it needs CAP_SYS_NICE or an RLIMIT_RTPRIO of 1; refused, the
	// box logs it once and carries on at normal priority); "normal" (the
	// default when empty) leaves them to the ordinary scheduler. The shipped
	// configurations say "realtime"; STACKBONE_MEDIA_SCHEDULING overrides it.
	Scheduling string `yaml:"scheduling"`
}

// Media scheduling values.
const (
	SchedulingNormal   = "normal"
	SchedulingRealtime = "realtime"
)

// Realtime reports whether calls raise the box's threads to real-time
// scheduling.
func (m Media) Realtime() bool { return m.Scheduling == SchedulingRealtime }

// Shutdown says how the box stops on SIGTERM or Ctrl-C.
type Shutdown struct {
	// Drain is how long calls in progress may go on and end on their own
	// while the box takes no new ones; then the rest end with outcome
	// shutdown, each completed and saved (default 30 s under dev, 5 minutes
	// under serve).
	Drain time.Duration `yaml:"drain"`
}

// HTTP holds the listener settings.
type HTTP struct {
	// Addr defaults to DefaultHTTPAddr; STACKBONE_HTTP_ADDR overrides it.
	Addr string `yaml:"addr"`
	// CORS lets browser clients call the text wires; off by default.
	CORS CORS `yaml:"cors"`
	// HeaderTimeout bounds reading a request's headers (default
	// api.DefaultHeaderTimeout).
	HeaderTimeout time.Duration `yaml:"headerTimeout"`
	// BodyTimeout bounds reading a JSON request body (default
	// api.DefaultBodyTimeout).
	BodyTimeout time.Duration `yaml:"bodyTimeout"`
	// UploadTimeout bounds reading a multipart upload body (default
	// api.DefaultUploadTimeout).
	UploadTimeout time.Duration `yaml:"uploadTimeout"`
	// WriteTimeout bounds writing a response that is not a stream
	// (default api.DefaultWriteTimeout: longer than a turn). Streams (server-sent events) have
	// no write deadline; the turn timeout and the provider timeouts bound them.
	WriteTimeout time.Duration `yaml:"writeTimeout"`
	// IdleTimeout closes a keep-alive connection that sends no request
	// (default api.DefaultIdleTimeout).
	IdleTimeout time.Duration `yaml:"idleTimeout"`
	// StreamKeepAlive is how often a streamed answer of the text wires
	// (server-sent events) carries a keep-alive while nothing else was
	// written, such as while the provider is slow to answer, so proxies
	// and clients that close a silent connection do not (default
	// wire.DefaultKeepAlive; negative: none). The keep-alive is the wire's own: a comment line
	// (OpenAI, AG-UI) or a ping event (Anthropic). The first one starts the
	// stream, so a later failure is reported in the stream.
	StreamKeepAlive time.Duration `yaml:"streamKeepAlive"`
	// MaxConnections caps open connections (default: half the process's
	// open-file limit, at most 4096). At the cap a new connection takes the
	// place of the oldest idle keep-alive one; when every connection is
	// busy with a request, a small reserve past the cap still serves
	// requests with a key and health checks (others get 503).
	MaxConnections int `yaml:"maxConnections"`
	// MaxConnectionsPerAddress caps the connections of one client address
	// (default: half of MaxConnections; -1: no cap, for a box behind one
	// proxy or load balancer whose address every connection has).
	MaxConnectionsPerAddress int `yaml:"maxConnectionsPerAddress"`
}

// CORS lists the origins (scheme://host[:port], or "*" for any) allowed to
// call the text wires from a browser. Empty: CORS is off.
type CORS struct {
	// AllowedOrigins are the origins whose pages may call the text wires
	// (https://app.example.com), or ["*"] for any; empty: none.
	AllowedOrigins []string `yaml:"allowedOrigins"`
}

// Database holds the Postgres connection.
type Database struct {
	// URL is a Postgres connection URL; STACKBONE_DATABASE_URL overrides it.
	URL string `yaml:"url"`
	// MaxConns bounds the box's connections (default 32: turns, calls and
	// jobs run concurrently, each holding a connection only briefly).
	MaxConns int `yaml:"maxConns"`
}

// Provider is one OpenAI-compatible endpoint.
type Provider struct {
	// BaseURL of the API, such as http://127.0.0.1:8080/v1.
	BaseURL string `yaml:"baseURL"`
	// APIKey is sent as a bearer token. Prefer APIKeyEnv in files.
	APIKey string `yaml:"apiKey"`
	// APIKeyEnv names an environment variable holding the key.
	APIKeyEnv string `yaml:"apiKeyEnv"`
	// Prices by model (the part of the id after the provider), in the
	// config's currency: chat models per million tokens, speech-to-text
	// per minute of audio, text-to-speech per million characters. They
	// price runs, calls and text sessions; usage of a model without a
	// price is recorded and shown as not priced, never as free.
	Prices map[string]Price `yaml:"prices"`
	// ConnectTimeout bounds connecting to the provider (default
	// provider.DefaultConnectTimeout).
	ConnectTimeout time.Duration `yaml:"connectTimeout"`
	// FirstByteTimeout bounds the wait for the answer's headers once the
	// request is sent (default provider.DefaultFirstByteTimeout).
	FirstByteTimeout time.Duration `yaml:"firstByteTimeout"`
	// ChunkTimeout bounds the silence between two reads of an answer's
	// body, such as the chunks of a stream (default
	// provider.DefaultChunkTimeout).
	ChunkTimeout time.Duration `yaml:"chunkTimeout"`
	// ContinuousUsage asks the provider for usage on every streamed chunk
	// (stream_options.continuous_usage_stats, as vLLM and SGLang offer),
	// so a step's input tokens are known with its first chunk: the
	// Anthropic wire's message_start reports them. Off by default: the
	// field is not in OpenAI's API and strict providers refuse it.
	ContinuousUsage bool `yaml:"continuousUsage"`
	// Circuit sets when the box stops sending requests to this provider
	// for a while (see Circuit).
	Circuit Circuit `yaml:"circuit"`
}

// Price of one model, in the config's currency.
type Price struct {
	// Input is the price of a million input (prompt) tokens.
	Input float64 `yaml:"input"`
	// Output is the price of a million output (completion) tokens.
	Output float64 `yaml:"output"`
	// PerMinute is the price of a minute of audio a speech-to-text model
	// transcribes (unset: its audio is not priced).
	PerMinute *float64 `yaml:"perMinute"`
	// PerMillionCharacters is the price of a million characters a
	// text-to-speech model speaks (unset: its speech is not priced).
	PerMillionCharacters *float64 `yaml:"perMillionCharacters"`
}

// Costs holds the currency of the price table: the providers' model
// prices and the SIP trunks' prices per minute.
type Costs struct {
	// Currency is the ISO 4217 code of every price in the config; what
	// calls and sessions cost is recorded and totalled in it (default
	// DefaultCurrency).
	Currency string `yaml:"currency"`
}

// DefaultCurrency is the currency of the prices when the config names none.
const DefaultCurrency = "USD"

var currencyRe = regexp.MustCompile(`^[A-Z]{3}$`)

// validatePrices reports negative prices and a currency that is not an
// ISO 4217 code.
func (c *Config) validatePrices() []string {
	var problems []string
	if cur := c.Costs.Currency; cur != "" && !currencyRe.MatchString(cur) {
		problems = append(problems, fmt.Sprintf("costs.currency %q is not a three-letter ISO 4217 code such as USD or EUR", cur))
	}
	negative := func(where string, v *float64) {
		if v != nil && *v < 0 {
			problems = append(problems, where+" must not be negative")
		}
	}
	for name, p := range c.Providers {
		for model, pr := range p.Prices {
			where := fmt.Sprintf("providers.%s.prices.%s.", name, model)
			negative(where+"input", &pr.Input)
			negative(where+"output", &pr.Output)
			negative(where+"perMinute", pr.PerMinute)
			negative(where+"perMillionCharacters", pr.PerMillionCharacters)
		}
	}
	for _, t := range c.SIP.Trunks.Inbound {
		negative("sip.trunks.inbound "+t.Name+": pricePerMinute", t.PricePerMinute)
	}
	for _, t := range c.SIP.Trunks.Outbound {
		negative("sip.trunks.outbound "+t.Name+": pricePerMinute", t.PricePerMinute)
	}
	return problems
}

// Memory holds box-wide person-memory settings.
type Memory struct {
	// Model is the extraction model fallback after a Studio selection, the
	// request's model and STACKBONE_MEMORY_MODEL. Empty means the platform
	// default, memory.PlatformDefaultModel.
	Model string `yaml:"model"`
	// ReasoningEffort is the fallback after Studio, the request and
	// STACKBONE_MEMORY_REASONING_EFFORT: none, minimal, low, medium, high
	// or xhigh. Empty means the platform default,
	// memory.PlatformDefaultReasoningEffort.
	ReasoningEffort string `yaml:"reasoningEffort"`
}

// ModelChain is an agent's models in the order they are tried; written in
// YAML as one id or a list of ids.
type ModelChain []string

// Primary is the first model, "" when none is set.
func (c ModelChain) Primary() string {
	if len(c) == 0 {
		return ""
	}
	return c[0]
}

// UnmarshalYAML reads one id or a list of ids.
func (c *ModelChain) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var id string
		if err := n.Decode(&id); err != nil {
			return err
		}
		*c = ModelChain{id}
		if id == "" {
			*c = nil
		}
		return nil
	case yaml.SequenceNode:
		var ids []string
		if err := n.Decode(&ids); err != nil {
			return err
		}
		*c = ids
		return nil
	}
	return fmt.Errorf("line %d: model is a provider/model id or a list of them", n.Line)
}

// Circuit is a provider's circuit breaker, shared by every call and text
// turn of the box: after Failures failures within Window the provider is
// skipped at once (an agent's next model in its chain answers) for
// Cooldown, then one request probes it, and its success closes the
// circuit again.
type Circuit struct {
	// Failures that open the circuit (default
	// provider.DefaultCircuitFailures).
	Failures int `yaml:"failures"`
	// Window the failures are counted in (default
	// provider.DefaultCircuitWindow).
	Window time.Duration `yaml:"window"`
	// Cooldown before a probe (default provider.DefaultCircuitCooldown).
	Cooldown time.Duration `yaml:"cooldown"`
}

// Agent is one declared agent.
type Agent struct {
	// Model is a provider/model id, or an ordered list of them (a fallback
	// chain): the first is the primary; a turn moves to the next entry
	// when a provider fails before or while it answers, or its circuit is
	// open (model: [openai/gpt-4.1-mini, backup/gpt-4o-mini]).
	Model ModelChain `yaml:"model"`
	// Instructions are the agent's system instructions.
	Instructions string `yaml:"instructions"`
	// Analysis, when set, analyzes each of the agent's calls once it
	// ended: a summary, fields filled from the call, success criteria
	// judged (see Analysis).
	Analysis *Analysis `yaml:"analysis"`
	// Memory holds the agent's memory defaults ("code" in the settings
	// origins). Nil means the agent declares none.
	Memory *AgentMemory `yaml:"memory"`
	// InterruptOn lists server tools whose calls wait for a person's
	// decision (approve or reject) before they run.
	InterruptOn []string `yaml:"interruptOn"`
	// Tools are server tools the agent declares, such as a retrieval tool
	// over one collection (see AgentTool).
	Tools []AgentTool `yaml:"tools"`
	// MemoryStores attaches curated memory stores to every session of the
	// agent, next to its learned memory, at most MaxAttachedStores (see
	// MemoryStoreAttachment).
	MemoryStores []MemoryStoreAttachment `yaml:"memoryStores"`
	// StoreTools offers the memory store tools on every turn. By default
	// they are offered only when they can help: a curated store is
	// attached, or the agent's learned store holds memories (each tool
	// definition costs input tokens on every request).
	StoreTools bool `yaml:"storeTools"`
	// Voice holds the agent's speech settings on calls. Nil uses the
	// defaults of AgentVoice.
	Voice *AgentVoice `yaml:"voice"`
	// Greeting is what the agent says when a call opens (a fixed phrase,
	// after the recall); empty waits for the caller.
	Greeting string `yaml:"greeting"`
	// MaxToolCalls bounds the calls of server tools (retrieval, http, mcp,
	// memory...) in one turn (default DefaultMaxToolCalls, at most
	// MaxToolCallsLimit): past it the model is told to answer with what it
	// has.
	MaxToolCalls int `yaml:"maxToolCalls"`
	// FirstByteTimeout is how long a streamed text turn waits for a
	// model's first token before the next model of the chain is asked
	// (default agent.DefaultFirstByteTimeout; only when another model
	// could answer: the chain's last is waited for as its provider
	// allows). Calls use voice.firstByteTimeout instead.
	FirstByteTimeout time.Duration `yaml:"firstByteTimeout"`
	// ChunkTimeout is how long a streamed text turn waits between two
	// tokens of a model that began answering before the next model of the
	// chain continues from what was sent: a stalled or trickling stream
	// (default agent.DefaultChunkTimeout; only when another model could
	// answer). Calls use voice.chunkTimeout instead.
	ChunkTimeout time.Duration `yaml:"chunkTimeout"`
}

// AgentVoice is how an agent listens and speaks on calls.
type AgentVoice struct {
	// STT is the speech-to-text model, provider/model (default
	// DefaultSTT), or a list of them tried in order: an utterance a
	// provider fails to transcribe (or whose circuit is open) goes to the
	// next. A live mode (STTMode) streams to the first.
	STT ModelChain `yaml:"stt"`
	// STTMode is how speech-to-text reaches the provider: "http" (one
	// /v1/audio/transcriptions request per utterance, the default),
	// "realtime" (an OpenAI Realtime transcription session over
	// WebSocket, audio sent while the caller speaks) or "deepgram" (a
	// Deepgram-compatible live /v1/listen WebSocket).
	STTMode string `yaml:"sttMode"`
	// TurnDetection is who ends the caller's turns: "box" (the box's own
	// endpointing on silence and words, the default) or "provider" (the
	// live stream's turn signal as well: the Realtime session's
	// semantic_vad with sttMode realtime, a Deepgram-compatible
	// turn-taking stream, /v2/listen, with sttMode deepgram). With
	// provider, the provider's end of turn ends the utterance at once, its
	// eager end of turn starts the answer early, and the box's endpointing
	// stays as the backstop.
	TurnDetection string `yaml:"turnDetection"`
	// Eagerness is how soon the provider ends a turn with TurnDetection
	// provider: low, medium, high or auto (default auto): semantic_vad's
	// eagerness on realtime; on deepgram the end-of-turn thresholds (low:
	// eot_threshold 0.8 and no eager end of turn; auto and medium: 0.7 and
	// an eager end of turn at 0.5; high: 0.6 and 0.4).
	Eagerness string `yaml:"eagerness"`
	// TTS is the text-to-speech engine: provider/model (default
	// DefaultTTS), or "espeak" for the offline engine with word timings;
	// or a list of them tried in order: a sentence a provider fails to
	// speak before any of its audio arrived (or whose circuit is open) goes
	// to the next ([openai/tts-1, espeak] falls back to the offline voice).
	TTS ModelChain `yaml:"tts"`
	// Voice is the TTS voice name (default alloy; an espeak-ng voice such
	// as en-us for espeak).
	Voice string `yaml:"voice"`
	// TransferTo is where the transfer_call tool sends the call (a SIP URI);
	// empty offers no transfer tool.
	TransferTo string `yaml:"transferTo"`
	// Keypad offers the send_dtmf tool on calls whose line carries keypad
	// tones (RFC 4733 telephone-event on SIP): the agent can press keys of
	// an automated menu, an extension or a code the person gave it.
	Keypad bool `yaml:"keypad"`
	// FallbackSentence is what the agent says before it hangs up when
	// every provider of its speech-to-text or of its model is down (each
	// provider's circuit open; a single failure is an apology instead)
	// (default:
	// "Sorry, I'm having trouble right now. Please call back in a little
	// while."). The call ends as provider_failed, and what was heard is
	// saved as on every end.
	FallbackSentence string `yaml:"fallbackSentence"`
	// FallbackAudio is a WAV file (16-bit mono PCM) played instead when no
	// text-to-speech engine can say the sentence either.
	FallbackAudio string `yaml:"fallbackAudio"`
	// FirstByteTimeout is how long a call waits for a model's first token,
	// or a voice's first audio, before the next of the agent's chain is
	// asked (default voice.DefaultFirstByteTimeout; a transcription, which answers the utterance
	// whole, gets twice that; the last of a chain is waited for as its
	// provider allows).
	FirstByteTimeout time.Duration `yaml:"firstByteTimeout"`
	// ChunkTimeout is how long a call waits between two pieces of a
	// model's answer or of a voice's audio once it began (a stalled or
	// trickling stream) before the next of the agent's chain goes on from
	// what was sent (default: FirstByteTimeout; the last of a chain is
	// waited for as its provider allows).
	ChunkTimeout time.Duration `yaml:"chunkTimeout"`
	// Filler is the phrase a caller hears while a tool runs longer than
	// FillerAfter, for tools that declare none; empty: tools without their
	// own filler run in silence.
	Filler string `yaml:"filler"`
	// FillerAfter is how long a tool may run before the filler plays
	// (default DefaultFillerAfter).
	FillerAfter time.Duration `yaml:"fillerAfter"`
	// MinEndpointDelay is the silence after which a caller's turn that is
	// complete (its transcript so far ends a sentence or a question) ends
	// (default voice.DefaultMinEndpointDelay).
	MinEndpointDelay time.Duration `yaml:"minEndpointDelay"`
	// MaxEndpointDelay is the longest silence a turn waits for the caller to
	// go on when they trailed off ("and", "um", a half sentence) (default
	// voice.DefaultMaxEndpointDelay). A turn with nothing known of its words ends after the box's
	// VAD delay (600 ms by default), kept between the two.
	MaxEndpointDelay time.Duration `yaml:"maxEndpointDelay"`
	// Endpointing is how the box's own endpointing reads the caller's
	// words (see Endpointing).
	Endpointing *Endpointing `yaml:"endpointing"`
	// VAD is how the box tells the caller's speech from the rest on the
	// agent's calls: "energy" (loud enough above the line's noise floor),
	// "silero" (the Silero VAD model, run in the box: it hears speech, not
	// loudness, so a noisy line neither cuts a caller off nor holds a turn
	// open on its noise; about 0.5 % of a core per call) or "auto" (the
	// default: energy while the line is quiet, silero from when its noise
	// floor has stayed above -42 dBFS for 500 ms, so quiet calls pay for
	// the model only through their first two seconds).
	VAD string `yaml:"vad"`
	// Interruption is how the agent treats the caller's sound while it
	// speaks (see Interruption).
	Interruption *Interruption `yaml:"interruption"`
	// AnsweringMachine screens who answered a call before the agent
	// speaks: a person, a voicemail greeting, an automated menu, a fax
	// (see AnsweringMachine).
	AnsweringMachine *AnsweringMachine `yaml:"answeringMachine"`
	// Recording keeps the call's audio, opt-in (see Recording).
	Recording *Recording `yaml:"recording"`
	// Transfer offers warm transfers to people (see Transfer).
	Transfer *Transfer `yaml:"transfer"`
}

// Transfer is who a phone call can be handed to, warm: the caller hears
// hold audio while the box rings the person on a second line and tells
// them what the call is about, then the box joins the two; a person who
// does not answer or declines sends the agent back to the caller.
type Transfer struct {
	// Targets are the people the agent chooses from (at most
	// MaxTransferTargets), by their descriptions.
	Targets []TransferTarget `yaml:"targets"`
	// HoldAudio is a WAV file the caller hears while they wait (default a
	// soft tone).
	HoldAudio string `yaml:"holdAudio"`
	// RingTimeout is how long the person's phone rings before the agent
	// goes back to the caller (default DefaultTransferRingTimeout, at most
	// 2m).
	RingTimeout time.Duration `yaml:"ringTimeout"`
}

// TransferTarget is one person a call can be handed to.
type TransferTarget struct {
	// Name is how the agent names the target (lowercase letters, digits,
	// - and _; up to 64).
	Name string `yaml:"name"`
	// Description tells the agent when to choose this target ("billing
	// questions, weekdays").
	Description string `yaml:"description"`
	// Number is the person's phone number, dialled through Trunk.
	Number string `yaml:"number"`
	// Trunk is the outbound trunk to dial through (default the first).
	Trunk string `yaml:"trunk"`
}

// Bounds and defaults of warm transfers.
const (
	MaxTransferTargets         = 20
	DefaultTransferRingTimeout = 30 * time.Second
)

// Recording keeps a call's audio: two channels (the caller left, the agent
// right) in the time the caller heard the agent, stored in the object store
// beside the call record, downloadable and played in Studio with the heard
// transcript. It is deleted with the person's erasure and after Retention.
type Recording struct {
	// Enabled records the agent's calls.
	Enabled bool `yaml:"enabled"`
	// Consent is said first on every recorded call, before the greeting
	// (default "This call is recorded. If you'd rather it wasn't, just say
	// no."; "-" says nothing). A caller whose first words decline ("no",
	// "don't record me") turns recording off for that call: nothing of it
	// is kept.
	Consent string `yaml:"consent"`
	// Retention is how long a recording is kept (default 30 days, at most
	// 10 years); a job removes it after.
	Retention time.Duration `yaml:"retention"`
}

// Analysis is what the box asks of a call once it ended, in one request
// to the agent's model with the heard transcript as data: a short
// summary, the Fields (a JSON Schema object the answer must satisfy; an
// answer that breaks it is asked again once, then recorded as failed) and
// a pass or fail with a one-line reason for each of the Criteria. The
// result is on the call record, in the call.analyzed webhook event and in
// Studio's call detail; calls are filtered by a field's value and by
// success.
type Analysis struct {
	// Fields is a JSON Schema of type object whose properties the model
	// fills from the call (appointmentBooked: {type: boolean}); at most
	// MaxAnalysisFields properties.
	Fields map[string]any `yaml:"fields"`
	// Criteria are what makes a call a success, each judged pass or fail
	// ("The caller got an appointment"); at most MaxAnalysisCriteria.
	Criteria []string `yaml:"criteria"`
}

// Bounds of an agent's call analysis.
const (
	MaxAnalysisFields   = 50
	MaxAnalysisCriteria = 20
)

// DefaultRecordingConsent is what a recorded call says first unless its
// agent's recording settings say otherwise.
const DefaultRecordingConsent = "This call is recorded. If you'd rather it wasn't, just say no."

// DefaultRecordingRetention is how long a recording is kept unless its
// agent's recording settings say otherwise.
const DefaultRecordingRetention = 30 * 24 * time.Hour

// Answering-machine detection: which calls are screened.
const (
	DetectOff      = "off"      // never (the default)
	DetectOutbound = "outbound" // outbound calls
	DetectAll      = "all"      // outbound and inbound calls
)

// What an agent does when a voicemail greeting answers.
const (
	VoicemailHangup  = "hangup"  // end the call (outcome machine)
	VoicemailMessage = "message" // wait for the beep, say Message, hang up
)

// What an agent does when an automated menu answers.
const (
	MenuTalk   = "talk"   // go on: the agent hears the menu's prompt as a note
	MenuHangup = "hangup" // end the call (outcome machine)
)

// MaxVoicemailMessage bounds a voicemail message (characters).
const MaxVoicemailMessage = 1000

// AnsweringMachine is how a call finds out who answered it: from the
// audio (a greeting's length and cadence, a voicemail beep, a fax tone)
// and, for a machine or a greeting the audio leaves open, from the words
// of the greeting.
type AnsweringMachine struct {
	// Detect is off (default), outbound or all.
	Detect string `yaml:"detect"`
	// Voicemail is hangup (default) or message.
	Voicemail string `yaml:"voicemail"`
	// Message is said after the beep when Voicemail is message, and is
	// required then (at most MaxVoicemailMessage characters); {name}
	// placeholders take
	// the call's identities ({phoneNumber}, or any identity field of the
	// call).
	Message string `yaml:"message"`
	// Menu is talk (default) or hangup.
	Menu string `yaml:"menu"`
}

// Endpointing modes (voice.endpointing.mode; "" is words).
const (
	// EndpointingWords ends a turn by what the caller's words so far
	// are: a question or a closed clause (a request) after a short
	// silence (MinEndpointDelay, a request at most
	// voice.ClosedClauseDelay), an opener ("Hi, this is Ana.") or a
	// statement that only tells after the sentence delay, a trailing or
	// dictated one ("and", "um", "4 5 6") after MaxEndpointDelay.
	EndpointingWords = "words"
	// EndpointingCautious ends every statement after the sentence delay
	// (only questions early): fewer turns cut between two sentences, a
	// slower answer to every statement.
	EndpointingCautious = "cautious"
	// EndpointingSilence ignores the words: every turn ends after the
	// VAD's delay.
	EndpointingSilence = "silence"
)

// EndpointingModes are the values of voice.endpointing.mode.
var EndpointingModes = []string{EndpointingWords, EndpointingCautious, EndpointingSilence}

// Endpointing tunes the box's own end-of-turn rules (the only ones with
// turnDetection box, the backstop of the provider's signal with
// provider).
type Endpointing struct {
	// Mode is words (default), cautious or silence.
	Mode string `yaml:"mode"`
}

// Interruption modes.
const (
	// InterruptionWords pauses the agent at the caller's first sound and
	// yields only to words: a backchannel, a cough or a noise burst
	// resumes the playout where it paused (the default).
	InterruptionWords = "words"
	// InterruptionImmediate stops the agent for good after
	// ImmediateAfter of the caller's voiced sound, whatever it was.
	InterruptionImmediate = "immediate"
)

// Interruption tunes how a call treats the caller's sound while the agent
// speaks. In the default mode (words) the playout pauses at the caller's
// first sound; the agent yields (its answer is cut where the caller heard
// it stop) when MinWords words that are not backchannels arrive, or when
// the caller has been voiced for MinVoiced and nothing of it is known to be
// a backchannel; otherwise, once the caller is quiet and their words are
// only backchannels (or no words came within ResumeAfter), the playout
// resumes where it paused and the sound is no turn of the caller.
type Interruption struct {
	// Mode is words (default) or immediate (the agent stops after
	// ImmediateAfter of voiced sound, backchannels included).
	Mode string `yaml:"mode"`
	// MinWords is how many words, not counting backchannels, make the
	// agent yield (default voice.DefaultInterruptionMinWords).
	MinWords int `yaml:"minWords"`
	// MinVoiced is how long the caller may talk over the agent, with none
	// of it known to be a backchannel, before the agent yields even though
	// no words arrived yet (slow speech-to-text; default
	// voice.DefaultInterruptionMinVoiced).
	MinVoiced time.Duration `yaml:"minVoiced"`
	// ResumeAfter is how long a paused agent waits for words before it
	// goes on where it paused once the caller is quiet (default
	// voice.DefaultInterruptionResumeAfter).
	ResumeAfter time.Duration `yaml:"resumeAfter"`
	// Backchannels are the words and phrases that never interrupt ("mm-hm",
	// "yeah", "okay", "right", "uh-huh"...); they replace the default list,
	// which covers English, Spanish, French, German, Italian and
	// Portuguese.
	Backchannels []string `yaml:"backchannels"`
	// ImmediateAfter is the voiced sound that stops the agent in mode
	// immediate (default voice.DefaultInterruptionImmediateAfter).
	ImmediateAfter time.Duration `yaml:"immediateAfter"`
}

// AgentMemory is an agent's declared memory defaults. A nil field is not
// declared and falls back to the platform default.
type AgentMemory struct {
	// IdentityKey names the identity field that selects the person, such as
	// phoneNumber or customerId. The first accepted key is fixed for good.
	IdentityKey string `yaml:"identityKey"`
	// Read recalls the person's memory in built-in integrations.
	Read *bool `yaml:"read"`
	// Save saves the conversation to memory in built-in integrations.
	Save *bool `yaml:"save"`
	// Instructions is the agent's extraction policy.
	Instructions *string `yaml:"instructions"`
}

var (
	agentNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	providerRe  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	toolNameRe  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

// Load reads and validates the file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates YAML. Unknown keys are errors, so a typo does
// not silently drop a setting.
func Parse(b []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks names and values that the box relies on.
func (c *Config) Validate() error {
	var problems []string
	if k := c.HTTP.StreamKeepAlive; k > 0 && k < 100*time.Millisecond {
		problems = append(problems, "http.streamKeepAlive must be at least 100ms (write units: 15s), or negative for none")
	}
	if m := c.Media.Scheduling; m != "" && m != SchedulingNormal && m != SchedulingRealtime {
		problems = append(problems, fmt.Sprintf("media.scheduling must be normal or realtime, not %q", m))
	}
	for _, o := range c.HTTP.CORS.AllowedOrigins {
		if u, err := url.Parse(o); o != "*" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "") {
			problems = append(problems, fmt.Sprintf("http.cors.allowedOrigins: %q is not \"*\" or an origin such as https://app.example.com", o))
		}
	}
	for name := range c.Providers {
		if !providerRe.MatchString(name) {
			problems = append(problems, fmt.Sprintf("provider name %q must match %s", name, providerRe))
		}
	}
	for name, a := range c.Agents {
		if !agentNameRe.MatchString(name) {
			problems = append(problems, fmt.Sprintf("agent name %q must match %s", name, agentNameRe))
			continue
		}
		for i, id := range a.Model {
			if _, _, err := SplitModel(id); err != nil {
				problems = append(problems, fmt.Sprintf("agent %s: %v", name, err))
			} else if slices.Contains(a.Model[:i], id) {
				problems = append(problems, fmt.Sprintf("agent %s: model %s is listed twice", name, id))
			}
		}
		for _, tool := range a.InterruptOn {
			if !toolNameRe.MatchString(tool) {
				problems = append(problems, fmt.Sprintf("agent %s: interruptOn: %q is not a tool name", name, tool))
			}
		}
		problems = append(problems, validateTools(name, a.Tools)...)
		problems = append(problems, validateToolLimits(name, a)...)
		problems = append(problems, validateSTT(name, a.Voice)...)
		problems = append(problems, validateAttachments(name, a.MemoryStores)...)
		if m := a.Memory; m != nil {
			if m.IdentityKey != "" {
				if err := ValidateIdentityKey(m.IdentityKey); err != nil {
					problems = append(problems, fmt.Sprintf("agent %s: memory.identityKey: %v", name, err))
				}
			}
			if m.Instructions != nil {
				if n := utf8.RuneCountInString(*m.Instructions); n < 1 || n > MaxMemoryInstructions {
					problems = append(problems, fmt.Sprintf("agent %s: memory.instructions must be 1 to %d characters", name, MaxMemoryInstructions))
				}
			}
		}
	}
	problems = append(problems, c.ObjectStore.validate()...)
	problems = append(problems, c.SIP.validate(c.Agents)...)
	problems = append(problems, c.Rooms.validate()...)
	problems = append(problems, c.validatePrices()...)
	if c.Memory.Model != "" {
		if _, _, err := SplitModel(c.Memory.Model); err != nil {
			problems = append(problems, fmt.Sprintf("memory.model: %v", err))
		}
	}
	if e := c.Memory.ReasoningEffort; e != "" && !ValidReasoningEffort(e) {
		problems = append(problems, fmt.Sprintf("memory.reasoningEffort %q is not one of %s", e, strings.Join(ReasoningEfforts, ", ")))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	return nil
}

// ApplyEnv lets the environment override the file: STACKBONE_HTTP_ADDR,
// STACKBONE_DATABASE_URL, OPENAI_BASE_URL and OPENAI_API_KEY (provider
// "openai"), STACKBONE_MEMORY_MODEL, STACKBONE_MEMORY_REASONING_EFFORT,
// STACKBONE_SIP_ADDR, STACKBONE_MEDIA_SCHEDULING and the SIP trunks'
// passwordEnv variables.
// It returns an error when an environment value is invalid.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	if v := getenv("STACKBONE_HTTP_ADDR"); v != "" {
		c.HTTP.Addr = v
	}
	if c.HTTP.Addr == "" {
		c.HTTP.Addr = DefaultHTTPAddr
	}
	if v := getenv("STACKBONE_DATABASE_URL"); v != "" {
		c.Database.URL = v
	}
	if err := c.SIP.applyEnv(getenv); err != nil {
		return err
	}
	c.Rooms.applyEnv(getenv)
	if v := getenv("STACKBONE_MEDIA_SCHEDULING"); v != "" {
		if v != SchedulingNormal && v != SchedulingRealtime {
			return fmt.Errorf("%w: STACKBONE_MEDIA_SCHEDULING must be normal or realtime, not %q", ErrInvalid, v)
		}
		c.Media.Scheduling = v
	}
	if c.Providers == nil {
		c.Providers = map[string]Provider{}
	}
	p := c.Providers["openai"]
	if v := getenv("OPENAI_BASE_URL"); v != "" {
		p.BaseURL = v
	}
	if v := getenv("OPENAI_API_KEY"); v != "" {
		p.APIKey = v
	}
	c.Providers["openai"] = p
	for name, p := range c.Providers {
		if p.APIKey == "" && p.APIKeyEnv != "" {
			p.APIKey = getenv(p.APIKeyEnv)
			c.Providers[name] = p
		}
	}
	if v := getenv("STACKBONE_MEMORY_MODEL"); v != "" {
		if _, _, err := SplitModel(v); err != nil {
			return fmt.Errorf("%w: STACKBONE_MEMORY_MODEL: %v", ErrInvalid, err)
		}
		c.Memory.Model = v
	}
	if v := getenv("STACKBONE_MEMORY_REASONING_EFFORT"); v != "" {
		if !ValidReasoningEffort(v) {
			return fmt.Errorf("%w: STACKBONE_MEMORY_REASONING_EFFORT %q is not one of %s", ErrInvalid, v, strings.Join(ReasoningEfforts, ", "))
		}
		c.Memory.ReasoningEffort = v
	}
	return nil
}

// AgentNames returns the declared agents in name order.
func (c *Config) AgentNames() []string {
	names := make([]string, 0, len(c.Agents))
	for n := range c.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MaxMemoryInstructions is the longest extraction policy, in characters.
const MaxMemoryInstructions = 20000

// ReasoningEfforts are the accepted reasoning effort values.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// ValidReasoningEffort reports whether e is one of ReasoningEfforts.
func ValidReasoningEffort(e string) bool {
	for _, v := range ReasoningEfforts {
		if v == e {
			return true
		}
	}
	return false
}

// STTModes are the values of an agent's voice.sttMode ("" is http).
var STTModes = []string{"http", "realtime", "deepgram"}

// Who ends a caller's turn (voice.turnDetection).
const (
	TurnDetectionBox      = "box"
	TurnDetectionProvider = "provider"
)

// Voice activity detectors (voice.vad; "" is auto).
const (
	VADAuto   = "auto"
	VADEnergy = "energy"
	VADSilero = "silero"
)

// VADs are the values of an agent's voice.vad.
var VADs = []string{VADAuto, VADEnergy, VADSilero}

// Eagernesses are the values of an agent's voice.eagerness ("" is auto).
var Eagernesses = []string{"low", "medium", "high", "auto"}

// validateSTT checks an agent's speech-to-text model and mode.
func validateSTT(agent string, v *AgentVoice) []string {
	if v == nil {
		return nil
	}
	var problems []string
	for _, id := range v.STT {
		if _, _, err := SplitModel(id); err != nil {
			problems = append(problems, fmt.Sprintf("agent %s: voice.stt: %v", agent, err))
		}
	}
	for _, id := range v.TTS {
		if _, _, err := SplitModel(id); err != nil && id != "espeak" {
			problems = append(problems, fmt.Sprintf("agent %s: voice.tts: %v (or espeak)", agent, err))
		}
	}
	if v.STTMode != "" && !slices.Contains(STTModes, v.STTMode) {
		problems = append(problems, fmt.Sprintf("agent %s: voice.sttMode %q is not one of %s (default http)",
			agent, truncate(v.STTMode, 40), strings.Join(STTModes, ", ")))
	}
	switch v.TurnDetection {
	case "", TurnDetectionBox:
	case TurnDetectionProvider:
		if v.STTMode != "realtime" && v.STTMode != "deepgram" {
			problems = append(problems, fmt.Sprintf("agent %s: voice.turnDetection provider needs a live sttMode (realtime or deepgram)", agent))
		}
	default:
		problems = append(problems, fmt.Sprintf("agent %s: voice.turnDetection %q is not box or provider (default box)",
			agent, truncate(v.TurnDetection, 40)))
	}
	if v.VAD != "" && !slices.Contains(VADs, v.VAD) {
		problems = append(problems, fmt.Sprintf("agent %s: voice.vad %q is not auto, energy or silero (default auto)",
			agent, truncate(v.VAD, 40)))
	}
	if e := v.Endpointing; e != nil && e.Mode != "" && !slices.Contains(EndpointingModes, e.Mode) {
		problems = append(problems, fmt.Sprintf("agent %s: voice.endpointing.mode %q is not one of %s (default words)",
			agent, truncate(e.Mode, 40), strings.Join(EndpointingModes, ", ")))
	}
	if v.Eagerness != "" && !slices.Contains(Eagernesses, v.Eagerness) {
		problems = append(problems, fmt.Sprintf("agent %s: voice.eagerness %q is not one of %s (default auto)",
			agent, truncate(v.Eagerness, 40), strings.Join(Eagernesses, ", ")))
	}
	return problems
}

// SplitModel splits a "provider/model" id. The model part may itself contain
// slashes ("openrouter/meta/llama-3").
func SplitModel(id string) (provider, model string, err error) {
	p, m, ok := strings.Cut(id, "/")
	if !ok || p == "" || m == "" || !providerRe.MatchString(p) || len(id) > 200 {
		return "", "", fmt.Errorf("model id %q must look like provider/model", truncate(id, 80))
	}
	return p, m, nil
}

// ValidateIdentityKey checks an identity field name: a literal name of 1 to
// 100 characters (not an object path; "contact.email" names one field).
func ValidateIdentityKey(k string) error {
	if n := utf8.RuneCountInString(k); n < 1 || n > 100 {
		return errors.New("must be 1 to 100 characters")
	}
	if strings.TrimSpace(k) != k || strings.ContainsRune(k, 0) {
		return errors.New("must not have surrounding whitespace or NUL")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
