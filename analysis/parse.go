package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/riverqueue/river"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/jobs"
)

// answer is the model's answer as asked.
type answer struct {
	Summary  string         `json:"summary"`
	Fields   map[string]any `json:"fields"`
	Criteria []Criterion    `json:"criteria"`
}

// parse reads the model's answer; problem says what is wrong with it.
func parse(text string, a *config.Analysis, schema *jsonschema.Resolved) (Result, string) {
	text = strings.TrimSpace(text)
	// A fenced answer (```json ... ```) is still the object inside.
	if i, j := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && j > i {
		text = text[i : j+1]
	}
	var ans answer
	if err := json.Unmarshal([]byte(text), &ans); err != nil {
		return Result{}, "it is not a JSON object"
	}
	if strings.TrimSpace(ans.Summary) == "" {
		return Result{}, `"summary" is missing`
	}
	if ans.Fields == nil {
		ans.Fields = map[string]any{}
	}
	if schema != nil {
		if err := schema.Validate(ans.Fields); err != nil {
			return Result{}, fmt.Sprintf(`"fields" does not satisfy the schema (%v)`, err)
		}
	}
	if len(ans.Criteria) != len(a.Criteria) {
		return Result{}, fmt.Sprintf(`"criteria" has %d judgements for %d criteria`, len(ans.Criteria), len(a.Criteria))
	}
	res := Result{Status: StatusDone, Summary: ans.Summary, Fields: ans.Fields, At: time.Now()}
	if len(a.Criteria) > 0 {
		success := true
		for i, c := range ans.Criteria {
			c.Criterion = a.Criteria[i] // the operator's words, whatever the model echoed
			success = success && c.Pass
			res.Criteria = append(res.Criteria, c)
		}
		res.Success = &success
	}
	if len(res.Fields) == 0 {
		res.Fields = nil
	}
	return res, ""
}

// KindAnalyze is the River job kind of a call's analysis.
const KindAnalyze = "voice.analyze"

const queue = "analysis"

// AnalyzeArgs name the call to analyze.
type AnalyzeArgs struct {
	CallID string `json:"callId"`
}

// Kind is KindAnalyze.
func (AnalyzeArgs) Kind() string { return KindAnalyze }

// InsertOpts puts the job on the analysis queue, once per call.
func (AnalyzeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queue, MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type analyzeWorker struct {
	river.WorkerDefaults[AnalyzeArgs]
	s *Service
}

// Timeout bounds one analysis: two model requests of a minute each.
func (w *analyzeWorker) Timeout(*river.Job[AnalyzeArgs]) time.Duration { return 3 * time.Minute }

func (w *analyzeWorker) Work(ctx context.Context, job *river.Job[AnalyzeArgs]) error {
	return w.s.Analyze(ctx, job.Args.CallID)
}

// AddWorkers registers the analysis worker and its queue on reg, before
// the box's River client is built.
func (s *Service) AddWorkers(reg *jobs.Registry) {
	river.AddWorker(reg.Workers(), &analyzeWorker{s: s})
	reg.Queue(queue, 4)
}
