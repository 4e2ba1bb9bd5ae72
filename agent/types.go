package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// Errors of the runtime, with their kinds and codes (package fault); the
// wires and the sessions routes map kinds to their own error shapes.
var (
	// ErrUnknownAgent: the model name names no declared agent (404).
	ErrUnknownAgent = fault.New(fault.NotFound, "agent_not_found", "agent: unknown agent")
	// ErrInvalidRequest: the request breaks a rule of the runtime (400).
	ErrInvalidRequest = fault.New(fault.Invalid, "invalid_request", "agent: invalid request")
	// ErrSessionBusy: another turn on this session is running (409).
	ErrSessionBusy = fault.New(fault.Conflict, "session_busy", "agent: session busy")
	// ErrDecisionPending: a held tool waits for a person's decision (409).
	ErrDecisionPending = fault.New(fault.Conflict, "decision_pending", "agent: a decision is pending")
	// ErrNoDecisionPending: a decision was sent for a session that waits for none (409).
	ErrNoDecisionPending = fault.New(fault.Conflict, "no_decision_pending", "agent: no decision is pending")
	// ErrSessionNotFound: no session with that id (404).
	ErrSessionNotFound = fault.New(fault.NotFound, "session_not_found", "agent: session not found")
	// ErrProvider: the model provider failed or is not configured (502).
	ErrProvider = fault.New(fault.Upstream, "provider_failed", "agent: model provider failed")
	// ErrProviderTimeout: the model provider did not connect, answer or go
	// on streaming in time (504).
	ErrProviderTimeout = fault.New(fault.Timeout, "provider_timeout", "agent: model provider timed out")
	// ErrProvidersDown: every model of the agent's chain failed and each
	// provider's circuit is open: they are down, not failing once (a call
	// gives up gracefully on it). It is also an ErrProvider.
	ErrProvidersDown = fmt.Errorf("%w: every model provider of the agent is down", ErrProvider)
	// ErrMemory: memory storage failed; memory is never silently omitted (503).
	ErrMemory = fault.New(fault.Unavailable, "memory_unavailable", "agent: memory unavailable")
	// ErrStorage: the session store failed (503).
	ErrStorage = fault.New(fault.Unavailable, "storage_unavailable", "agent: storage unavailable")
)

// Roles of a message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a conversation, in the runtime's neutral shape.
type Message struct {
	// ID identifies the message where the wire gives ids (AG-UI); the
	// runtime fills it for messages it creates.
	ID      string `json:"id,omitempty"`
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
	// Cut marks an assistant answer the client stopped while it streamed:
	// Content is what was streamed before the stop (maybe nothing). The
	// model sees it with CutMarker after it, so the next turn reads
	// naturally.
	Cut bool `json:"cut,omitempty"`
}

// CutMarker follows a cut answer in what the model is sent.
const CutMarker = "[The person stopped this answer here.]"

// ToolCall is one call of a tool by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a tool the client declares and executes itself (a client tool): the
// turn stops when the model calls one, and the client continues the
// conversation with the tool's result.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Options are sampling options a wire passes through to the model.
type Options struct {
	Temperature *float32
	TopP        *float32
	MaxTokens   *int
	Stop        []string
}

// TurnRequest is one turn of one agent.
type TurnRequest struct {
	// Agent is the declared agent's name (the wire's model name).
	Agent string
	// RunID is the id of the turn's run; zero for a new one. A wire that
	// returns the id before the turn ends chooses it.
	RunID uuid.UUID
	// Messages: without a session, the whole conversation; with a session,
	// the new messages (earlier ones come from the checkpoint; messages
	// whose ID the session already holds are skipped).
	Messages []Message
	// Tools are the client's tools.
	Tools []Tool
	// SessionKey keeps the conversation in the box (x-stackbone-session,
	// AG-UI threadId). ConversationKey only groups stateless turns
	// (x-stackbone-conversation). At most one of them.
	SessionKey      string
	ConversationKey string
	// SessionMustExist: with SessionKey, a session that does not exist yet
	// is ErrSessionNotFound instead of a new one (a client continuing a
	// conversation it names, such as a Responses previous_response_id).
	SessionMustExist bool
	// AfterRun, when set with SessionKey, is the run of the session's latest
	// turn the client continues from; another is ErrInvalidRequest, as a
	// session keeps one line of history. It is checked once the session is
	// claimed, so a turn still finishing answers ErrSessionBusy instead.
	AfterRun uuid.UUID
	// Identities are the request's identities, the scalar customer identity
	// included under customerId.
	Identities identity.Set
	Options    Options
	// Wire names the transport for run history ("openai", "anthropic",
	// "agui", "voice").
	Wire string
	// System is extra system context for this turn, after the agent's
	// instructions (a call's recalled memory).
	System string
	// Instructions, when not empty, stand in for the agent's instructions
	// in this turn: a call's, as they were when it opened, with its
	// campaign contact's variables filled in.
	Instructions string
	// NoMemoryTools withholds memory_read and memory_save: voice calls read
	// and save memory in their lifecycle instead.
	NoMemoryTools bool
	// FirstByte bounds the wait for a model's first token, and Chunk each
	// silence between its tokens after that (0: FirstByte), when another
	// model of the agent's chain could answer instead (a call: the caller
	// waits in silence). Both 0: a streamed turn takes the agent's
	// firstByteTimeout and chunkTimeout, or DefaultFirstByteTimeout and
	// DefaultChunkTimeout; a Whole one leaves it to the provider's own
	// timeouts. A model that stalls or trickles mid-answer is a cut
	// answer: the next one continues it.
	FirstByte time.Duration
	Chunk     time.Duration
	// Tools of this turn only (a call's transfer_call), run by the box.
	ServerTools []ServerTool
	// Models is the chain this turn tries instead of the agent's chain in
	// force: a call's, taken when it opened, so an edit in Studio applies
	// to the next call and not to the rest of this one. Nil: the agent's.
	Models config.ModelChain
	// Whole asks the model for each step's answer in one piece instead of
	// a stream: the client takes the answer whole, so nothing is relayed
	// as it comes. Events still arrive, each step's at once.
	Whole bool
}

// Finish says how a turn ended.
type Finish string

// Finishes.
const (
	// FinishStop: the model answered.
	FinishStop Finish = "stop"
	// FinishLength: the model hit its token limit.
	FinishLength Finish = "length"
	// FinishToolCalls: the model called client tools; the client runs them
	// and continues with their results.
	FinishToolCalls Finish = "tool_calls"
	// FinishHeld: a tool listed in the agent's interruptOn waits for a
	// person's decision; the turn is parked on the session's checkpoint.
	FinishHeld Finish = "held"
)

// StepSeparator joins the texts of a turn's model steps into one text: a
// blank line, so a chat UI shows each step as its own paragraph.
const StepSeparator = "\n\n"

// Usage is the tokens a turn spent over all its model steps.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// Result is the outcome of a turn.
type Result struct {
	RunID uuid.UUID
	// MessageID identifies the assistant's reply.
	MessageID string
	// Texts are the assistant texts of the turn, one per model step that
	// wrote text, in order: a step that calls a tool the box runs itself
	// ends one text and the next step starts another, as the provider sent
	// them (each step is its own assistant message in the session).
	Texts []string
	// Text is Texts joined by StepSeparator, for transports that show one
	// text per turn (the OpenAI wire, a session's transcript).
	Text string
	// ToolCalls are the client tool calls when Finish is FinishToolCalls.
	ToolCalls []ToolCall
	// Held is the call waiting for a decision when Finish is FinishHeld.
	Held   *ToolCall
	Finish Finish
	Usage  Usage
	// Model is the provider/model id that answered.
	Model string
	// ToolRuns are the server tool calls the turn ran, in order.
	ToolRuns []ToolRun
}

// EventKind tells what an Event carries.
type EventKind int

// Event kinds, in the order a turn can emit them. Text and tool events of
// one assistant message share its MessageID.
const (
	// EventTextStart opens an assistant text message (MessageID).
	EventTextStart EventKind = iota + 1
	// EventTextDelta carries Text.
	EventTextDelta
	// EventTextEnd closes the text message.
	EventTextEnd
	// EventToolCallStart opens a tool call (ToolCall.ID, ToolCall.Name).
	EventToolCallStart
	// EventToolCallArgs carries a piece of the arguments JSON in Text.
	EventToolCallArgs
	// EventToolCallEnd closes the call (ToolCall has the whole call).
	EventToolCallEnd
	// EventToolResult carries a server tool's result in Text (ToolCall.ID).
	EventToolResult
	// EventToolRunning: the box starts running a server tool (ToolCall);
	// Text is the tool's filler phrase, if it declares one. A call says it
	// while the tool runs long; text wires skip it.
	EventToolRunning
	// EventUsage carries a model step's usage as soon as the provider
	// reports its input tokens (Usage: that step's figures so far). A
	// provider that reports usage on every chunk (config continuousUsage)
	// does so with its first chunk, before the step's text; others only
	// when the step ends. Result.Usage stays the turn's total.
	EventUsage
)

// Event is one step of a streamed turn.
type Event struct {
	Kind      EventKind
	MessageID string
	Text      string
	ToolCall  ToolCall
	// Server marks tool events of tools the box runs itself; wires that only
	// surface client tools (OpenAI, Anthropic) skip them.
	Server bool
	// Usage is an EventUsage's figures.
	Usage Usage
}

// Emit receives the events of a turn, synchronously and in order. An error
// (the client went away) cancels the turn.
type Emit func(Event) error
