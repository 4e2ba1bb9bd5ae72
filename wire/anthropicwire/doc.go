// Package anthropicwire serves the Anthropic Messages wire: any Anthropic
// client talks to the box's agents, the model name being the agent's name.
//
//	srv := api.New(api.Config{...})
//	anthropicwire.Register(srv, anthropicwire.Config{Runtime: rt, Guard: srv.Guard, Logger: log})
//
// Route: POST /anthropic/v1/messages, plain or streamed (any other route
// under /anthropic/v1/ is a 404 not_found_error naming it). The key comes from
// `Authorization: Bearer KEY` or `x-api-key: KEY` and needs the agents:run
// scope; the anthropic-version header is accepted and not checked.
//
// The request's system prompt (a string or text blocks), messages (a string
// or text, tool_use and tool_result blocks), client tools (name,
// description, input_schema), metadata.user_id (the scalar customer
// identity), max_tokens (required, as Anthropic requires it), temperature,
// top_p and stop_sequences become an agent.TurnRequest. A tool_result with
// is_error true reaches the model prefixed with "Error: ". The box's headers
// x-stackbone-session, x-stackbone-conversation and x-stackbone-identities
// are read on every turn.
//
// Documented fields that change nothing the box does are accepted and
// ignored: service_tier, inference_geo, speed, cache_control (top level),
// diagnostics, the tool options strict, defer_loading, input_examples,
// allowed_callers, eager_input_streaming and cache_control, and any other
// field inside a content block (citations, cache_control, caller, ...).
// temperature and top_p are passed on although current official clients no
// longer send them. Fields
// that would change the answer are a 400 unless they hold their default:
// top_k, tool_choice other than {"type": "auto"}, thinking other than
// {"type": "disabled"}, output_config, container, mcp_servers and
// context_management. Any other field is a 400, and so are image, document,
// thinking and server-tool blocks, and tools that are not custom tools.
//
// # Steps, sessions and runs
//
// When the model writes, calls a tool the box runs itself and writes
// again, each step's text is its own text block, plain and streamed alike,
// as the provider sent them. On a session the client may send only the new
// messages or the whole conversation again (Anthropic's documented tool
// loop): a resend must hold the session's history as its prefix (compared
// by text and tool_use ids; the box's own tool calls are not part of it),
// only what follows is added, and a contradiction is a 400. A streamed turn
// the client stops stays in the session with its partial answer marked as
// cut. Every answer of a turn that ran carries x-stackbone-run-id.
//
// Usage: message_delta carries the turn's input_tokens and output_tokens
// over all its model steps (the official clients take both from it).
// message_start carries the input tokens of the turn's first model step,
// as the provider reported them, whenever they are known before the
// stream's first content, and 0 otherwise. The box never holds the stream
// back to wait for them, so when they are known depends on the provider:
//   - a provider with continuousUsage (providers.NAME.continuousUsage, for
//     vLLM and SGLang, which report usage on every chunk when asked with
//     stream_options.continuous_usage_stats) reports them with its first
//     chunk: message_start always has them;
//   - a provider that reports usage only when a step ends (OpenAI's own API
//     and most others) gives them too late for a first step that writes
//     text (message_start says 0, message_delta the real count), and in
//     time when the first step only called tools the box runs itself.
//
// No count is estimated: a figure the wire reports is the provider's.
//
// # Held tools
//
// When a tool listed in the agent's interruptOn waits for a person's
// decision, the answer is the assistant text so far with stop_reason
// "end_turn" and an extension field on the message (streamed: on
// message_delta):
//
//	"stackbone": {"held": {"toolCallId": "call_...", "name": "refund"}}
//
// The next message on that session answers 409 until the decision is made.
//
// # Errors
//
// Errors use Anthropic's shape {"type": "error", "error": {"type",
// "message"}}: 400 invalid_request_error, 401 authentication_error, 403
// permission_error, 404 not_found_error (unknown model), 409
// invalid_request_error (the message says the session is busy or a
// decision is pending), 413 request_too_large, 502 and 500 api_error, 503
// overloaded_error, 504 timeout_error (the turn took longer than the box
// allows). The table from the box's errors to statuses is shared with the
// OpenAI wire (wire.Classify). An error after a stream began is one `event: error` and
// the stream ends.
//
// A stream with nothing to send for wire.Config.KeepAlive (a slow
// provider) carries a `ping` event after message_start, as Anthropic's API
// does; the first one starts the stream, so a later failure is its error
// event.
package anthropicwire
