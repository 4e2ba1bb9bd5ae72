// Package openaiwire serves the OpenAI Chat Completions wire: any OpenAI
// client talks to the box's agents, the model name being the agent's name.
//
//	srv := api.New(api.Config{...})
//	openaiwire.Register(srv, openaiwire.Config{Runtime: rt, Guard: srv.Guard, Logger: log})
//
// Routes (each needs a bearer key with the agents:run scope):
//
//	POST /openai/v1/chat/completions   one turn, plain or streamed
//	POST /openai/v1/responses          one turn in the Responses API, plain or streamed
//	GET  /openai/v1/models             the declared agents as models
//	GET  /openai/v1/models/{model}     one of them
//
// Any other route under /openai/v1/ answers 404 in OpenAI's error shape,
// naming these routes.
//
// The request's messages, client tools (type function), `user` (the scalar
// customer identity), temperature, top_p, max_tokens or
// max_completion_tokens and stop become an agent.TurnRequest. The box's
// headers x-stackbone-session (keep the conversation in the box; send only
// the new messages), x-stackbone-conversation (group stateless turns) and
// x-stackbone-identities (a JSON object of identities) are read on every
// turn.
//
// Documented fields that change nothing the box does are accepted and
// ignored: n (1 only), seed, parallel_tool_calls, metadata, store,
// service_tier, prompt_cache_key, prompt_cache_retention, safety_identifier,
// prediction, and stream_options.include_obfuscation. Fields that would
// change the answer and that the box cannot honour are a 400 unless they
// hold their default: n above 1, tool_choice other than "auto",
// response_format other than text, logprobs, top_logprobs,
// frequency_penalty, presence_penalty, logit_bias, modalities other than
// text, audio, functions, function_call, reasoning_effort, verbosity and
// web_search_options. Any other field is a 400. Content parts other than
// text (images, audio, files) are a 400.
//
// # Sessions
//
// On a session the client may send only the new messages, or the whole
// conversation again, as the stock tool loops do (the openai SDK's
// runTools, the AI SDK, LangChain): a conversation that starts with the
// session's first message and is longer than the session's history is a
// resend; the history (as this wire showed it: one assistant message per
// turn, without the box's own tool calls) must be its prefix, compared by
// text and tool-call ids, and only what follows is added. A resend that
// contradicts the history is a 400. A streamed turn the client stops stays
// in the session: the question and what was streamed of the answer, which
// the model sees marked as cut.
//
// # Steps of a turn
//
// When the model writes, calls a tool the box runs itself (memory_read, a
// memory-store tool, retrieval) and writes again, Chat Completions has one
// content per answer: the steps' texts are joined by a blank line ("\n\n"),
// plain and streamed alike (the stream sends the blank line before the next
// step's first piece), so a chat UI shows each step as its own paragraph.
// The session keeps each step as its own assistant message, as the model
// produced it.
//
// Every answer of a turn that ran (failed ones included) carries the
// header x-stackbone-run-id, the run behind it (GET /api/runs/{id}).
//
// # Responses API
//
// POST /openai/v1/responses runs the same turn. Used: model, input (a
// string, or items: messages with role user, system, developer or
// assistant and content as a string or input_text/output_text parts;
// function_call; function_call_output; item_reference to the box's own
// output items), instructions (system context of this response only, as
// OpenAI keeps it), function tools, stream, previous_response_id, store,
// user (the scalar customer identity), temperature, top_p and
// max_output_tokens. Accepted and ignored: metadata (echoed),
// parallel_tool_calls, safety_identifier, prompt_cache_key,
// prompt_cache_retention, service_tier, truncation, stream_options,
// include, an item's phase and a tool's defer_loading. Refused unless at
// their default: tool_choice other than "auto", text other than the text
// format, reasoning, background, conversation, prompt, top_logprobs and
// max_tool_calls. Other tool types and input items are a 400.
//
// A stored response (store is true unless sent false) is a turn on a
// session of the box: the response id names that conversation, and
// previous_response_id continues it with only the new input (the session
// holds the rest). The box keeps one line of history per conversation:
// previous_response_id must name its latest response (continuing from an
// earlier one is a 400; the latest of a turn a person decided on is the
// decision's answer, which no response id names: continue with
// x-stackbone-session there). An item_reference (the AI SDK sends them for earlier answers) names
// the conversation too: the items up to the last reference are what the
// conversation holds, and only those after it are new. A previous response
// the box does not hold for this agent and person, or one made with store
// false, is a 400 previous_response_not_found. x-stackbone-session works
// here too, but not together with previous_response_id.
//
// Each model step's text is its own message output item; client function
// calls are function_call items (box-run tools are not shown). The stream
// sends response.created, response.in_progress, then per item
// response.output_item.added, its content or argument deltas and dones and
// response.output_item.done, and ends with response.completed (or
// response.incomplete at the token limit) holding the whole response and
// its usage. An error before the stream is OpenAI's error shape; after it
// began, an error event followed by response.failed.
//
// # Held tools
//
// When a tool listed in the agent's interruptOn waits for a person's
// decision, Chat Completions has no way to say so. The answer is the
// assistant text so far with finish_reason "stop", plus a top-level
// extension field (on the completion, or on the streamed chunk that carries
// the finish_reason):
//
//	"stackbone": {"held": {"toolCallId": "call_...", "name": "refund"}}
//
// Clients that do not know the field ignore it; the next message on that
// session answers 409 decision_pending until the decision is made.
//
// # Errors
//
// Errors use OpenAI's shape {"error": {"message", "type", "param", "code"}}:
// 400 invalid_request_error, 401 authentication_error, 403
// permission_error, 404 model_not_found, 409 session_busy or
// decision_pending, 502 provider_error, 503 memory_unavailable or
// storage_unavailable, 504 timeout, 500 otherwise (without internal
// detail). The table from the box's errors to statuses and codes is shared
// with the Anthropic wire (wire.Classify). An error
// after a stream began is one `data: {"error": {...}}` event, and the stream
// ends without [DONE].
//
// A stream with nothing to send for wire.Config.KeepAlive (a slow
// provider) carries an SSE comment `: keep-alive`, after the role chunk or
// response.in_progress; the first one starts the stream, so a later
// failure is its error event.
package openaiwire
