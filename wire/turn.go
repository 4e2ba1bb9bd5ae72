package wire

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
)

// HeaderRunID names the run behind an answer (GET /api/runs/{id}), on every
// wire's answer of a turn that ran, failed ones included.
const HeaderRunID = "x-stackbone-run-id"

// Call is one decoded request of a wire.
type Call struct {
	// Turn is the turn to run; Turn.Agent is the request's model.
	Turn agent.TurnRequest
	// Stream asks for the answer as a stream.
	Stream bool
	// Request is the protocol's own request, handed back to its writers.
	Request any
}

// Error is a wire's own error, ready to be written in its shape.
type Error interface {
	Status() int
	// Write answers the error before anything else was written.
	Write(w http.ResponseWriter)
}

// Protocol is what one text wire (OpenAI Chat Completions, OpenAI
// Responses, Anthropic Messages) translates; Handler does the rest, the
// same for all of them: authentication, the agent check, running the turn,
// the run id header, plain or streamed answers, and errors before or during
// a stream.
type Protocol interface {
	// Decode reads a request into a call: the body, and the box's headers
	// (WithHeaders). Its errors are classified by Classify.
	Decode(w http.ResponseWriter, r *http.Request) (Call, error)
	// Classify maps an error of Decode or of the runtime to the wire's
	// error; ok is false for an internal error.
	Classify(err error) (e Error, ok bool)
	// Refusal is the wire's error for a refused key.
	Refusal(rf *api.Refusal) Error
	// UnknownModel is the wire's error for a model that names no agent.
	UnknownModel(name string) Error
	// Reply writes a plain answer.
	Reply(w http.ResponseWriter, c Call, res agent.Result)
	// NewStream returns the writer of a streamed answer; it writes nothing
	// (and so no status) before the turn's first event.
	NewStream(w http.ResponseWriter, c Call) Stream
}

// Stream writes a streamed answer.
type Stream interface {
	// Emit writes a turn's event; an error (the client went away) stops
	// the turn.
	Emit(agent.Event) error
	// Started reports whether the stream began (its 200 was written).
	Started() bool
	// Broken is the first write error: the client went away.
	Broken() error
	// Finish ends a stream whose turn succeeded.
	Finish(res agent.Result)
	// Fail ends a stream that began with one error in the wire's shape.
	Fail(e Error)
	// KeepAlive writes the wire's keep-alive, starting the stream (its
	// 200 and opening event) if it has not begun.
	KeepAlive() error
}

// Handler serves one protocol's turn route. xAPIKey accepts the key from
// x-api-key as well as Authorization (Anthropic's clients send it there).
func Handler(cfg Config, name string, p Protocol, xAPIKey bool) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &handler{cfg: cfg, p: p, xAPIKey: xAPIKey, log: cfg.Logger.With("component", "wire."+name)}
}

type handler struct {
	cfg     Config
	p       Protocol
	xAPIKey bool
	log     *slog.Logger
}

// Known reports whether name is a declared agent.
func Known(rt *agent.Runtime, name string) bool {
	for _, a := range rt.Agents() {
		if a.Name == name {
			return true
		}
	}
	return false
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r, rf := h.cfg.Guard(r, auth.ScopeAgentsRun, h.xAPIKey)
	if rf != nil {
		h.p.Refusal(rf).Write(w)
		return
	}
	c, err := h.p.Decode(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !Known(h.cfg.Runtime, c.Turn.Agent) {
		h.p.UnknownModel(c.Turn.Agent).Write(w)
		return
	}
	if c.Turn.RunID == uuid.Nil {
		c.Turn.RunID = uuid.New()
	}
	runID := c.Turn.RunID.String()
	var res agent.Result
	if c.Stream {
		s := h.p.NewStream(w, c)
		// The run exists once the turn emits or runs long enough for a
		// keep-alive; the header goes out with the stream's first write.
		first := func() {
			if !s.Started() {
				w.Header().Set(HeaderRunID, runID)
			}
		}
		ka := StartKeepAlive(h.cfg.KeepAlive, func() error {
			first()
			return s.KeepAlive()
		})
		res, err = h.cfg.Runtime.Turn(r.Context(), c.Turn, func(ev agent.Event) error {
			return ka.Do(func() error {
				first()
				return s.Emit(ev)
			})
		})
		ka.Stop()
		switch {
		case err != nil && !s.Started():
			setRun(w, res)
			h.fail(w, r, err)
		case err != nil && s.Broken() != nil:
			// Writing failed: the client went away, and nobody is left to tell.
			h.log.Debug("stream ended by the client", "agent", c.Turn.Agent, "run", runID)
		case err != nil:
			e, ok := h.p.Classify(err)
			h.logFailure(r, err, e, ok)
			s.Fail(e)
		default:
			w.Header().Set(HeaderRunID, runID)
			s.Finish(res)
		}
	} else {
		// The client takes the answer whole: so does the box from the model.
		c.Turn.Whole = true
		res, err = h.cfg.Runtime.Turn(r.Context(), c.Turn, func(agent.Event) error { return nil })
		setRun(w, res)
		if err != nil {
			h.fail(w, r, err)
		} else {
			h.p.Reply(w, c, res)
		}
	}
	if err == nil {
		h.log.LogAttrs(r.Context(), slog.LevelDebug, "turn", slog.String("agent", c.Turn.Agent),
			slog.String("run", runID), slog.String("finish", string(res.Finish)), slog.Bool("stream", c.Stream),
			slog.Int("messages", len(c.Turn.Messages)), slog.Int("inputTokens", res.Usage.InputTokens),
			slog.Int("outputTokens", res.Usage.OutputTokens), slog.Duration("duration", time.Since(start)))
	}
}

// setRun names the run of a turn that ran (a failed turn's too).
func setRun(w http.ResponseWriter, res agent.Result) {
	if res.RunID != uuid.Nil {
		w.Header().Set(HeaderRunID, res.RunID.String())
	}
}

// fail answers err before anything was written.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if Gone(r, err) {
		return
	}
	e, ok := h.p.Classify(err)
	h.logFailure(r, err, e, ok)
	e.Write(w)
}

func (h *handler) logFailure(r *http.Request, err error, e Error, ok bool) {
	switch {
	case Gone(r, err):
	case !ok:
		h.log.Error("turn failed", "error", err)
	case e.Status() >= 500:
		h.log.Warn("turn failed", "status", e.Status(), "code", agent.ErrorCode(err))
	}
}

// Gone reports whether the client went away, so there is no one to answer.
func Gone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
