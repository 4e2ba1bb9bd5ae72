package agent

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
)

// Register adds the runtime's routes to the API server: the agent catalog,
// each agent's provider chains and turn-taking with Studio's overrides
// (when the runtime has ChainSettings), the models the config knows of, and the sessions the
// runtime keeps (list, detail, and the decision on a held tool). cfg is
// the loaded configuration.
func Register(srv *api.Server, rt *Runtime, cfg *config.Config) {
	h := &handlers{rt: rt, cfg: cfg}
	srv.Route("GET /api/agents", auth.ScopeConfigRead, h.agentsList)
	if rt.cfg.Chains != nil {
		srv.Route("GET /api/agents/{name}/models", auth.ScopeConfigRead, h.chainsGet)
		srv.Route("PUT /api/agents/{name}/models", auth.ScopeConfigWrite, h.chainsPut)
		srv.Route("DELETE /api/agents/{name}/models", auth.ScopeConfigWrite, h.chainsDelete)
		srv.Route("GET /api/agents/{name}/turntaking", auth.ScopeConfigRead, h.turnGet)
		srv.Route("PUT /api/agents/{name}/turntaking", auth.ScopeConfigWrite, h.turnPut)
		srv.Route("DELETE /api/agents/{name}/turntaking", auth.ScopeConfigWrite, h.turnDelete)
	}
	srv.Route("GET /api/system/models", auth.ScopeConfigRead, h.systemModels)
	srv.Route("GET /api/sessions", auth.ScopeSessionsRead, h.sessionsList)
	srv.Route("GET /api/sessions/{id}", auth.ScopeSessionsRead, h.sessionsGet)
	srv.Route("POST /api/sessions/{id}/decision", auth.ScopeSessionsWrite, h.sessionsDecide)
}

type handlers struct {
	rt  *Runtime
	cfg *config.Config
}

type agentView struct {
	Name string `json:"name"`
	// Model is the primary model in force; Fallbacks are the models tried
	// after it, in order.
	Model     string   `json:"model"`
	Fallbacks []string `json:"fallbacks"`
	// STT and TTS are the call's speech chains in force.
	STT []string `json:"stt"`
	TTS []string `json:"tts"`
	// Origins say where each chain comes from: studio, code or default.
	Origins ChainOrigins `json:"origins"`
	// Line is what the agent does on a phone line, as its config sets it
	// (absent when it sets none of it).
	Line *LineView `json:"line,omitempty"`
}

// LineView is an agent's phone-line policy as its config declares it:
// who answered, keys, warm transfers, recording and the analysis after
// the call.
type LineView struct {
	AnsweringMachine *AnsweringMachineView `json:"answeringMachine,omitempty"`
	Keypad           bool                  `json:"keypad"`
	TransferTargets  []TransferTargetView  `json:"transferTargets,omitempty"`
	// Recording: calls are recorded (with RecordingConsent said first,
	// kept RecordingRetentionHours).
	Recording               bool     `json:"recording"`
	RecordingConsent        string   `json:"recordingConsent,omitempty"`
	RecordingRetentionHours float64  `json:"recordingRetentionHours,omitempty"`
	AnalysisFields          []string `json:"analysisFields,omitempty"`
	AnalysisCriteria        []string `json:"analysisCriteria,omitempty"`
}

// AnsweringMachineView is an agent's answering-machine policy.
type AnsweringMachineView struct {
	Detect    string `json:"detect"`
	Voicemail string `json:"voicemail"`
	Message   string `json:"message,omitempty"`
	Menu      string `json:"menu"`
}

// TransferTargetView is one person a call can be handed to.
type TransferTargetView struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Number      string `json:"number"`
	Trunk       string `json:"trunk,omitempty"`
}

// lineView is a's phone-line policy, nil when it declares none.
func lineView(a config.Agent) *LineView {
	var l LineView
	if v := a.Voice; v != nil {
		if m := v.AnsweringMachine; m != nil && m.Detect != "" && m.Detect != config.DetectOff {
			l.AnsweringMachine = &AnsweringMachineView{Detect: m.Detect, Voicemail: orDefault(m.Voicemail, config.VoicemailHangup),
				Message: m.Message, Menu: orDefault(m.Menu, config.MenuTalk)}
		}
		l.Keypad = v.Keypad
		if tr := v.Transfer; tr != nil {
			for _, t := range tr.Targets {
				l.TransferTargets = append(l.TransferTargets, TransferTargetView{Name: t.Name, Description: t.Description, Number: t.Number, Trunk: t.Trunk})
			}
		}
		if r := v.Recording; r != nil && r.Enabled {
			l.Recording = true
			l.RecordingConsent = orDefault(r.Consent, config.DefaultRecordingConsent)
			if r.Consent == "-" {
				l.RecordingConsent = ""
			}
			retention := r.Retention
			if retention <= 0 {
				retention = config.DefaultRecordingRetention
			}
			l.RecordingRetentionHours = retention.Hours()
		}
	}
	if an := a.Analysis; an != nil {
		if props, ok := an.Fields["properties"].(map[string]any); ok {
			for name := range props {
				l.AnalysisFields = append(l.AnalysisFields, name)
			}
			slices.Sort(l.AnalysisFields)
		}
		l.AnalysisCriteria = an.Criteria
	}
	if l.AnsweringMachine == nil && !l.Keypad && l.TransferTargets == nil && !l.Recording && l.AnalysisFields == nil && l.AnalysisCriteria == nil {
		return nil
	}
	return &l
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// agentsList serves GET /api/agents: every declared agent with its chains
// in force (Studio's overrides over the config's).
func (h *handlers) agentsList(w http.ResponseWriter, r *http.Request) error {
	out := []agentView{}
	for _, name := range h.cfg.AgentNames() {
		v := resolveChains(name, h.cfg.Agents[name], stored{}, nil)
		if c := h.rt.cfg.Chains; c != nil {
			var err error
			if v, err = c.Get(r.Context(), name); err != nil {
				return err
			}
		}
		chain := v.Value.Model
		fallbacks := []string{}
		if len(chain) > 1 {
			fallbacks = chain[1:]
		}
		out = append(out, agentView{Name: name, Model: config.ModelChain(chain).Primary(), Fallbacks: fallbacks,
			STT: v.Value.STT, TTS: v.Value.TTS, Origins: v.Origins, Line: lineView(h.cfg.Agents[name])})
	}
	api.WriteData(w, http.StatusOK, out)
	return nil
}

// reply writes v, the answer of a route that read or changed it, or
// returns err.
func reply[T any](w http.ResponseWriter, v T, err error) error {
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, v)
	return nil
}

// resetField reads ?field= of a reset: "" when absent (every field), an
// ErrInvalidRequest naming the fields when present but empty.
func resetField(r *http.Request, fields string) (string, error) {
	q := r.URL.Query()
	if q.Has("field") && q.Get("field") == "" {
		return "", fmt.Errorf("%w: field must be %s", ErrInvalidRequest, fields)
	}
	return q.Get("field"), nil
}

func (h *handlers) chainsGet(w http.ResponseWriter, r *http.Request) error {
	v, err := h.rt.cfg.Chains.Get(r.Context(), r.PathValue("name"))
	return reply(w, v, err)
}

// chainsPut sets the chains the body names, each a list of ids tried in
// order; the others stay as they are.
func (h *handlers) chainsPut(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Model api.Field[[]string] `json:"model"`
		STT   api.Field[[]string] `json:"stt"`
		TTS   api.Field[[]string] `json:"tts"`
	}
	if err := api.Decode(w, r, 16<<10, &b); err != nil {
		return err
	}
	var p ChainsPatch
	for _, f := range []struct {
		name  string
		field api.Field[[]string]
		to    *[]string
	}{{ChainModel, b.Model, &p.Model}, {ChainSTT, b.STT, &p.STT}, {ChainTTS, b.TTS, &p.TTS}} {
		v, err := f.field.Value(f.name)
		if err != nil {
			return fmt.Errorf("%w: %v; DELETE ?field=%s goes back to the config's chain", ErrInvalidRequest, err, f.name)
		}
		if v != nil {
			*f.to = *v
		}
	}
	v, err := h.rt.cfg.Chains.Put(r.Context(), api.Actor(r), r.PathValue("name"), p)
	return reply(w, v, err)
}

// chainsDelete removes the override of one chain (?field=model, stt or
// tts) or of all three.
func (h *handlers) chainsDelete(w http.ResponseWriter, r *http.Request) error {
	field, err := resetField(r, "model, stt or tts")
	if err != nil {
		return err
	}
	v, err := h.rt.cfg.Chains.Reset(r.Context(), api.Actor(r), r.PathValue("name"), field)
	return reply(w, v, err)
}

func (h *handlers) turnGet(w http.ResponseWriter, r *http.Request) error {
	v, err := h.rt.cfg.Chains.TurnTaking(r.Context(), r.PathValue("name"))
	return reply(w, v, err)
}

// TurnTakingPatch is the body of PUT /api/agents/{name}/turntaking: the
// settings it names are saved, the others stay as they are (null is
// refused: DELETE ?field= goes back to the config's value).
type TurnTakingPatch struct {
	VAD                api.Field[string]   `json:"vad"`
	EndpointingMode    api.Field[string]   `json:"endpointingMode"`
	TurnDetection      api.Field[string]   `json:"turnDetection"`
	Eagerness          api.Field[string]   `json:"eagerness"`
	MinEndpointDelayMs api.Field[int64]    `json:"minEndpointDelayMs"`
	MaxEndpointDelayMs api.Field[int64]    `json:"maxEndpointDelayMs"`
	InterruptionMode   api.Field[string]   `json:"interruptionMode"`
	MinWords           api.Field[int64]    `json:"minWords"`
	MinVoicedMs        api.Field[int64]    `json:"minVoicedMs"`
	ResumeAfterMs      api.Field[int64]    `json:"resumeAfterMs"`
	ImmediateAfterMs   api.Field[int64]    `json:"immediateAfterMs"`
	Backchannels       api.Field[[]string] `json:"backchannels"`
}

// fieldInto sets *to to f's value when f is present.
func fieldInto[T any](name string, f api.Field[T], to **T, errs *[]string) {
	v, err := f.Value(name)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("%v; DELETE ?field=%s goes back to the config's value", err, name))
	}
	*to = v
}

// turnPut saves the settings the body names; the others stay as they are.
func (h *handlers) turnPut(w http.ResponseWriter, r *http.Request) error {
	var b TurnTakingPatch
	if err := api.Decode(w, r, 16<<10, &b); err != nil {
		return err
	}
	var p TurnOverrides
	var errs []string
	fieldInto(TurnVAD, b.VAD, &p.VAD, &errs)
	fieldInto(TurnEndpointingMode, b.EndpointingMode, &p.EndpointingMode, &errs)
	fieldInto(TurnDetection, b.TurnDetection, &p.TurnDetection, &errs)
	fieldInto(TurnEagerness, b.Eagerness, &p.Eagerness, &errs)
	fieldInto(TurnMinEndpointDelay, b.MinEndpointDelayMs, &p.MinEndpointDelayMs, &errs)
	fieldInto(TurnMaxEndpointDelay, b.MaxEndpointDelayMs, &p.MaxEndpointDelayMs, &errs)
	fieldInto(TurnInterruptionMode, b.InterruptionMode, &p.InterruptionMode, &errs)
	fieldInto(TurnMinWords, b.MinWords, &p.MinWords, &errs)
	fieldInto(TurnMinVoiced, b.MinVoicedMs, &p.MinVoicedMs, &errs)
	fieldInto(TurnResumeAfter, b.ResumeAfterMs, &p.ResumeAfterMs, &errs)
	fieldInto(TurnImmediateAfter, b.ImmediateAfterMs, &p.ImmediateAfterMs, &errs)
	var bc *[]string
	fieldInto(TurnBackchannels, b.Backchannels, &bc, &errs)
	if bc != nil {
		p.Backchannels = *bc
		if p.Backchannels == nil {
			p.Backchannels = []string{}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(errs, "; "))
	}
	v, err := h.rt.cfg.Chains.PutTurnTaking(r.Context(), api.Actor(r), r.PathValue("name"), p)
	return reply(w, v, err)
}

// turnDelete removes the override of one setting (?field=minWords, say)
// or of all of them.
func (h *handlers) turnDelete(w http.ResponseWriter, r *http.Request) error {
	field, err := resetField(r, "one of "+turnFieldNames())
	if err != nil {
		return err
	}
	v, err := h.rt.cfg.Chains.ResetTurnTaking(r.Context(), api.Actor(r), r.PathValue("name"), field)
	return reply(w, v, err)
}

// modelsView is what GET /api/system/models answers: the configured
// providers' names and the provider/model ids the config knows of (each
// provider's priced models, the agents' models on a configured provider,
// the memory model). A provider may serve models the config never names,
// so a client offers these as choices, not as the only ones.
type modelsView struct {
	Providers []string `json:"providers"`
	Models    []string `json:"models"`
}

// systemModels serves GET /api/system/models. Names only: no base URL or
// key of a provider leaves the box.
func (h *handlers) systemModels(w http.ResponseWriter, r *http.Request) error {
	cfg := h.cfg
	v := modelsView{Providers: []string{}, Models: []string{}}
	for name, p := range cfg.Providers {
		v.Providers = append(v.Providers, name)
		for model := range p.Prices {
			v.Models = append(v.Models, name+"/"+model)
		}
	}
	known := func(id string) {
		if provider, model, ok := strings.Cut(id, "/"); ok && model != "" {
			if _, configured := cfg.Providers[provider]; configured {
				v.Models = append(v.Models, id)
			}
		}
	}
	for _, a := range cfg.Agents {
		for _, id := range a.Model {
			known(id)
		}
	}
	known(cfg.Memory.Model)
	slices.Sort(v.Providers)
	slices.Sort(v.Models)
	v.Models = slices.Compact(v.Models)
	api.WriteData(w, http.StatusOK, v)
	return nil
}

func (h *handlers) sessionsList(w http.ResponseWriter, r *http.Request) error {
	limit, err := api.QueryInt(r, "limit", 50, 1, 200)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	list, err := h.rt.ListSessions(r.Context(), SessionFilter{Agent: q.Get("agent"), Status: q.Get("status"), Before: q.Get("before"), Limit: limit})
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, list)
	return nil
}

func (h *handlers) sessionsGet(w http.ResponseWriter, r *http.Request) error {
	d, err := h.rt.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, d)
	return nil
}

// sessionsDecide approves or rejects the held tool call of a session and
// runs the rest of the turn; the answer lands in the session's transcript.
func (h *handlers) sessionsDecide(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Decision api.Field[string] `json:"decision"`
		Reason   api.Field[string] `json:"reason"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		return err
	}
	if !b.Decision.Set || (b.Decision.V != "approve" && b.Decision.V != "reject") {
		return fmt.Errorf(`%w: decision must be "approve" or "reject"`, api.ErrInvalidRequest)
	}
	res, err := h.rt.Decide(r.Context(), r.PathValue("id"),
		Decision{Approve: b.Decision.V == "approve", Reason: b.Reason.V}, func(Event) error { return nil })
	if err != nil {
		return err
	}
	out := map[string]any{"runId": res.RunID, "finish": res.Finish, "text": res.Text, "held": res.Held, "toolCalls": res.ToolCalls}
	api.WriteData(w, http.StatusOK, out)
	return nil
}
