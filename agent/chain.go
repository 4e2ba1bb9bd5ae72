package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/provider"
)

// callModel runs one model step on the agent's chain of models: the first
// whose circuit lets a request through answers; a provider failure (a
// refused connection, an error status, a timeout, a cut or unusable
// answer) moves to the next model within the step. An answer cut after
// some of its text was sent goes on from that text: the next model is
// given it and asked to continue, and its words follow on the same
// message, so the client never gets the start twice. The run records which
// model served and why the others were skipped.
func (t *turn) callModel(ctx context.Context) (Message, openai.FinishReason, error) {
	req := t.stepRequest()
	base := req.Messages
	st := &stepState{msg: Message{ID: "msg_" + uuid.NewString(), Role: RoleAssistant}, before: t.usage}
	t.partial.Reset()
	t.partialID = st.msg.ID
	var failed error
	for i, m := range t.models {
		if !m.Circuit.Allow() {
			t.skip(m, "circuit open")
			continue
		}
		t.model = m
		req.Model = m.Name
		msg, finish, err := t.attempt(ctx, req, st, i < len(t.models)-1)
		if err == nil {
			m.Circuit.Success()
			t.served(m)
			return msg, finish, nil
		}
		if !errors.Is(err, ErrProvider) && !errors.Is(err, ErrProviderTimeout) {
			m.Circuit.Release() // cancelled, or the client went away: no verdict on the provider
			return Message{}, "", err
		}
		m.Circuit.Fail(fault.Code(err))
		t.skip(m, fault.Code(err))
		failed = err
		if st.toolStarted || i == len(t.models)-1 {
			break // a tool call was half sent: it cannot be taken back
		}
		if sent := st.text.String(); sent != "" {
			req.Messages = append(slices.Clone(base),
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: sent},
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: continueNote})
		}
	}
	down := true
	for _, m := range t.models {
		down = down && m.Circuit.Down()
	}
	switch {
	case down && failed != nil:
		return Message{}, "", fmt.Errorf("%w (last: %w)", ErrProvidersDown, failed)
	case down:
		return Message{}, "", fmt.Errorf("%w: every model is skipped while its provider's circuit is open", ErrProvidersDown)
	}
	return Message{}, "", failed
}

// Defaults of a streamed text turn's bounds on a model of a chain that is
// not its last (config.Agent FirstByteTimeout and ChunkTimeout). A text
// client reads as it comes, so they are longer than a call's: a reasoning
// model may think for seconds before its first token, but once it speaks
// its tokens come in a steady stream.
const (
	DefaultFirstByteTimeout = 20 * time.Second
	DefaultChunkTimeout     = 5 * time.Second
)

// bounds are the turn's FirstByte and Chunk: those of the request, else
// (a text turn) the agent's or the defaults. An answer taken whole has
// no chunks to bound, and its first byte is the whole answer, which a long
// one may take long to write: it is waited for as its provider allows.
func bounds(req TurnRequest, ag config.Agent) (firstByte, chunk time.Duration) {
	firstByte, chunk = req.FirstByte, req.Chunk
	if firstByte == 0 && chunk == 0 && !req.Whole {
		firstByte, chunk = DefaultFirstByteTimeout, DefaultChunkTimeout
		if ag.FirstByteTimeout > 0 {
			firstByte = ag.FirstByteTimeout
		}
		if ag.ChunkTimeout > 0 {
			chunk = ag.ChunkTimeout
		}
	}
	if chunk == 0 {
		chunk = firstByte
	}
	return firstByte, chunk
}

// errNoToken cancels a model's request that gave no token within the
// turn's first-byte bound, or none within its chunk bound since the last.
var errNoToken = errors.New("agent: no token in time")

// attempt asks t.model for the step. With more models after it, a model
// that gives no first token within the first-byte bound, or stalls (or
// trickles) between two for the chunk bound, is a provider timeout, so the
// next one answers (going on from what this one sent).
func (t *turn) attempt(ctx context.Context, req openai.ChatCompletionRequest, st *stepState, more bool) (Message, openai.FinishReason, error) {
	actx := ctx
	st.arrived = func() {}
	var started atomic.Bool
	if t.firstByte > 0 && more {
		var cancel context.CancelCauseFunc
		actx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		timer := time.AfterFunc(t.firstByte, func() { cancel(errNoToken) })
		defer timer.Stop()
		st.arrived = func() {
			started.Store(true)
			timer.Reset(t.chunk)
		}
	}
	var msg Message
	var finish openai.FinishReason
	var err error
	if t.whole {
		msg, finish, err = t.callModelWhole(actx, req, st)
	} else {
		msg, finish, err = t.callModelStream(actx, req, st)
	}
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errNoToken) {
		err = fmt.Errorf("%w: no first token within %s", ErrProviderTimeout, t.firstByte)
		if started.Load() {
			err = fmt.Errorf("%w: no next token within %s", ErrProviderTimeout, t.chunk)
		}
	}
	return msg, finish, err
}

// continueNote asks the next model of a chain to go on from an answer a
// failed provider cut, whose start the client already has.
const continueNote = "Your answer above was cut off. Continue it from exactly where it stopped, without repeating any of it."

// stepState is one model step's answer as sent to the client so far,
// carried from a failed model of the chain to the next.
type stepState struct {
	msg         Message
	text        strings.Builder
	textOpen    bool
	usageSent   bool
	toolStarted bool  // a tool call event went out: the step cannot move on
	before      Usage // the turn's usage before this step
	// arrived is called when the model's answer starts (its first chunk,
	// or the whole answer).
	arrived func()
}

// skip records in the run why a model of the chain did not answer.
func (t *turn) skip(m provider.Model, reason string) {
	t.skipped = append(t.skipped, map[string]string{"model": m.ID, "reason": reason})
	t.run.Metadata["modelsSkipped"] = t.skipped
}

// served records the model that answered, when the agent has a chain.
func (t *turn) served(m provider.Model) {
	t.run.Model = m.ID
	if len(t.models) > 1 {
		t.run.Metadata["servedBy"] = m.ID
	}
}

// resolveChain resolves an agent's models. Entries whose provider is not
// configured are left out; when none is left, the primary's error.
func (r *Runtime) resolveChain(chain config.ModelChain) ([]provider.Model, error) {
	var models []provider.Model
	var first error
	for _, id := range chain {
		m, err := r.cfg.Models.Resolve(id)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		models = append(models, m)
	}
	if len(models) == 0 {
		if first == nil {
			first = fmt.Errorf("%w: the agent names no model", provider.ErrInvalidModel)
		}
		return nil, first
	}
	return models, nil
}
