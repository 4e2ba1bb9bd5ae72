// Package aguiwire is the AG-UI wire: POST /agui/{agent} takes AG-UI's
// RunAgentInput and answers the AG-UI event stream as server-sent events,
// one JSON event per `data:` line. It is a thin adapter over the box's one
// conversation core, agent.Runtime: the input becomes an agent.TurnRequest
// and the turn's events become AG-UI events.
//
//	aguiwire.Register(apiServer, aguiwire.Config{Runtime: rt, Guard: apiServer.Guard, Logger: log})
//
// # Input
//
//   - threadId is the session key: every non-empty threadId keeps the
//     conversation in the box. AG-UI clients resend the whole history on each
//     run; the runtime skips messages whose id the session already holds, so
//     each message reaches the model once. An empty threadId is stateless.
//   - runId names the run in RUN_STARTED and RUN_FINISHED; one is generated
//     when the input has none.
//   - messages: user, assistant (with toolCalls), system, developer (sent to
//     the model as system) and tool messages. Text content parts are joined;
//     other parts, activity and reasoning messages are skipped, as the
//     protocol asks of a producer that cannot use them. A tool message's
//     error is appended to its content so the model sees the failure.
//   - tools are client tools (agent.Tool); context entries reach the model as
//     one system message whose id is derived from the entries, so an
//     unchanged context is not stored twice in a session.
//   - forwardedProps.identities (a JSON object) and forwardedProps.customerId
//     (a string) are the request's identities; a conflict between them, or
//     any identity rule broken, is a 400.
//   - state, parentRunId, protocolVersion and resume are accepted and not
//     used; unknown members are ignored, as the protocol requires. The
//     x-stackbone-* headers of the other wires are not read: threadId and
//     forwardedProps carry what they carry.
//
// # Output
//
// The response carries x-stackbone-run-id, the box's run behind the answer
// (GET /api/runs/{id}); AG-UI's runId is the client's name for the run. A
// client that stops a run on a thread leaves its question and what was
// streamed of the answer (marked cut) in the session.
//
// Every run is bracketed RUN_STARTED … RUN_FINISHED or RUN_STARTED …
// RUN_ERROR. RUN_STARTED declares protocolVersion "1.0". Assistant text is
// TEXT_MESSAGE_START/CONTENT/END sharing the runtime's message id; tool calls
// are TOOL_CALL_START/ARGS/END with parentMessageId set to that same id, so
// the history a client resends carries the ids the session already holds.
// Tools the box ran itself (memory tools) also get TOOL_CALL_RESULT.
//
// RUN_FINISHED reports how the turn ended:
//
//   - the model answered: outcome {"type":"success"};
//   - the model called client tools: outcome {"type":"success",
//     "pendingToolCallIds":[...]}; the client runs them and continues with a
//     new run on the same thread whose messages carry a tool message per call;
//   - a tool listed in the agent's interruptOn waits for a person's decision:
//     outcome {"type":"interrupt","interrupts":[{"id":CALL_ID,
//     "reason":"tool_approval","toolCallId":CALL_ID,...}]} and
//     result {"held":{"toolCallId":CALL_ID,"name":TOOL}}. The decision is made
//     through the box's decisions API, not through AG-UI resume entries;
//     until then a new run on the thread answers 409 decision_pending.
//
// RUN_FINISHED also carries usage (one entry, the agent's model) when the
// provider reported tokens.
//
// # Errors
//
// A request the box refuses before the run starts is an HTTP error with the
// body {"error":{"code":"...","message":"..."}}: 401/403 (auth), 404
// agent_not_found, 400 invalid_request (body, messages, identities), 409
// session_busy and 409 decision_pending. A failure once the run has started
// (the model provider, memory or session storage failing) is a RUN_ERROR
// event with a code (provider_failed, memory_unavailable,
// storage_unavailable, timeout, internal) and the end of the stream.
//
// A run with nothing to send for wire.Config.KeepAlive (a slow provider)
// carries an SSE comment `: keep-alive` after RUN_STARTED; the first one
// starts the stream, so a later failure is a RUN_ERROR.
package aguiwire
