package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/runs"
)

// KindAgentTurn is the run kind of a turn.
const KindAgentTurn = "agent_turn"

var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// turn is the state of one turn (or one resumed held turn) in flight.
type turn struct {
	rt        *Runtime
	agentName string
	agent     config.Agent
	model     provider.Model   // the model serving the current step
	models    []provider.Model // the agent's chain, in the order tried
	skipped   []map[string]string
	emit      Emit

	sessionID string // "" when stateless
	kind      string
	turnNo    int
	step      int
	history   []Message // from the checkpoint
	appended  []Message // what this turn adds to the conversation
	userText  string
	resumed   bool   // a decision resumed this turn
	system    string // extra system context of this turn
	options   Options
	whole     bool          // the model answers each step in one piece
	firstByte time.Duration // see TurnRequest.FirstByte and bounds
	chunk     time.Duration // see TurnRequest.Chunk and bounds
	// confirm waits for a claim running beside the first model request
	// (overlapClaim); callModel calls it before the answer's first event.
	confirm func() error

	sel         identity.Selection
	mem         memorySnapshot
	clientTools []Tool
	server      map[string]ServerTool
	held        map[string]bool

	run       runs.Run
	added     int // bytes the box added to the model requests (see addedTokens)
	toolCalls []ToolRun
	leftOut   []map[string]string // tools left out of the turn, and why
	usage     Usage
	texts     []string        // the text of each model step that wrote text
	partial   strings.Builder // the text of the step streaming now
	partialID string          // that step's message id
}

// errClientGone: the wire could not deliver an event (the client went away
// or stopped the turn). It wraps context.Canceled, as the turn is cancelled.
var errClientGone = fmt.Errorf("agent: the client stopped the turn: %w", context.Canceled)

// Turn runs one turn: it loads the session (if any), offers the memory
// tools the agent's settings allow and the client's tools, streams the model
// through emit, runs server tools in a loop, parks a held tool on the
// checkpoint, and records the run and the session. Errors: ErrUnknownAgent,
// ErrInvalidRequest, ErrSessionBusy, ErrDecisionPending, ErrProvider,
// ErrMemory, ErrStorage, or the context's error.
func (r *Runtime) Turn(ctx context.Context, req TurnRequest, emit Emit) (Result, error) {
	ag, err := r.Agent(ctx, req.Agent)
	if err != nil {
		return Result{}, err
	}
	if req.Models != nil {
		ag.Model = req.Models
	}
	if req.Instructions != "" {
		ag.Instructions = req.Instructions
	}
	if req.SessionKey != "" && req.ConversationKey != "" {
		return Result{}, fmt.Errorf("%w: send a session key or a conversation key, not both", ErrInvalidRequest)
	}
	if err := validateMessages(req.Messages); err != nil {
		return Result{}, err
	}
	// The caller's key decides whom it may act for (identity.Policy): every
	// wire's turn passes here, so none can name another person.
	policy := identity.PolicyFrom(ctx)
	ids, err := policy.Admit(req.Identities)
	if err != nil {
		return Result{}, err
	}
	mem, sel, err := r.memorySnapshotFor(ctx, req.Agent, ids)
	if err != nil {
		return Result{}, err
	}
	if req.NoMemoryTools {
		mem.Read, mem.Save, mem.Off = false, false, "the transport reads and saves memory itself"
	}
	t, err := r.newTurn(ctx, req.Agent, ag, emit, sel, mem, req.Tools)
	if err != nil {
		return Result{}, err
	}
	t.system, t.options, t.whole = req.System, req.Options, req.Whole
	t.firstByte, t.chunk = bounds(req, ag)
	if req.RunID != uuid.Nil {
		t.run.ID = req.RunID
	}
	for _, st := range req.ServerTools {
		if _, dup := t.server[st.Def.Name]; dup {
			return Result{}, fmt.Errorf("%w: tool %q is declared twice", ErrInvalidRequest, st.Def.Name)
		}
		t.server[st.Def.Name] = st
	}
	t.run.Metadata["wire"] = req.Wire
	msgs := req.Messages
	switch {
	case req.SessionKey != "":
		t.kind = kindSession
		t.sessionID = SessionID(kindSession, req.Agent, policy.SessionAddress(sel, ids), req.SessionKey)
	case req.ConversationKey != "":
		t.kind = kindConversation
		t.sessionID = SessionID(kindConversation, req.Agent, policy.SessionAddress(sel, ids), req.ConversationKey)
	}
	switch t.kind {
	case kindSession:
		if req.SessionMustExist {
			var one int
			err := r.cfg.Pool.QueryRow(ctx, `SELECT 1 FROM stackbone_platform.sessions WHERE id = $1`, t.sessionID).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return Result{}, fmt.Errorf("%w: no conversation of this agent and person has that key", ErrSessionNotFound)
			}
			if err != nil {
				return Result{}, storageErr("read session", err)
			}
		}
		if req.AfterRun == uuid.Nil {
			if fresh, ok := t.overlapClaim(ctx, msgs); ok {
				t.run.Metadata["session"] = t.sessionID
				t.startWith(fresh)
				return t.loopOverlapped(ctx, req.Messages)
			}
		}
		turns, hist, step, err := r.claimAndLoad(ctx, t.sessionID, req.Agent)
		if err != nil {
			return Result{}, err
		}
		if req.AfterRun != uuid.Nil {
			// Claimed, so the latest turn is settled.
			if err := r.checkLatestRun(ctx, t.sessionID, req.AfterRun); err != nil {
				r.release(context.WithoutCancel(ctx), t.sessionID, StatusCompleted)
				return Result{}, err
			}
		}
		t.turnNo, t.history, t.step = turns+1, hist, step+1
		t.run.Metadata["session"] = t.sessionID
		if msgs, err = newMessages(hist, msgs, t.isServer); err != nil {
			r.release(context.WithoutCancel(ctx), t.sessionID, StatusCompleted)
			return Result{}, err
		}
	case kindConversation:
		turns, err := r.claim(ctx, t.sessionID, t.kind, req.Agent, false)
		if err != nil {
			return Result{}, err
		}
		t.turnNo = turns + 1
		t.run.Metadata["session"] = t.sessionID
	}
	if len(msgs) == 0 {
		if t.sessionID != "" {
			r.release(context.WithoutCancel(ctx), t.sessionID, StatusCompleted)
		}
		return Result{}, fmt.Errorf("%w: there is no new message to answer", ErrInvalidRequest)
	}
	t.startWith(msgs)
	return t.loop(ctx)
}

// startWith makes msgs, the client's new messages, the start of what the
// turn appends to the conversation.
func (t *turn) startWith(msgs []Message) {
	for i := range msgs {
		if msgs[i].ID == "" {
			msgs[i].ID = "msg_" + uuid.NewString()
		}
	}
	t.appended = slices.Clone(msgs)
	t.userText = userTextOf(msgs)
}

// loopOverlapped runs a turn started by overlapClaim: the claim's refusal
// ends it, and a stale cache starts it again from the checkpoint.
func (t *turn) loopOverlapped(ctx context.Context, msgs []Message) (Result, error) {
	res, err := t.loop(ctx) // its first model call confirms the claim
	var refused claimFailed
	switch {
	case errors.As(err, &refused):
		return Result{}, refused.err
	case errors.Is(err, errStaleHistory):
		if err := t.restartFromCheckpoint(ctx, msgs); err != nil {
			return Result{}, err
		}
		// The run says so: the dropped request may have been billed.
		t.run.Metadata["droppedModelRequests"] = 1
		return t.loop(ctx)
	}
	return res, err
}

// confirmClaim waits for an overlapped claim (overlapClaim), once; nil
// when the turn claimed before it began.
func (t *turn) confirmClaim() error {
	if t.confirm == nil {
		return nil
	}
	confirm := t.confirm
	t.confirm = nil
	return confirm()
}

// checkLatestRun returns ErrInvalidRequest unless run is the run of the
// session's latest turn.
func (r *Runtime) checkLatestRun(ctx context.Context, sessionID string, run uuid.UUID) error {
	var last uuid.UUID
	err := r.cfg.Pool.QueryRow(ctx, `SELECT run_id FROM stackbone_platform.session_turns WHERE session_id = $1
		ORDER BY turn DESC LIMIT 1`, sessionID).Scan(&last)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return storageErr("read session", err)
	}
	if last != run {
		return fmt.Errorf("%w: the conversation went on after that answer, and the box keeps one line of history per conversation: continue from its latest answer", ErrInvalidRequest)
	}
	return nil
}

// Decision is a person's answer to a held tool call.
type Decision struct {
	Approve bool
	// Reason is shown to the model when the call is rejected.
	Reason string
}

// Decide resumes a session parked on a held tool call: approved, the tool
// runs; rejected, the model is told so. The turn then continues under the
// identity and memory snapshot it was held with. Errors: ErrSessionNotFound,
// ErrNoDecisionPending, ErrSessionBusy, and those of Turn.
func (r *Runtime) Decide(ctx context.Context, sessionID string, d Decision, emit Emit) (Result, error) {
	var agentName, kind string
	err := r.cfg.Pool.QueryRow(ctx, `SELECT agent_id, kind FROM stackbone_platform.sessions WHERE id = $1`, sessionID).Scan(&agentName, &kind)
	if err != nil {
		return Result{}, ErrSessionNotFound
	}
	ag, err := r.Agent(ctx, agentName)
	if errors.Is(err, ErrUnknownAgent) {
		return Result{}, fmt.Errorf("%w: the session's agent %q is no longer declared", ErrUnknownAgent, agentName)
	}
	if err != nil {
		return Result{}, err
	}
	turns, err := r.claim(ctx, sessionID, kind, agentName, true)
	if err != nil {
		return Result{}, err
	}
	hist, p, step, err := r.loadCheckpoint(ctx, sessionID)
	if err == nil && p == nil {
		err = fmt.Errorf("%w: the checkpoint holds no pending call", ErrNoDecisionPending)
	}
	if err != nil {
		r.release(context.WithoutCancel(ctx), sessionID, StatusHeld)
		return Result{}, err
	}
	sel := identity.Select(identity.Set{p.IdentityKey: p.IdentityValue}, p.IdentityKey)
	t, err := r.newTurn(ctx, agentName, ag, emit, sel, p.Memory, p.Tools)
	if err != nil {
		r.release(context.WithoutCancel(ctx), sessionID, StatusHeld)
		return Result{}, err
	}
	t.kind, t.sessionID, t.turnNo, t.history, t.step, t.resumed = kind, sessionID, turns, hist, step+1, true
	t.firstByte, t.chunk = bounds(TurnRequest{}, ag) // a text turn's: the decision's client reads its stream
	t.run.Metadata["session"] = sessionID
	t.run.Metadata["decision"] = map[string]any{"approve": d.Approve, "toolCallId": p.Call.ID, "tool": p.Call.Name}
	var result string
	if d.Approve {
		if result, err = t.runServerTool(ctx, p.Call); err != nil {
			return t.fail(ctx, err)
		}
	} else {
		b, _ := json.Marshal(map[string]string{"rejected": "a person rejected this call", "reason": d.Reason})
		result = string(b)
	}
	t.appendToolResult(p.Call, result)
	return t.loop(ctx)
}

func (r *Runtime) newTurn(ctx context.Context, name string, ag config.Agent, emit Emit, sel identity.Selection, mem memorySnapshot, clientTools []Tool) (*turn, error) {
	models, err := r.resolveChain(ag.Model)
	if err != nil {
		// Every turn is a run, also one refused for want of a provider.
		err = fmt.Errorf("%w: %v", ErrProvider, err)
		now := r.cfg.Now()
		zero := 0
		run := runs.Run{ID: uuid.New(), Kind: KindAgentTurn, AgentID: name, Model: ag.Model.Primary(), StartedAt: now, FinishedAt: &now,
			DurationMS: &zero, Status: runs.StatusFailed, ErrorCode: ErrorCode(err), Metadata: map[string]any{}}
		if rerr := r.writeRun(context.WithoutCancel(ctx), run); rerr != nil {
			r.log.Warn("agent: record failed run", "run", run.ID, "error", rerr)
		}
		return nil, err
	}
	t := &turn{rt: r, agentName: name, agent: ag, model: models[0], models: models, sel: sel, mem: mem,
		server: map[string]ServerTool{}, held: map[string]bool{}}
	t.emit = func(ev Event) error {
		if err := emit(ev); err != nil {
			return fmt.Errorf("%w: %w", errClientGone, err)
		}
		return nil
	}
	for _, st := range r.memoryTools(mem) {
		t.server[st.Def.Name] = st
	}
	if r.cfg.Tools != nil {
		extra, err := r.cfg.Tools(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, st := range extra {
			if st.Unavailable != "" {
				t.leftOut = append(t.leftOut, map[string]string{"name": st.Def.Name, "reason": st.Unavailable})
				r.log.Debug("tool left out of the turn", "agent", name, "tool", st.Def.Name, "reason", st.Unavailable)
				continue
			}
			if _, dup := t.server[st.Def.Name]; dup {
				return nil, fmt.Errorf("%w: agent %s declares tool %q twice", ErrInvalidRequest, name, st.Def.Name)
			}
			t.server[st.Def.Name] = st
		}
	}
	seen := map[string]bool{}
	for _, ct := range clientTools {
		if !toolNameRe.MatchString(ct.Name) {
			return nil, fmt.Errorf("%w: tool name %q must be 1 to 64 letters, digits, _ or -", ErrInvalidRequest, clip(ct.Name, 64))
		}
		if seen[ct.Name] {
			return nil, fmt.Errorf("%w: tool %q is declared twice", ErrInvalidRequest, ct.Name)
		}
		seen[ct.Name] = true
		if (mem.Read || mem.Save) && (ct.Name == ToolMemoryRead || ct.Name == ToolMemorySave) {
			return nil, fmt.Errorf("%w: the tool name %q is reserved while the agent's memory is on", ErrInvalidRequest, ct.Name)
		}
		if _, clash := t.server[ct.Name]; clash {
			return nil, fmt.Errorf("%w: the tool name %q is the box's own", ErrInvalidRequest, ct.Name)
		}
	}
	t.clientTools = clientTools
	for _, h := range ag.InterruptOn {
		t.held[h] = true
	}
	memMeta := "on"
	if mem.Off != "" {
		memMeta = "off: " + mem.Off
	}
	t.run = runs.Run{ID: uuid.New(), Kind: KindAgentTurn, AgentID: name, Model: models[0].ID, StartedAt: r.cfg.Now(),
		Metadata: map[string]any{"memory": memMeta}}
	if len(t.leftOut) > 0 {
		t.run.Metadata["toolsLeftOut"] = t.leftOut
	}
	return t, nil
}

// loop calls the model and runs server tools until the model answers, calls
// a client tool, calls a held tool, or the step limit is reached.
func (t *turn) loop(ctx context.Context) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, t.rt.cfg.ModelTimeout)
	defer cancel()
	res := Result{RunID: t.run.ID, Model: t.model.ID, Finish: FinishLength}
	for step := 0; step < t.rt.cfg.MaxSteps; step++ {
		msg, finish, err := t.callModel(ctx)
		if err != nil {
			if errors.Is(err, errStaleHistory) || errors.As(err, new(claimFailed)) {
				return Result{}, err // nothing was streamed or recorded: loopOverlapped
			}
			return t.fail(ctx, err)
		}
		t.appended = append(t.appended, msg)
		t.partial.Reset()
		res.MessageID = msg.ID
		if msg.Content != "" {
			t.texts = append(t.texts, msg.Content)
		}
		if len(msg.ToolCalls) == 0 {
			res.Finish = FinishStop
			if finish == openai.FinishReasonLength {
				res.Finish = FinishLength
			}
			break
		}
		var client []ToolCall
		var held *ToolCall
		for _, call := range msg.ToolCalls {
			_, isServer := t.server[call.Name]
			switch {
			case isServer && t.held[call.Name]:
				if held == nil {
					c := call
					held = &c
				}
			case isServer:
				out, err := t.runServerTool(ctx, call)
				if err != nil {
					return t.fail(ctx, err)
				}
				t.appendToolResult(call, out)
			default:
				client = append(client, call)
			}
		}
		if held != nil {
			if t.kind != kindSession {
				return t.fail(ctx, fmt.Errorf("%w: tool %s needs a person's decision, and a turn can only wait for one on a session (send x-stackbone-session, or an AG-UI threadId)", ErrInvalidRequest, held.Name))
			}
			res.Finish, res.Held = FinishHeld, held
			break
		}
		if len(client) > 0 {
			res.Finish, res.ToolCalls = FinishToolCalls, client
			break
		}
	}
	res.Texts, res.Text, res.Usage, res.Model = t.texts, strings.Join(t.texts, StepSeparator), t.usage, t.model.ID
	res.ToolRuns = t.toolCalls
	if err := t.finish(ctx, res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// providerFailed is a provider failure in the box's words (kind, status):
// the provider's own text, which can quote its key, goes only to the debug
// log, redacted.
func (t *turn) providerFailed(err error) error {
	t.rt.log.Debug("provider failed", "agent", t.agentName, "run", t.run.ID, "detail", provider.Detail(err))
	if errors.Is(err, provider.ErrTimeout) {
		return fmt.Errorf("%w: %s", ErrProviderTimeout, provider.Describe(err))
	}
	return fmt.Errorf("%w: %s", ErrProvider, provider.Describe(err))
}

// stepRequest is one model step's request, without the model's name.
func (t *turn) stepRequest() openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{
		Messages: t.providerMessages(),
		Stop:     t.options.Stop,
	}
	if o := t.options; o.Temperature != nil {
		// go-openai omits a zero temperature; the smallest float keeps "0".
		req.Temperature = max(*o.Temperature, math.SmallestNonzeroFloat32)
	}
	if o := t.options; o.TopP != nil {
		req.TopP = *o.TopP
	}
	if o := t.options; o.MaxTokens != nil {
		req.MaxCompletionTokens = *o.MaxTokens
	}
	// What the box adds to the client's request: its tools and system
	// context, counted so an operator sees what they cost.
	t.added += len(t.system)
	for _, st := range t.sortedServerTools() {
		req.Tools = append(req.Tools, toolDef(st.Def))
		t.added += toolBytes + len(st.Def.Name) + len(st.Def.Description) + len(st.Def.Parameters)
	}
	for _, ct := range t.clientTools {
		req.Tools = append(req.Tools, toolDef(ct))
	}
	return req
}

// callModelStream runs one model step on t.model as a stream, emitting
// text and tool call events as they come, after what st already sent.
func (t *turn) callModelStream(ctx context.Context, req openai.ChatCompletionRequest, st *stepState) (Message, openai.FinishReason, error) {
	req.Stream, req.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
	stream, err := t.model.Client.CreateChatCompletionStream(ctx, req)
	if cerr := t.confirmClaim(); cerr != nil {
		if err == nil {
			stream.Close()
		}
		return Message{}, "", cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return Message{}, "", ctx.Err()
		}
		return Message{}, "", t.providerFailed(err)
	}
	defer stream.Close()
	s := &streamStep{t: t, st: st, msg: st.msg}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return Message{}, "", ctx.Err() // the client went away: cancelled, not a provider failure
			}
			return Message{}, "", t.providerFailed(err)
		}
		st.arrived()
		if err := s.chunk(chunk); err != nil {
			return Message{}, "", err
		}
	}
	if s.finish == "" {
		// Every complete answer ends with a finish reason; a stream (or a
		// 200 body that is not a stream at all) that ends without one was
		// cut, and its partial text is not an answer.
		return Message{}, "", fmt.Errorf("%w: the provider's answer ended without finishing", ErrProvider)
	}
	if err := s.end(); err != nil {
		return Message{}, "", err
	}
	return s.msg, s.finish, nil
}

// streamStep is one streamed model answer as its chunks come: the text
// and tool calls so far, and how it finished.
type streamStep struct {
	t      *turn
	st     *stepState
	msg    Message
	calls  []*streamCall
	finish openai.FinishReason
}

// streamCall is a tool call the stream is filling in.
type streamCall struct {
	call    ToolCall
	started bool // its start event went out
}

// chunk takes in one chunk of the stream: usage, text and tool call
// deltas, each emitted as it comes.
func (s *streamStep) chunk(chunk openai.ChatCompletionStreamResponse) error {
	if u := chunk.Usage; u != nil {
		if err := s.usage(u); err != nil {
			return err
		}
	}
	for _, ch := range chunk.Choices {
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
		if d := ch.Delta.Content; d != "" {
			if err := s.text(d); err != nil {
				return err
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			if err := s.toolCall(tc); err != nil {
				return err
			}
		}
	}
	return nil
}

// usage counts the step's usage. A provider that reports usage on every
// chunk reports the step's figures so far: the latest chunk's replace the
// earlier.
func (s *streamStep) usage(u *openai.Usage) error {
	step := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	before := s.st.before
	s.t.usage = Usage{InputTokens: before.InputTokens + step.InputTokens, OutputTokens: before.OutputTokens + step.OutputTokens}
	if s.st.usageSent || step.InputTokens <= 0 {
		return nil
	}
	s.st.usageSent = true
	return s.t.emit(Event{Kind: EventUsage, MessageID: s.msg.ID, Usage: step})
}

func (s *streamStep) text(d string) error {
	if !s.st.textOpen {
		s.st.textOpen = true
		if err := s.t.emit(Event{Kind: EventTextStart, MessageID: s.msg.ID}); err != nil {
			return err
		}
	}
	s.st.text.WriteString(d)
	s.t.partial.WriteString(d)
	return s.t.emit(Event{Kind: EventTextDelta, MessageID: s.msg.ID, Text: d})
}

// toolCall fills in a tool call from its delta; the call starts once its
// id and name are known, and its arguments go out as they come after that.
func (s *streamStep) toolCall(tc openai.ToolCall) error {
	i := len(s.calls)
	if tc.Index != nil {
		i = *tc.Index
	}
	for len(s.calls) <= i {
		s.calls = append(s.calls, &streamCall{})
	}
	p := s.calls[i]
	if tc.ID != "" {
		p.call.ID = tc.ID
	}
	if tc.Function.Name != "" {
		p.call.Name += tc.Function.Name
	}
	if !p.started && p.call.ID != "" && p.call.Name != "" {
		p.started, s.st.toolStarted = true, true
		if err := s.t.emit(Event{Kind: EventToolCallStart, MessageID: s.msg.ID, ToolCall: p.call, Server: s.t.isServer(p.call.Name)}); err != nil {
			return err
		}
	}
	a := tc.Function.Arguments
	if a == "" {
		return nil
	}
	p.call.Arguments += a
	if !p.started {
		return nil
	}
	return s.t.emit(Event{Kind: EventToolCallArgs, MessageID: s.msg.ID, ToolCall: p.call, Text: a, Server: s.t.isServer(p.call.Name)})
}

// end closes the finished answer's text and tool calls and completes the
// message.
func (s *streamStep) end() error {
	t, id := s.t, s.msg.ID
	if s.st.textOpen {
		if err := t.emit(Event{Kind: EventTextEnd, MessageID: id}); err != nil {
			return err
		}
	}
	s.msg.Content = s.st.text.String()
	for _, p := range s.calls {
		if p.call.ID == "" {
			p.call.ID = "call_" + uuid.NewString()
		}
		if p.call.Name == "" {
			continue
		}
		server := t.isServer(p.call.Name)
		var evs []Event
		if !p.started {
			// The provider sent the id or name late: open and fill the call now.
			evs = append(evs, Event{Kind: EventToolCallStart, MessageID: id, ToolCall: p.call, Server: server})
			if p.call.Arguments != "" {
				evs = append(evs, Event{Kind: EventToolCallArgs, MessageID: id, ToolCall: p.call, Text: p.call.Arguments, Server: server})
			}
		}
		evs = append(evs, Event{Kind: EventToolCallEnd, MessageID: id, ToolCall: p.call, Server: server})
		if err := t.emitAll(evs); err != nil {
			return err
		}
		s.msg.ToolCalls = append(s.msg.ToolCalls, p.call)
	}
	return nil
}

// emitAll emits events in order, stopping at the first that fails.
func (t *turn) emitAll(evs []Event) error {
	for _, ev := range evs {
		if err := t.emit(ev); err != nil {
			return err
		}
	}
	return nil
}

// callModelWhole runs one model step on t.model without a stream and emits
// its events at once, in the order a stream gives them (nothing is sent
// before the whole answer is in, so st stays empty).
func (t *turn) callModelWhole(ctx context.Context, req openai.ChatCompletionRequest, st *stepState) (Message, openai.FinishReason, error) {
	resp, err := t.model.Client.CreateChatCompletion(ctx, req)
	st.arrived()
	if cerr := t.confirmClaim(); cerr != nil {
		return Message{}, "", cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return Message{}, "", ctx.Err()
		}
		return Message{}, "", t.providerFailed(err)
	}
	t.usage.InputTokens += resp.Usage.PromptTokens
	t.usage.OutputTokens += resp.Usage.CompletionTokens
	if len(resp.Choices) == 0 || resp.Choices[0].FinishReason == "" {
		return Message{}, "", fmt.Errorf("%w: the provider's answer ended without finishing", ErrProvider)
	}
	ch := resp.Choices[0]
	msg := st.msg
	msg.Content = ch.Message.Content
	if msg.Content != "" {
		t.partial.WriteString(msg.Content)
		if err := t.emitAll([]Event{{Kind: EventTextStart, MessageID: msg.ID}, {Kind: EventTextDelta, MessageID: msg.ID, Text: msg.Content},
			{Kind: EventTextEnd, MessageID: msg.ID}}); err != nil {
			return Message{}, "", err
		}
	}
	for _, tc := range ch.Message.ToolCalls {
		call := ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if call.Name == "" {
			continue
		}
		if call.ID == "" {
			call.ID = "call_" + uuid.NewString()
		}
		server := t.isServer(call.Name)
		evs := []Event{{Kind: EventToolCallStart, MessageID: msg.ID, ToolCall: call, Server: server}}
		if call.Arguments != "" {
			evs = append(evs, Event{Kind: EventToolCallArgs, MessageID: msg.ID, ToolCall: call, Text: call.Arguments, Server: server})
		}
		evs = append(evs, Event{Kind: EventToolCallEnd, MessageID: msg.ID, ToolCall: call, Server: server})
		if err := t.emitAll(evs); err != nil {
			return Message{}, "", err
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	return msg, ch.FinishReason, nil
}

func (t *turn) isServer(name string) bool { _, ok := t.server[name]; return ok }

// runServerTool runs one of the box's tools and records it (name, timing
// and outcome, never arguments or results) in the run. Past the agent's
// limit of tool calls per turn the model is told so instead.
func (t *turn) runServerTool(ctx context.Context, call ToolCall) (string, error) {
	st, ok := t.server[call.Name]
	if !ok {
		return fmt.Sprintf(`{"error":"tool %s is not available in this conversation"}`, call.Name), nil
	}
	limit := t.agent.MaxToolCalls
	if limit == 0 {
		limit = config.DefaultMaxToolCalls
	}
	if len(t.toolCalls) >= limit {
		t.toolCalls = append(t.toolCalls, ToolRun{ID: call.ID, Name: call.Name, Outcome: OutcomeLimit})
		return fmt.Sprintf(`{"error":"this turn reached its limit of %d tool calls: answer with what you have"}`, limit), nil
	}
	if err := t.emit(Event{Kind: EventToolRunning, ToolCall: call, Text: st.Filler, Server: true}); err != nil {
		return "", err
	}
	start := time.Now()
	out, err := st.Run(ctx, call, Scope{Agent: t.agentName, RunID: t.run.ID, SessionID: t.sessionID, Identity: t.sel})
	d := time.Since(start)
	outcome := OutcomeOK
	var te *ToolError
	switch {
	case err == nil:
	case errors.As(err, &te):
		out, outcome, err = te.Message, te.Outcome, nil
		if ctx.Err() != nil {
			// The tool failed because the turn was stopped (barge-in, a
			// hang-up, a client gone): the turn is cancelled, not answered.
			outcome, err = OutcomeCancelled, ctx.Err()
		}
	case ctx.Err() != nil:
		outcome = OutcomeCancelled
	default:
		outcome = OutcomeFailed
	}
	t.toolCalls = append(t.toolCalls, ToolRun{ID: call.ID, Name: call.Name, Duration: d, MS: d.Milliseconds(), Outcome: outcome})
	return out, err
}

func (t *turn) appendToolResult(call ToolCall, out string) {
	m := Message{ID: "msg_" + uuid.NewString(), Role: RoleTool, Content: out, ToolCallID: call.ID}
	t.appended = append(t.appended, m)
	_ = t.emit(Event{Kind: EventToolResult, MessageID: m.ID, ToolCall: call, Text: out, Server: true})
}

// providerMessages is the agent's instructions followed by the conversation.
func (t *turn) providerMessages() []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, 2+len(t.history)+len(t.appended))
	if t.agent.Instructions != "" {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: t.agent.Instructions})
	}
	if t.system != "" {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: t.system})
	}
	for _, list := range [][]Message{t.history, t.appended} {
		for _, m := range list {
			om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
			if m.Cut {
				om.Content = strings.TrimSpace(m.Content + " " + CutMarker)
			}
			for _, c := range m.ToolCalls {
				om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
			}
			out = append(out, om)
		}
	}
	return out
}

// toolBytes is the JSON around one tool definition's fields.
const toolBytes = len(`{"type":"function","function":{"name":"","description":"","parameters":}}`)

// addedTokens estimates the input tokens of n bytes the box added, at four
// bytes a token (English text and JSON with common tokenizers); the run
// records it beside the provider's exact input count.
func addedTokens(n int) int { return (n + 3) / 4 }

func (t *turn) sortedServerTools() []ServerTool {
	names := make([]string, 0, len(t.server))
	for n := range t.server {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]ServerTool, len(names))
	for i, n := range names {
		out[i] = t.server[n]
	}
	return out
}

func toolDef(tl Tool) openai.Tool {
	params := tl.Parameters
	if len(params) == 0 {
		params = emptyObject
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: tl.Name, Description: tl.Description, Parameters: params}}
}

// finish records a completed turn: the run, and for a session the checkpoint,
// transcript and session row, in one round trip.
func (t *turn) finish(ctx context.Context, res Result) error {
	end := t.rt.cfg.Now()
	ms := int(end.Sub(t.run.StartedAt).Milliseconds())
	t.run.FinishedAt, t.run.DurationMS = &end, &ms
	t.run.Status = runs.StatusSucceeded
	t.run.InputTokens, t.run.OutputTokens = t.usage.InputTokens, t.usage.OutputTokens
	t.run.CostUSD = t.model.Cost(t.usage.InputTokens, t.usage.OutputTokens)
	t.run.Metadata["finish"] = string(res.Finish)
	t.run.Metadata["toolCalls"] = t.toolCalls
	t.run.Metadata["addedTokens"] = addedTokens(t.added)
	rec := turnRecord{sessionID: t.sessionID, kind: t.kind, turn: t.turnNo, step: t.step, history: t.history, appended: t.appended,
		status: StatusCompleted, userText: t.userText, replyText: res.Text, run: t.run, durationMS: ms,
		preview: previewOf(t.history, t.appended)}
	if res.Held != nil {
		rec.status = StatusHeld
		rec.held = &pending{Call: *res.Held, MessageID: res.MessageID, IdentityKey: t.sel.Key, IdentityValue: t.sel.Value,
			Memory: t.mem, Tools: t.clientTools}
	}
	if err := t.rt.persist(context.WithoutCancel(ctx), rec); err != nil {
		if t.sessionID != "" {
			t.rt.release(context.WithoutCancel(ctx), t.sessionID, StatusFailed)
		}
		return err
	}
	wireName, _ := t.run.Metadata["wire"].(string)
	t.rt.cfg.Metrics.Turn(wireName, string(res.Finish), time.Duration(ms)*time.Millisecond)
	// Per turn: debug only; operators watch stackbone_turns_seconds.
	t.rt.log.Debug("turn", "agent", t.agentName, "run", t.run.ID, "finish", res.Finish, "ms", ms,
		"in", t.usage.InputTokens, "out", t.usage.OutputTokens, "tools", len(t.toolCalls))
	return nil
}

// fail records a failed turn and frees the session; nothing of the turn is
// checkpointed, so the client can send it again.
func (t *turn) fail(ctx context.Context, cause error) (Result, error) {
	end := t.rt.cfg.Now()
	ms := int(end.Sub(t.run.StartedAt).Milliseconds())
	t.run.FinishedAt, t.run.DurationMS = &end, &ms
	t.run.Status, t.run.ErrorCode = runs.StatusFailed, ErrorCode(cause)
	stopped := errors.Is(cause, context.Canceled)
	if stopped {
		t.run.Status = runs.StatusCancelled
	}
	t.run.InputTokens, t.run.OutputTokens = t.usage.InputTokens, t.usage.OutputTokens
	t.run.Metadata["toolCalls"] = t.toolCalls
	t.run.Metadata["addedTokens"] = addedTokens(t.added)
	if stopped && t.kind == kindSession && !t.resumed {
		// The client stopped the turn: the session keeps the question and
		// what was streamed of the answer, marked cut, so the next turn reads
		// naturally and the client need not send the question again.
		t.run.Metadata["cut"] = true
		appended := t.cutMessages()
		rec := turnRecord{sessionID: t.sessionID, kind: t.kind, turn: t.turnNo, step: t.step, history: t.history, appended: appended,
			status: StatusCompleted, userText: t.userText, replyText: strings.Join(append(slices.Clone(t.texts), t.partial.String()), StepSeparator),
			run: t.run, durationMS: ms, preview: previewOf(t.history, appended)}
		if err := t.rt.persist(context.WithoutCancel(ctx), rec); err != nil {
			t.rt.release(context.WithoutCancel(ctx), t.sessionID, StatusFailed)
			t.rt.log.Warn("agent: keep a stopped turn", "run", t.run.ID, "error", err)
		}
		t.rt.log.Info("turn stopped by the client", "agent", t.agentName, "run", t.run.ID, "ms", ms)
		return Result{RunID: t.run.ID}, cause
	}
	if t.sessionID != "" {
		// Free the session first: whoever sees the failed run may send the
		// next turn at once. A failed decision leaves the session held, so a
		// person can decide again; the checkpoint still holds the pending call.
		status := StatusFailed
		if t.resumed {
			status = StatusHeld
		}
		t.rt.release(context.WithoutCancel(ctx), t.sessionID, status)
	}
	if err := t.rt.writeRun(context.WithoutCancel(ctx), t.run); err != nil {
		t.rt.log.Warn("agent: record failed run", "run", t.run.ID, "error", err)
	}
	if c := fault.Cause(cause); c != nil {
		t.rt.log.Warn("turn failed in storage", "agent", t.agentName, "run", t.run.ID, "code", t.run.ErrorCode, "error", c)
	}
	t.rt.log.Info("turn failed", "agent", t.agentName, "run", t.run.ID, "code", t.run.ErrorCode, "ms", ms)
	return Result{RunID: t.run.ID}, cause
}

// cutMessages is what a stopped turn leaves in its session: the new
// messages and the finished steps, without tool calls that got no result,
// and the answer being streamed, marked cut.
func (t *turn) cutMessages() []Message {
	answered := map[string]bool{}
	for _, m := range t.appended {
		if m.Role == RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []Message
	for _, m := range t.appended {
		if m.Role == RoleAssistant {
			m.ToolCalls = slices.DeleteFunc(slices.Clone(m.ToolCalls), func(c ToolCall) bool { return !answered[c.ID] })
			if m.Content == "" && len(m.ToolCalls) == 0 {
				continue
			}
		}
		out = append(out, m)
	}
	// The cut answer keeps the id its events carried, so a client that
	// resends what it received by id (AG-UI) adds nothing twice.
	id := t.partialID
	if id == "" || t.partial.Len() == 0 {
		id = "msg_" + uuid.NewString()
	}
	return append(out, Message{ID: id, Role: RoleAssistant, Content: t.partial.String(), Cut: true})
}

// ErrorCode is a short code for an error of the runtime, for run history:
// the error's code (package fault), "cancelled" or "timeout" for the
// context's errors, else "internal".
func ErrorCode(err error) string {
	if c := fault.Code(err); c != "" {
		return c
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "internal"
}

func userTextOf(msgs []Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == RoleUser {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

func validateMessages(msgs []Message) error {
	if len(msgs) > 10000 {
		return fmt.Errorf("%w: at most 10000 messages", ErrInvalidRequest)
	}
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem, RoleUser:
		case RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return fmt.Errorf("%w: messages[%d] has a tool call without id or name", ErrInvalidRequest, i)
				}
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("%w: messages[%d] is a tool result without a tool call id", ErrInvalidRequest, i)
			}
		default:
			return fmt.Errorf("%w: messages[%d] has role %q; use system, user, assistant or tool", ErrInvalidRequest, i, clip(m.Role, 20))
		}
	}
	return nil
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
