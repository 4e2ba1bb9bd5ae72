package aguiwire

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/wire"
)

// ProtocolVersion is the AG-UI version this wire speaks, declared on
// RUN_STARTED.
const ProtocolVersion = "1.0"

// maxBodyBytes bounds a RunAgentInput. Clients resend the whole history on
// every run, so this is generous.
const maxBodyBytes = 8 << 20

// Config wires the wire (see wire.Config).
type Config = wire.Config

type handler struct {
	rt    *agent.Runtime
	guard func(*http.Request, string, bool) (*http.Request, *api.Refusal)
	log   *slog.Logger
	// keepAlive is Config.KeepAlive.
	keepAlive time.Duration
}

// Register mounts POST /agui/{agent} on mux. It panics when Runtime or Guard
// is missing: that is a wiring mistake, not a request error.
func Register(mux wire.Mux, cfg Config) {
	if cfg.Runtime == nil || cfg.Guard == nil {
		panic("aguiwire: Config.Runtime and Config.Guard are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	mux.PersonHandle("POST /agui/{agent}", &handler{rt: cfg.Runtime, guard: cfg.Guard, log: log.With("component", "agui"), keepAlive: cfg.KeepAlive})
}

// known reports whether the runtime declares the agent.
func (h *handler) known(name string) bool {
	for _, a := range h.rt.Agents() {
		if a.Name == name {
			return true
		}
	}
	return false
}

// classify returns the kind and code of err: the text wires' own
// (wire.Classify), with AG-UI's one code for every malformed request;
// unknown errors are internal. Kinds whose status is under 500 refuse the
// request before the stream starts; the others fail a started run with
// RUN_ERROR.
func classify(err error) (kind fault.Kind, code string, known bool) {
	var bad *inputError
	if errors.As(err, &bad) {
		return fault.Invalid, "invalid_request", true
	}
	te, ok := wire.Classify(err)
	switch {
	case !ok:
		return te.Kind, "internal", false
	case te.Kind == fault.Invalid:
		return te.Kind, "invalid_request", true
	}
	return te.Kind, te.Code, true
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r2, refused := h.guard(r, auth.ScopeAgentsRun, false)
	if refused != nil {
		if refused.Kind == fault.Unauthenticated {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stackbone"`)
		}
		writeError(w, refused.Kind, refused.Code, refused.Message)
		return
	}
	r = r2
	name := r.PathValue("agent")
	if !h.known(name) {
		writeError(w, fault.NotFound, "agent_not_found", "no agent named "+quote(name))
		return
	}
	in, err := decodeInput(w, r)
	if err != nil {
		writeError(w, fault.Invalid, "invalid_request", err.Error())
		return
	}
	req, err := in.turnRequest(name, h.log)
	if err != nil {
		kind, code, _ := classify(err)
		writeError(w, kind, code, err.Error())
		return
	}
	runID := in.RunID
	if runID == "" {
		runID = uuid.NewString()
	}
	s := newStream(w, in.ThreadID, runID)
	// The box's own run id (GET /api/runs/{id}), beside AG-UI's runId: the
	// header goes out with the stream.
	req.RunID = uuid.New()
	w.Header().Set(wire.HeaderRunID, req.RunID.String())
	// While the turn writes nothing (a slow provider), comment lines keep
	// proxies and clients from closing the stream.
	ka := wire.StartKeepAlive(h.keepAlive, s.keepAlive)
	res, err := h.rt.Turn(r.Context(), req, func(ev agent.Event) error {
		return ka.Do(func() error { return s.emit(ev) })
	})
	ka.Stop()
	if err != nil && !s.started && res.RunID == uuid.Nil {
		w.Header().Del(wire.HeaderRunID) // refused before the run began
	}
	attrs := []slog.Attr{slog.String("agent", name), slog.String("aguiRunId", runID),
		slog.Int("messages", len(req.Messages)), slog.Int("tools", len(req.Tools)), slog.Bool("session", req.SessionKey != "")}
	if err != nil {
		kind, code, known := classify(err)
		attrs = append(attrs, slog.String("code", code), slog.Int("events", s.events), slog.Duration("duration", time.Since(start)))
		switch {
		case !s.started && api.Status(kind) < 500:
			writeError(w, kind, code, err.Error())
			h.log.LogAttrs(r.Context(), slog.LevelInfo, "agui run refused", attrs...)
		case r.Context().Err() != nil:
			h.log.LogAttrs(r.Context(), slog.LevelInfo, "agui run ended: client went away", attrs...)
		default:
			msg := err.Error()
			if !known {
				msg = "internal error"
				attrs = append(attrs, slog.String("error", err.Error()))
			}
			_ = s.fail(code, msg)
			h.log.LogAttrs(r.Context(), slog.LevelWarn, "agui run failed", attrs...)
		}
		return
	}
	if err := s.finish(res); err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	attrs = append(attrs, slog.String("runId", res.RunID.String()), slog.String("finish", string(res.Finish)),
		slog.Int("events", s.events), slog.Duration("duration", time.Since(start)))
	h.log.LogAttrs(r.Context(), slog.LevelDebug, "agui run", attrs...)
}

// errorBody is the JSON body of a refused request.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError answers a refused request with its kind's status.
func writeError(w http.ResponseWriter, kind fault.Kind, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(api.Status(kind))
	_ = json.NewEncoder(w).Encode(errorBody{Error: errorDetail{Code: code, Message: msg}})
}

func quote(s string) string {
	b, _ := json.Marshal(clip(s, 100))
	return string(b)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
