package stores_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/stores"
)

// runtime builds the agent runtime on the env's database with the store
// tools, as the box wires it.
func (e *env) runtime() *agent.Runtime {
	log := pgtest.Logger(e.t)
	settings := memory.NewSettings(e.pool, memory.AgentsFromConfig(e.cfg), log)
	return agent.New(agent.Config{Pool: e.pool, Agents: e.cfg.Agents, Models: e.reg, Logger: log, Settings: settings,
		Memory: memory.NewService(memory.Config{Pool: e.pool, Models: e.reg, Logger: log}), Tools: e.svc.Tools()})
}

// startJobs runs a River client with the store workers, polling fast.
func (e *env) startJobs() *jobs.Client {
	e.t.Helper()
	reg := jobs.NewRegistry()
	if err := e.svc.AddWorkers(reg); err != nil {
		e.t.Fatal(err)
	}
	client, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{Schema: jobs.Schema, Workers: reg.Workers(),
		Queues:            map[string]river.QueueConfig{stores.Queue: {MaxWorkers: 2}},
		FetchPollInterval: 20 * time.Millisecond, FetchCooldown: 5 * time.Millisecond, Logger: pgtest.Logger(e.t), TestOnly: true})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := client.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := contextTimeout(5 * time.Second)
		defer cancel()
		_ = client.Stop(ctx)
	})
	return client
}

func (e *env) session(rt *agent.Runtime, agentName, key, text string) {
	e.t.Helper()
	_, err := rt.Turn(e.ctx, agent.TurnRequest{Agent: agentName, SessionKey: key,
		Messages: []agent.Message{{Role: agent.RoleUser, Content: text}}}, func(agent.Event) error { return nil })
	if err != nil {
		e.t.Fatalf("turn: %v", err)
	}
}

const (
	reportPrompt   = "You review one finished session"
	learningPrompt = "You maintain the learned memory"
)

func systemOf(r *openai.ChatCompletionRequest) string {
	if len(r.Messages) > 0 && r.Messages[0].Role == openai.ChatMessageRoleSystem {
		return r.Messages[0].Content
	}
	return ""
}

func userOf(r *openai.ChatCompletionRequest) string { return r.Messages[len(r.Messages)-1].Content }

func requestsWith(srv *providertest.Server, prefix string) []*openai.ChatCompletionRequest {
	var out []*openai.ChatCompletionRequest
	for _, r := range srv.ChatRequests() {
		if strings.HasPrefix(systemOf(r), prefix) {
			out = append(out, r)
		}
	}
	return out
}

var sessionIDRe = regexp.MustCompile(`"session_id":"(ses_[0-9a-f]+)"`)

// reportedSessions are the session ids of the reports a learning request
// carries, in order.
func reportedSessions(user string) []string {
	var out []string
	for _, m := range sessionIDRe.FindAllStringSubmatch(user, -1) {
		out = append(out, m[1])
	}
	return out
}

func reply(v any) providertest.Reply {
	b, _ := json.Marshal(v)
	return providertest.Reply{Content: string(b)}
}

// reportReply answers a report request: sessions that only say hello teach
// nothing.
func reportReply(r *openai.ChatCompletionRequest) providertest.Reply {
	u := userOf(r)
	switch {
	case strings.Contains(u, "just saying hello"):
		return reply(map[string]any{"useful": false, "report": "A greeting; nothing reusable was learned."})
	case strings.Contains(u, "v-prefix"):
		return reply(map[string]any{"useful": true, "report": "Release tags need the v prefix; tagging without it broke the deploy."})
	}
	return reply(map[string]any{"useful": true, "report": "Changelog notes were split over two places; keep them together."})
}

func TestLearningRunFromFinishedSessionsToVersions(t *testing.T) {
	t.Parallel()
	tap := &logTap{}
	e := newEnv(t, tapLogs(tap), func(c *stores.Config) { c.IdleAfter = time.Nanosecond; c.ReportsPerRun = 2 })
	e.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		switch sys, u := systemOf(r), userOf(r); {
		case strings.HasPrefix(sys, reportPrompt):
			return reportReply(r)
		case strings.HasPrefix(sys, learningPrompt) && !strings.Contains(u, "/old.md"):
			ev := reportedSessions(u)
			change := func(op, path, summary, content string) map[string]any {
				return map[string]any{"op": op, "path": path, "summary": summary, "content": content,
					"rationale": "Reports show " + path + " matters.", "evidence_session_ids": ev}
			}
			return reply(map[string]any{"summary": "Learned tagging and changelog conventions.", "changes": []any{
				change("add", "/releases/tagging.md", "How to tag releases.", "Tag releases as vX.Y.Z."),
				change("add", "/changelog/a.md", "Changelog part A.", "Write notes under Unreleased."),
				change("add", "/changelog/b.md", "Changelog part B.", "Move notes to the version heading when tagging."),
				change("add", "/old.md", "An old rule.", "Deploy on Fridays."),
			}})
		case strings.HasPrefix(sys, learningPrompt):
			ev := reportedSessions(u)[:1]
			return reply(map[string]any{"summary": "Refined tagging, merged the changelog notes, retired the Friday rule.", "changes": []any{
				map[string]any{"op": "refine", "path": "/releases/tagging.md", "content": "Tag releases as vX.Y.Z; never without the v.",
					"rationale": "A deploy broke on a tag without v.", "evidence_session_ids": ev},
				map[string]any{"op": "merge", "paths": []string{"/changelog/a.md", "/changelog/b.md"}, "path": "/changelog/a.md",
					"summary": "How to keep the changelog.", "content": "Write notes under Unreleased; move them to the version heading when tagging.",
					"rationale": "Two halves of one convention.", "evidence_session_ids": ev},
				map[string]any{"op": "retire", "path": "/old.md", "rationale": "Fridays are now frozen.", "evidence_session_ids": ev},
			}})
		}
		return providertest.Reply{Content: "Noted."}
	})
	rt := e.runtime()
	client := e.startJobs()

	// Round 1: three finished sessions, one that teaches nothing.
	e.session(rt, "support", "s1", "We shipped 2.4.0; tagging with the v-prefix worked this time.")
	e.session(rt, "support", "s2", "The changelog notes were in two files again.")
	e.session(rt, "support", "s3", "Hi, just saying hello.")
	var am stores.AgentMemory
	e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
	if am.State != "waiting" || am.MemoryCount != 0 || am.EffectiveModel != "openai/agent-model" {
		t.Fatalf("before learning: %+v", am)
	}
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the first learning run", 10*time.Second, func() bool {
		e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
		return am.State == "idle" && am.MemoryCount == 4
	})

	if am.PendingSessionCount != 0 || am.FailedSessionCount != 0 || am.LastUpdatedAt == nil || am.LastCheckedAt == nil || am.Revision != 4 {
		t.Fatalf("after learning: %+v", am)
	}

	// What the report model was sent: the transcript framed as data.
	reps := requestsWith(e.model, reportPrompt)
	if len(reps) != 3 {
		t.Fatalf("%d report requests", len(reps))
	}
	for _, r := range reps {
		if r.Model != "agent-model" || !strings.Contains(userOf(r), "TRANSCRIPT-BEGIN-") || !strings.Contains(systemOf(r), `"support"`) {
			t.Fatalf("report request: model %s, %q", r.Model, userOf(r))
		}
	}
	// What the learning model was sent: the two useful reports, not the
	// greeting, and the (empty) memory.
	learns := requestsWith(e.model, learningPrompt)
	if len(learns) != 1 || learns[0].Model != "agent-model" {
		t.Fatalf("learning requests: %d", len(learns))
	}
	lu := userOf(learns[0])
	if !strings.Contains(lu, "Release tags need the v prefix") || !strings.Contains(lu, "Changelog notes were split") ||
		strings.Contains(lu, "A greeting") || !strings.Contains(lu, "REPORTS-BEGIN-") || !strings.Contains(lu, "MEMORIES-BEGIN-") {
		t.Fatalf("learning request: %s", lu)
	}
	evidence := reportedSessions(lu)
	if len(evidence) != 2 {
		t.Fatalf("reports shown: %v", evidence)
	}

	// The changes are versions with author_kind reflection, a rationale and
	// the evidence.
	var versions stores.VersionPage
	e.call("GET", "/api/memory_stores/"+am.MemoryStoreID.String()+"/memory_versions", nil).ok(t, 200, &versions)
	if len(versions.Versions) != 4 {
		t.Fatalf("%d versions", len(versions.Versions))
	}
	for _, v := range versions.Versions {
		if v.AuthorKind != "reflection" || v.Operation != "created" || v.Rationale == nil || !strings.HasPrefix(*v.Rationale, "Reports show") ||
			!slices.Equal(v.EvidenceSessionIDs, evidence) || v.ReflectionID == nil || v.AuthorID != v.ReflectionID.String() {
			t.Fatalf("version: %+v", v)
		}
	}
	var act stores.ReflectionPage
	e.call("GET", "/api/agents/support/memory/activity", nil).ok(t, 200, &act)
	if len(act.Reflections) != 1 {
		t.Fatalf("activity: %+v", act)
	}
	r1 := act.Reflections[0]
	if r1.Status != "succeeded" || r1.TriggeredBy != "reports" || !strings.Contains(r1.Reason, "2 useful session reports") ||
		r1.Added != 4 || r1.Updated != 0 || r1.ReportCount != 2 || !slices.Equal(r1.LearnedFrom, evidence) || r1.Attempt != 1 ||
		r1.Model != "openai/agent-model" || r1.Summary == nil || *r1.Summary != "Learned tagging and changelog conventions." {
		t.Fatalf("reflection: %+v", r1)
	}
	var detail stores.Reflection
	e.call("GET", "/api/reflections/"+r1.ID.String(), nil).ok(t, 200, &detail)
	if len(detail.Reports) != 2 || !detail.Reports[0].Useful || detail.Reports[0].SessionID != evidence[0] || detail.Reports[0].Report == "" {
		t.Fatalf("reports read: %+v", detail.Reports)
	}
	var changes []map[string]any
	if err := json.Unmarshal(detail.Changes, &changes); err != nil || len(changes) != 4 || changes[0]["op"] != "add" || changes[0]["memory_id"] == "" {
		t.Fatalf("changes: %s", detail.Changes)
	}
	// The learning run is in run history, with the reports it read.
	run, err := runs.NewStore(e.pool).Get(e.ctx, r1.RunID)
	if err != nil || run.Kind != stores.KindLearningRun || run.Status != "succeeded" || run.AgentID != "support" || run.InputTokens == 0 {
		t.Fatalf("learning run in history: %+v %v", run, err)
	}
	if list, _ := runs.NewStore(e.pool).List(e.ctx, runs.Filter{Kind: stores.KindSessionReport}); len(list) != 3 {
		t.Fatalf("report runs: %d", len(list))
	}
	var notUseful int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.session_reports WHERE NOT useful AND status = 'written'`).Scan(&notUseful); err != nil || notUseful != 1 {
		t.Fatalf("not useful reports: %d %v", notUseful, err)
	}
	// Learned memory is readable like any store, and by agent.
	var mems stores.AgentMemories
	e.call("GET", "/api/agents/support/memories?sort=alphabetical", nil).ok(t, 200, &mems)
	if len(mems.Memories) != 4 || mems.Memories[0].Path != "/changelog/a.md" || len(mems.Topics) != 2 ||
		mems.Topics[0] != (stores.Topic{Topic: "changelog", Count: 2}) {
		t.Fatalf("agent memories: %+v", mems)
	}
	e.call("GET", "/api/agents/support/memories?query=tag&topic=releases", nil).ok(t, 200, &mems)
	if len(mems.Memories) != 1 || mems.Memories[0].Path != "/releases/tagging.md" || *mems.Memories[0].Topic != "releases" {
		t.Fatalf("filtered agent memories: %+v", mems.Memories)
	}
	// Nobody edits learned memory by hand.
	e.call("POST", "/api/memory_stores/"+am.MemoryStoreID.String()+"/memories/"+mems.Memories[0].MemoryID.String(),
		map[string]any{"content": "Hand edit."}).fails(t, 400, "invalid_request")

	// The memory model applies to the next run.
	var l stores.Learning
	e.call("PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": "openai/memory-model"}).ok(t, 200, &l)
	if l.MemoryModelRef == nil || *l.MemoryModelRef != "openai/memory-model" {
		t.Fatalf("learning: %+v", l)
	}

	// Round 2: refine, merge and retire.
	e.session(rt, "support", "s4", "Tagged 2.5.0 without the v-prefix and the deploy failed.")
	e.session(rt, "support", "s5", "Merged the changelog again.")
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the second learning run", 10*time.Second, func() bool {
		e.call("GET", "/api/agents/support/memory/activity", nil).ok(t, 200, &act)
		return len(act.Reflections) == 2 && act.Reflections[0].Status == "succeeded"
	})

	r2 := act.Reflections[0]
	if r2.Updated != 1 || r2.Merged != 1 || r2.Retired != 1 || r2.Added != 0 || r2.Model != "openai/memory-model" {
		t.Fatalf("second reflection: %+v", r2)
	}
	for _, r := range append(requestsWith(e.model, learningPrompt)[1:], requestsWith(e.model, reportPrompt)[3:]...) {
		if r.Model != "memory-model" {
			t.Fatalf("after the model change a request went to %s", r.Model)
		}
	}
	// The second run was shown the memories with their content, and only
	// the reports no run has read.
	lu2 := userOf(requestsWith(e.model, learningPrompt)[1])
	if !strings.Contains(lu2, "Deploy on Fridays.") || len(reportedSessions(lu2)) != 2 ||
		slices.ContainsFunc(reportedSessions(lu2), func(id string) bool { return slices.Contains(evidence, id) }) {
		t.Fatalf("second learning request: %s", lu2)
	}
	e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
	if am.MemoryCount != 2 || am.EffectiveModel != "openai/memory-model" {
		t.Fatalf("after round 2: %+v", am)
	}
	base := "/api/memory_stores/" + am.MemoryStoreID.String()
	var m stores.Memory
	e.call("GET", base+"/memory?path=/changelog/a.md", nil).ok(t, 200, &m)
	if m.Summary != "How to keep the changelog." {
		t.Fatalf("merged memory: %+v", m)
	}
	e.call("GET", base+"/memory?path=/changelog/b.md", nil).fails(t, 404, "not_found")
	e.call("GET", base+"/memory?path=/old.md", nil).fails(t, 404, "not_found")
	e.call("GET", base+"/memory?path=/releases/tagging.md", nil).ok(t, 200, &m)
	if m.Content != "Tag releases as vX.Y.Z; never without the v." || m.Summary != "How to tag releases." {
		t.Fatalf("refined memory: %+v", m)
	}
	e.call("GET", base+"/memory_versions?limit=4", nil).ok(t, 200, &versions)
	var ops []string
	for _, v := range versions.Versions {
		ops = append(ops, v.Operation)
		if v.ReflectionID == nil || *v.ReflectionID != r2.ID {
			t.Fatalf("round 2 version: %+v", v)
		}
	}
	slices.Sort(ops)
	if strings.Join(ops, ",") != "merged,merged,retired,updated" {
		t.Fatalf("round 2 operations: %v", ops)
	}
	// An operator can restore a retired learned memory (recorded as admin).
	e.call("GET", base+"/memory_versions?limit=100", nil).ok(t, 200, &versions)
	var oldV stores.Version
	for _, v := range versions.Versions {
		if v.Path == "/old.md" && v.Operation == "created" {
			oldV = v
		}
	}
	e.call("POST", base+"/memory_versions/"+oldV.ID.String()+"/restore", nil).ok(t, 200, &m)
	var head stores.VersionDetail
	e.call("GET", base+"/memory_versions/"+m.HeadVersionID.String(), nil).ok(t, 200, &head)
	if m.Path != "/old.md" || head.AuthorKind != "admin" || head.Operation != "restored" {
		t.Fatalf("admin restore: %+v %+v", m, head)
	}
	checkFolders(t, e, am.MemoryStoreID)
	// Every agent at once.
	var sums struct {
		Agents []stores.AgentMemory `json:"agents"`
	}
	e.call("GET", "/api/agent_memory_summaries", nil).ok(t, 200, &sums)
	if len(sums.Agents) != 2 || sums.Agents[0].AgentID != "release" || sums.Agents[1].MemoryCount != 3 {
		t.Fatalf("summaries: %+v", sums.Agents)
	}
	// Ids, counts and codes only: no transcript, report, memory or rationale.
	tap.refuteLogged(t, "v-prefix", "Release tags need", "Tag releases as", "Deploy on Fridays", "Reports show", "Learned tagging")
}

func TestFailedLearningRunIsDelayedAndRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *stores.Config) {
		c.IdleAfter = time.Nanosecond
		c.ReportsPerRun = 1
		c.RetryDelay = func(int) time.Duration { return 300 * time.Millisecond }
	})
	var learning atomic.Int32
	gate := make(chan struct{})
	e.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		sys, u := systemOf(r), userOf(r)
		switch {
		case strings.HasPrefix(sys, reportPrompt):
			return reportReply(r)
		case strings.HasPrefix(sys, learningPrompt):
			switch learning.Add(1) {
			case 1:
				return providertest.Reply{Status: 500, Message: "upstream overloaded"}
			case 2:
				// Evidence from a session whose report was not given: the
				// whole answer is refused and nothing is written.
				return reply(map[string]any{"summary": "x", "changes": []any{
					map[string]any{"op": "add", "path": "/a.md", "summary": "A.", "content": "A.", "rationale": "r", "evidence_session_ids": []string{"ses_made_up"}},
				}})
			}
			<-gate
			return reply(map[string]any{"summary": "Learned the tag rule.", "changes": []any{
				map[string]any{"op": "add", "path": "/releases/tagging.md", "summary": "Tags.", "content": "Tag as vX.Y.Z.",
					"rationale": "The deploy broke.", "evidence_session_ids": reportedSessions(u)},
			}})
		}
		return providertest.Reply{Content: "Noted."}
	})
	rt := e.runtime()
	client := e.startJobs()
	e.session(rt, "release", "r1", "Tagging without the v-prefix broke the deploy.")
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	var am stores.AgentMemory
	var act stores.ReflectionPage
	poll.Until(t, "the second failed attempt", 10*time.Second, func() bool {
		e.call("GET", "/api/agents/release/memory/activity?status=failed", nil).ok(t, 200, &act)
		return len(act.Reflections) == 2
	})

	e.call("GET", "/api/agents/release/memory", nil).ok(t, 200, &am)
	if am.State != "delayed" && am.State != "updating" {
		t.Fatalf("after two failures: %+v", am)
	}
	// Attempt 3 is held by the gate: while it thinks, state is updating and
	// memories stay readable. Once released, it succeeds.
	failed := act.Reflections
	if failed[1].Error == nil || failed[1].Error.Code != "model_failed" || !strings.Contains(failed[1].Error.Message, "500") ||
		failed[0].Error == nil || failed[0].Error.Code != "invalid_model_output" || failed[0].TriggeredBy != "retry" || failed[0].Attempt != 2 {
		t.Fatalf("failed reflections: %+v %+v", failed[0], failed[1])
	}
	if n := countVersions(t, e, am); n != 0 {
		t.Fatalf("a failed run wrote %d versions", n)
	}
	var delayed stores.AgentMemory
	poll.Until(t, "updating", 5*time.Second, func() bool {
		e.call("GET", "/api/agents/release/memory", nil).ok(t, 200, &delayed)
		return delayed.State == "updating"
	})

	e.call("GET", "/api/memory_stores/"+am.MemoryStoreID.String()+"/memories", nil).ok(t, 200, nil)
	close(gate)
	poll.Until(t, "recovery", 10*time.Second, func() bool {
		e.call("GET", "/api/agents/release/memory", nil).ok(t, 200, &am)
		return am.State == "idle" && am.MemoryCount == 1
	})

	if am.NextRetryAt != nil || am.PendingSessionCount != 0 {
		t.Fatalf("recovered: %+v", am)
	}
	e.call("GET", "/api/reflections?agent_id=release&triggered_by=retry&status=succeeded", nil).ok(t, 200, &act)
	if len(act.Reflections) != 1 || act.Reflections[0].Attempt != 3 || act.Reflections[0].Added != 1 {
		t.Fatalf("recovered reflection: %+v", act.Reflections)
	}
	list, err := runs.NewStore(e.pool).List(e.ctx, runs.Filter{Kind: stores.KindLearningRun})
	if err != nil || len(list) != 3 || list[0].Status != "succeeded" || list[1].ErrorCode != "invalid_model_output" || list[2].ErrorCode != "model_failed" {
		t.Fatalf("learning runs: %+v %v", list, err)
	}
	e.call("GET", "/api/reflections?status=nope", nil).fails(t, 400, "invalid_request")
	e.call("GET", "/api/reflections?agent_id=ghost", nil).fails(t, 404, "not_found")
	e.call("GET", "/api/reflections/"+am.MemoryStoreID.String(), nil).fails(t, 404, "not_found")
}

func TestDelayedStateShowsNextRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *stores.Config) {
		c.IdleAfter = time.Nanosecond
		c.ReportsPerRun = 1
		c.RetryDelay = func(int) time.Duration { return time.Hour }
	})
	e.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		if strings.HasPrefix(systemOf(r), reportPrompt) {
			return reportReply(r)
		}
		if strings.HasPrefix(systemOf(r), learningPrompt) {
			return providertest.Reply{Status: 503, Message: "down"}
		}
		return providertest.Reply{Content: "Noted."}
	})
	rt := e.runtime()
	client := e.startJobs()
	e.session(rt, "support", "x", "The v-prefix matters.")
	before := time.Now()
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	var am stores.AgentMemory
	poll.Until(t, "delayed", 10*time.Second, func() bool {
		e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
		return am.State == "delayed"
	})

	if am.NextRetryAt == nil || am.NextRetryAt.Before(before.Add(59*time.Minute)) || am.NextRetryAt.After(time.Now().Add(61*time.Minute)) ||
		am.PendingSessionCount != 1 {
		t.Fatalf("delayed: %+v", am)
	}
	// The job waits in River for its retry; a tick before next_retry_at
	// starts nothing more.
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the learning job waiting for its retry", 5*time.Second, func() bool {
		var states []string
		rows, err := e.pool.Query(e.ctx, `SELECT state::text FROM stackbone_platform.river_job WHERE kind = 'stores_learning_run'`)
		if err != nil {
			t.Fatal(err)
		}
		states, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return slices.Equal(states, []string{"retryable"})
	})

}

func TestLearningSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var l stores.Learning
	e.call("GET", "/api/agents/support/learning", nil).ok(t, 200, &l)
	if l.MemoryModelRef != nil {
		t.Fatalf("default: %+v", l)
	}
	e.call("PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": "gpt-4o"}).fails(t, 400, "invalid_request")
	e.call("PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": "nowhere/model"}).fails(t, 400, "invalid_request")
	e.call("PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": 5}).fails(t, 400, "invalid_request")
	e.call("PATCH", "/api/agents/support/learning", map[string]any{}).fails(t, 400, "invalid_request")
	e.call("PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": nil, "x": 1}).fails(t, 400, "invalid_request")
	e.call("PATCH", "/api/agents/ghost/learning", map[string]any{"memory_model_ref": nil}).fails(t, 404, "not_found")
	e.call("GET", "/api/agents/ghost/memory", nil).fails(t, 404, "not_found")
	e.call("GET", "/api/agents/ghost/memories", nil).fails(t, 404, "not_found")
	e.call("GET", "/api/agents/ghost/memory/activity", nil).fails(t, 404, "not_found")
	e.call("GET", "/api/agents/support/memories?sort=random", nil).fails(t, 400, "invalid_request")
	e.call("PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": "openai/memory-model"}).ok(t, 200, &l)
	var am stores.AgentMemory
	e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
	if am.EffectiveModel != "openai/memory-model" {
		t.Fatalf("effective: %+v", am)
	}
	e.call("PATCH", "/api/agents/support/learning", map[string]any{"memory_model_ref": nil}).ok(t, 200, &l)
	e.call("GET", "/api/agents/support/learning", nil).ok(t, 200, &l)
	e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
	if l.MemoryModelRef != nil || am.EffectiveModel != "openai/agent-model" {
		t.Fatalf("inherit again: %+v %+v", l, am)
	}
}

func countVersions(t *testing.T, e *env, am stores.AgentMemory) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.memory_versions WHERE store_id = $1`, am.MemoryStoreID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTickStartsDueRunsOnly(t *testing.T) {
	t.Parallel()
	var shift atomic.Int64
	e := newEnv(t, func(c *stores.Config) {
		c.ReportsPerRun = 5
		c.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	})
	e.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		if strings.HasPrefix(systemOf(r), reportPrompt) {
			return reportReply(r)
		}
		return providertest.Reply{Content: "Noted."}
	})
	rt := e.runtime()
	e.session(rt, "support", "a", "The v-prefix matters.")
	var sid string
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM stackbone_platform.sessions WHERE agent_id = 'support'`).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	// Written outside a job: no run is started from here.
	if err := e.svc.WriteReport(e.ctx, sid, 1, false); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.WriteReport(e.ctx, sid, 1, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE stackbone_platform.agent_learning SET state = 'updating', updated_at = now() WHERE agent_id = 'release'`); err != nil {
		t.Fatal(err)
	}
	client, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{Schema: jobs.Schema})
	if err != nil {
		t.Fatal(err)
	}
	learnJobs := func() []string {
		t.Helper()
		rows, err := e.pool.Query(e.ctx, `SELECT (args->>'agent') || ':' || (args->>'triggered_by') FROM stackbone_platform.river_job
			WHERE kind = 'stores_learning_run' ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Now: one useful report (under the threshold of 5), the session just
	// finished (under IdleAfter), release's run is fresh: nothing is due.
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	if got := learnJobs(); len(got) != 0 {
		t.Fatalf("jobs before anything is due: %v", got)
	}
	var reportJobs int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.river_job WHERE kind = 'stores_session_report'`).Scan(&reportJobs); err != nil || reportJobs != 0 {
		t.Fatalf("report jobs for a session that is not idle: %d %v", reportJobs, err)
	}
	// Seven hours on: the report waited past the schedule, and release's
	// run has been "updating" for too long.
	shift.Store(int64(7 * time.Hour))
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	if got := learnJobs(); !slices.Equal(got, []string{"release:retry", "support:schedule"}) {
		t.Fatalf("jobs: %v", got)
	}
	// A second tick adds nothing: the jobs are unique while they wait.
	if err := e.svc.Tick(e.ctx, client); err != nil {
		t.Fatal(err)
	}
	if got := learnJobs(); len(got) != 2 {
		t.Fatalf("jobs after a second tick: %v", got)
	}
	// The finished session's turns are already reported: no report job.
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.river_job WHERE kind = 'stores_session_report'`).Scan(&reportJobs); err != nil || reportJobs != 0 {
		t.Fatalf("report jobs for a reported session: %d %v", reportJobs, err)
	}
	var reports int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM stackbone_platform.session_reports`).Scan(&reports); err != nil || reports != 1 {
		t.Fatalf("reports: %d %v", reports, err)
	}
}

func TestReportThatKeepsFailingIsRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		if strings.HasPrefix(systemOf(r), reportPrompt) {
			return providertest.Reply{Content: "I think this session was about releases."} // not the protocol
		}
		return providertest.Reply{Content: "Noted."}
	})
	rt := e.runtime()
	e.session(rt, "support", "a", "Hello.")
	var sid string
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM stackbone_platform.sessions`).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	err := e.svc.WriteReport(e.ctx, sid, 1, false)
	if !errors.Is(err, stores.ErrInvalidModelOutput) {
		t.Fatalf("a failed attempt: %v", err)
	}
	var am stores.AgentMemory
	e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
	if am.FailedSessionCount != 0 {
		t.Fatalf("counted before the last attempt: %+v", am)
	}
	if err := e.svc.WriteReport(e.ctx, sid, 1, true); err != nil {
		t.Fatalf("the last attempt: %v", err)
	}
	e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
	if am.FailedSessionCount != 1 || am.PendingSessionCount != 0 || am.State != "waiting" {
		t.Fatalf("after the last attempt: %+v", am)
	}
	list, err := runs.NewStore(e.pool).List(e.ctx, runs.Filter{Kind: stores.KindSessionReport})
	if err != nil || len(list) != 2 || list[0].ErrorCode != "invalid_model_output" || list[0].Status != "failed" {
		t.Fatalf("report runs: %+v %v", list, err)
	}
}

// TestBoxWiringRunsTheTickAtStart wires the jobs the way cmd/stackbone
// does: the box's client with the store workers and periodic jobs; the
// tick runs at start and reports a finished session.
func TestBoxWiringRunsTheTickAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *stores.Config) { c.IdleAfter = time.Nanosecond })
	e.model.Respond(func(r *openai.ChatCompletionRequest) providertest.Reply {
		if strings.HasPrefix(systemOf(r), reportPrompt) {
			return reportReply(r)
		}
		return providertest.Reply{Content: "Noted."}
	})
	e.session(e.runtime(), "support", "a", "The v-prefix matters.")
	reg := jobs.NewRegistry()
	if err := e.svc.AddWorkers(reg); err != nil {
		t.Fatal(err)
	}
	client, err := jobs.NewClient(e.pool, reg, pgtest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	client.PeriodicJobs().AddMany(e.svc.PeriodicJobs())
	if err := client.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := contextTimeout(5 * time.Second)
		defer cancel()
		_ = client.Stop(ctx)
	})
	poll.Until(t, "the report of the finished session", 10*time.Second, func() bool {
		var am stores.AgentMemory
		e.call("GET", "/api/agents/support/memory", nil).ok(t, 200, &am)
		return am.PendingSessionCount == 1 && am.State == "idle"
	})

}
