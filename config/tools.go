package config

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Kinds of tool beside retrieval.
const (
	// ToolKindHTTP calls one HTTP endpoint with the model's arguments.
	ToolKindHTTP = "http"
	// ToolKindMCP offers the tools of one MCP server.
	ToolKindMCP = "mcp"
)

// Limits and defaults of http and mcp tools.
const (
	DefaultToolTimeout      = 10 * time.Second
	MaxToolTimeout          = 2 * time.Minute
	DefaultMaxResponseBytes = 16 << 10
	MaxResponseBytesLimit   = 1 << 20
	DefaultMaxToolCalls     = 16
	MaxToolCallsLimit       = 100
	DefaultFillerAfter      = 700 * time.Millisecond
	MaxFiller               = 200
	// MCPSeparator joins an mcp server's name and its tool's name.
	MCPSeparator = "__"
)

// HTTPMethods are the methods of kind http tools.
var HTTPMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

var (
	// PlaceholderRe finds the {argument} placeholders of a tool's URL.
	PlaceholderRe = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]{0,63})\}`)
	// EnvRefRe finds the ${NAME} references of a header value.
	EnvRefRe  = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}`)
	envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	headerRe  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
)

// SecretHeader reports whether a header carries credentials, whose value
// must come from the environment.
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret") || strings.Contains(n, "auth")
}

func (t AgentTool) validateHTTP(where string) []string {
	var problems []string
	if t.Method != "" && !slices.Contains(HTTPMethods, t.Method) {
		problems = append(problems, fmt.Sprintf("%s: method %q is not one of %s", where, truncate(t.Method, 20), strings.Join(HTTPMethods, ", ")))
	}
	props := map[string]any{}
	if t.Parameters != nil {
		if typ, _ := t.Parameters["type"].(string); typ != "object" {
			problems = append(problems, where+": parameters must be a JSON Schema of type object")
		}
		if p, ok := t.Parameters["properties"].(map[string]any); ok {
			props = p
		}
	}
	u, err := url.Parse(PlaceholderRe.ReplaceAllString(t.URL, "x"))
	switch {
	case t.URL == "":
		problems = append(problems, where+": kind http needs a url")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		problems = append(problems, fmt.Sprintf("%s: url %q is not an http(s) URL", where, truncate(t.URL, 200)))
	default:
		// Placeholders fill the path and the query only: the model must
		// never choose the host the box sends a request (and headers) to.
		authority, _, _ := strings.Cut(t.URL[strings.Index(t.URL, "://")+3:], "/")
		authority, _, _ = strings.Cut(authority, "?")
		if PlaceholderRe.MatchString(authority) {
			problems = append(problems, where+": url placeholders may only be in the path or query, never the host")
		}
		for _, m := range PlaceholderRe.FindAllStringSubmatch(t.URL, -1) {
			if _, ok := props[m[1]]; !ok {
				problems = append(problems, fmt.Sprintf("%s: url placeholder {%s} is not a property of parameters", where, m[1]))
			}
		}
	}
	for name, v := range t.Headers {
		if !headerRe.MatchString(name) {
			problems = append(problems, fmt.Sprintf("%s: header name %q is not valid", where, truncate(name, 40)))
			continue
		}
		if SecretHeader(name) && !EnvRefRe.MatchString(v) {
			problems = append(problems, fmt.Sprintf("%s: header %s carries credentials: write its value as ${ENV_NAME} and set the variable, never in the file", where, name))
		}
		if strings.ContainsAny(v, "\r\n") {
			problems = append(problems, fmt.Sprintf("%s: header %s has a line break", where, name))
		}
	}
	if t.MaxResponseBytes < 0 || t.MaxResponseBytes > MaxResponseBytesLimit {
		problems = append(problems, fmt.Sprintf("%s: maxResponseBytes must be 1 to %d", where, MaxResponseBytesLimit))
	}
	for _, s := range t.FailStatuses {
		if s < 100 || s > 599 {
			problems = append(problems, fmt.Sprintf("%s: failStatuses: %d is not an HTTP status", where, s))
		}
	}
	if len(t.Command) > 0 || t.TokenEnv != "" || len(t.Allow) > 0 {
		problems = append(problems, where+": command, tokenEnv and allow are for kind mcp")
	}
	return append(problems, t.validateTimeout(where)...)
}

func (t AgentTool) validateMCP(where string) []string {
	var problems []string
	switch {
	case (t.URL == "") == (len(t.Command) == 0):
		problems = append(problems, where+": kind mcp needs a url (streamable HTTP) or a command (stdio), one of them")
	case t.URL != "":
		if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, fmt.Sprintf("%s: url %q is not an http(s) URL", where, truncate(t.URL, 200)))
		}
	case t.TokenEnv != "":
		problems = append(problems, where+": tokenEnv is for a url server")
	}
	if t.TokenEnv != "" && !envNameRe.MatchString(t.TokenEnv) {
		problems = append(problems, fmt.Sprintf("%s: tokenEnv %q is not an environment variable name", where, truncate(t.TokenEnv, 40)))
	}
	if len(t.Name) > 30 {
		problems = append(problems, where+": an mcp server's name is the prefix of its tools' names: at most 30 characters")
	}
	for _, a := range t.Allow {
		if !toolNameRe.MatchString(a) {
			problems = append(problems, fmt.Sprintf("%s: allow: %q is not a tool name", where, truncate(a, 64)))
		}
	}
	if t.Method != "" || t.Parameters != nil || len(t.Headers) > 0 || t.MaxResponseBytes != 0 || len(t.FailStatuses) > 0 {
		problems = append(problems, where+": method, parameters, headers, maxResponseBytes and failStatuses are for kind http")
	}
	return append(problems, t.validateTimeout(where)...)
}

func (t AgentTool) validateTimeout(where string) []string {
	if t.Timeout < 0 || t.Timeout > MaxToolTimeout {
		return []string{fmt.Sprintf("%s: timeout must be up to %s", where, MaxToolTimeout)}
	}
	return nil
}

func validateToolLimits(agent string, a Agent) []string {
	problems := AnalysisProblems("agent "+agent+": analysis", a.Analysis)
	if a.MaxToolCalls < 0 || a.MaxToolCalls > MaxToolCallsLimit {
		problems = append(problems, fmt.Sprintf("agent %s: maxToolCalls must be 1 to %d", agent, MaxToolCallsLimit))
	}
	if v := a.Voice; v != nil {
		if v.FillerAfter < 0 || v.FillerAfter > time.Minute {
			problems = append(problems, fmt.Sprintf("agent %s: voice.fillerAfter must be 0 to 1m", agent))
		}
		problems = append(problems, delayProblems(agent, v)...)
		if m := v.AnsweringMachine; m != nil {
			problems = append(problems, AnsweringMachineProblems("agent "+agent+": voice.answeringMachine.", *m)...)
		}
		if tr := v.Transfer; tr != nil {
			problems = append(problems, transferProblems("agent "+agent+": voice.transfer", *tr)...)
		}
		if r := v.Recording; r != nil {
			if r.Retention < 0 || r.Retention > 10*365*24*time.Hour {
				problems = append(problems, fmt.Sprintf("agent %s: voice.recording.retention must be between 0 (the default, 30 days) and 10 years", agent))
			}
			if utf8.RuneCountInString(r.Consent) > MaxVoicemailMessage {
				problems = append(problems, fmt.Sprintf("agent %s: voice.recording.consent is longer than %d characters", agent, MaxVoicemailMessage))
			}
		}
		if utf8.RuneCountInString(v.Filler) > MaxFiller {
			problems = append(problems, fmt.Sprintf("agent %s: voice.filler is longer than %d characters", agent, MaxFiller))
		}
	}
	return problems
}

// delayProblems checks an agent's endpoint delays and interruption
// settings.
func delayProblems(agent string, v *AgentVoice) []string {
	var problems []string
	if v.MinEndpointDelay < 0 || v.MinEndpointDelay > 5*time.Second || v.MaxEndpointDelay < 0 || v.MaxEndpointDelay > 5*time.Second {
		problems = append(problems, fmt.Sprintf("agent %s: voice.minEndpointDelay and voice.maxEndpointDelay must be 0 to 5s", agent))
	} else if v.MinEndpointDelay > 0 && v.MaxEndpointDelay > 0 && v.MinEndpointDelay > v.MaxEndpointDelay {
		problems = append(problems, fmt.Sprintf("agent %s: voice.minEndpointDelay must not exceed voice.maxEndpointDelay", agent))
	}
	i := v.Interruption
	if i == nil {
		return problems
	}
	if i.Mode != "" && i.Mode != InterruptionWords && i.Mode != InterruptionImmediate {
		problems = append(problems, fmt.Sprintf("agent %s: voice.interruption.mode must be words or immediate, not %q", agent, i.Mode))
	}
	if i.MinWords < 0 || i.MinWords > 20 {
		problems = append(problems, fmt.Sprintf("agent %s: voice.interruption.minWords must be 1 to 20", agent))
	}
	if min(i.MinVoiced, i.ResumeAfter, i.ImmediateAfter) < 0 || max(i.MinVoiced, i.ResumeAfter, i.ImmediateAfter) > 10*time.Second {
		problems = append(problems, fmt.Sprintf("agent %s: voice.interruption.minVoiced, resumeAfter and immediateAfter must be 0 to 10s", agent))
	}
	if len(i.Backchannels) > 200 {
		problems = append(problems, fmt.Sprintf("agent %s: voice.interruption.backchannels has more than 200 entries", agent))
	}
	for _, b := range i.Backchannels {
		if strings.TrimSpace(b) == "" || utf8.RuneCountInString(b) > 40 {
			problems = append(problems, fmt.Sprintf("agent %s: voice.interruption.backchannels: %q must be 1 to 40 characters", agent, b))
		}
	}
	return problems
}

// AnsweringMachineProblems says what is wrong with an answering-machine
// policy, each problem prefixed with where (the field's path so far).
func AnsweringMachineProblems(where string, m AnsweringMachine) []string {
	var problems []string
	if m.Detect != "" && m.Detect != DetectOff && m.Detect != DetectOutbound && m.Detect != DetectAll {
		problems = append(problems, fmt.Sprintf("%sdetect must be off, outbound or all, not %q", where, m.Detect))
	}
	if m.Voicemail != "" && m.Voicemail != VoicemailHangup && m.Voicemail != VoicemailMessage {
		problems = append(problems, fmt.Sprintf("%svoicemail must be hangup or message, not %q", where, m.Voicemail))
	}
	if m.Voicemail == VoicemailMessage && strings.TrimSpace(m.Message) == "" {
		problems = append(problems, where+"message is required when voicemail is message")
	}
	if utf8.RuneCountInString(m.Message) > MaxVoicemailMessage {
		problems = append(problems, fmt.Sprintf("%smessage is longer than %d characters", where, MaxVoicemailMessage))
	}
	if m.Menu != "" && m.Menu != MenuTalk && m.Menu != MenuHangup {
		problems = append(problems, fmt.Sprintf("%smenu must be talk or hangup, not %q", where, m.Menu))
	}
	return problems
}

// ToolTimeout is the tool's timeout or the default.
func (t AgentTool) ToolTimeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return DefaultToolTimeout
}

// AnalysisProblems says what is wrong with an agent's call analysis, each
// problem prefixed with where.
func AnalysisProblems(where string, a *Analysis) []string {
	if a == nil {
		return nil
	}
	var problems []string
	if len(a.Criteria) > MaxAnalysisCriteria {
		problems = append(problems, fmt.Sprintf("%s.criteria: at most %d", where, MaxAnalysisCriteria))
	}
	for _, c := range a.Criteria {
		if strings.TrimSpace(c) == "" || utf8.RuneCountInString(c) > 500 {
			problems = append(problems, fmt.Sprintf("%s.criteria: each is 1 to 500 characters", where))
			break
		}
	}
	if a.Fields == nil {
		return problems
	}
	if _, err := AnalysisSchema(a); err != nil {
		problems = append(problems, fmt.Sprintf("%s.fields: %v", where, err))
	}
	return problems
}

// AnalysisSchema is the resolved JSON Schema of an analysis's fields: an
// object of at most MaxAnalysisFields properties.
func AnalysisSchema(a *Analysis) (*jsonschema.Resolved, error) {
	raw, err := json.Marshal(a.Fields)
	if err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	if s.Type != "object" || len(s.Properties) == 0 || len(s.Properties) > MaxAnalysisFields {
		return nil, fmt.Errorf("must be a JSON Schema of type object with 1 to %d properties", MaxAnalysisFields)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %v", err)
	}
	return r, nil
}

var targetNameRe = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// transferProblems says what is wrong with an agent's transfer targets.
func transferProblems(where string, t Transfer) []string {
	var problems []string
	if len(t.Targets) == 0 || len(t.Targets) > MaxTransferTargets {
		problems = append(problems, fmt.Sprintf("%s.targets: 1 to %d targets", where, MaxTransferTargets))
	}
	seen := map[string]bool{}
	for i, tg := range t.Targets {
		at := fmt.Sprintf("%s.targets[%d]", where, i)
		if !targetNameRe.MatchString(tg.Name) || seen[tg.Name] {
			problems = append(problems, at+".name: a unique name of lowercase letters, digits, - and _ (up to 64)")
		}
		seen[tg.Name] = true
		if n := NormalizeNumber(tg.Number); n == "" || len(n) > 33 || strings.Trim(n, "+0123456789*#") != "" {
			problems = append(problems, at+".number: a phone number (digits, * or #, an optional leading +)")
		}
		if utf8.RuneCountInString(tg.Description) > 500 {
			problems = append(problems, at+".description: at most 500 characters")
		}
	}
	if t.RingTimeout < 0 || t.RingTimeout > 2*time.Minute {
		problems = append(problems, where+".ringTimeout: 0 (the default, 30s) to 2m")
	}
	return problems
}
