package stores

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/runs"
)

// Run kinds this package writes to run history.
const (
	KindSessionReport = "session_report"
	KindLearningRun   = "learning_run"
)

// asked is one model answer with what it cost.
type asked struct {
	text  string
	model provider.Model
	in    int
	out   int
}

// ask sends one JSON-mode chat request to the memory model.
func (s *Service) ask(ctx context.Context, modelID, system, user string) (asked, error) {
	if s.cfg.Models == nil {
		return asked{}, fmt.Errorf("%w: no model provider is configured", ErrModel)
	}
	if modelID == "" {
		return asked{}, fmt.Errorf("%w: the agent has no model; set a memory model", ErrModel)
	}
	m, err := s.cfg.Models.Resolve(modelID)
	if err != nil {
		return asked{}, fmt.Errorf("%w: %v", ErrModel, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ModelTimeout)
	defer cancel()
	resp, err := m.Client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: m.Name,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: system},
			{Role: openai.ChatMessageRoleUser, Content: user},
		},
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	})
	if err != nil {
		return asked{model: m}, fmt.Errorf("%w: %s", ErrModel, provider.Describe(err))
	}
	a := asked{model: m, in: resp.Usage.PromptTokens, out: resp.Usage.CompletionTokens}
	if len(resp.Choices) == 0 {
		return a, badOutput("the model answered no choice")
	}
	a.text = resp.Choices[0].Message.Content
	return a, nil
}

// queueRun writes a run history row inside tx, so the run commits with
// what it did.
func queueRun(ctx context.Context, tx pgx.Tx, r runs.Run) error { return runs.InsertWith(ctx, tx, r) }

func finishRun(r *runs.Run, a asked, err error) {
	end := time.Now()
	ms := int(end.Sub(r.StartedAt).Milliseconds())
	r.FinishedAt, r.DurationMS = &end, &ms
	r.InputTokens, r.OutputTokens = a.in, a.out
	if a.model.ID != "" {
		r.CostUSD = a.model.Cost(a.in, a.out)
	}
	r.Status = runs.StatusSucceeded
	if err != nil {
		r.Status, r.ErrorCode = runs.StatusFailed, Code(err)
		if r.ErrorCode == "" {
			r.ErrorCode = "internal"
		}
	}
}

// turnText is one turn of a transcript shown to the report model.
type turnText struct {
	Turn  int    `json:"turn"`
	User  string `json:"user"`
	Agent string `json:"agent"`
}

// Transcript bounds for a report: the last turns, each and all clipped.
const (
	reportMaxTurns     = 40
	reportMaxTurnChars = 4000
	reportMaxChars     = 48000
)

// WriteReport writes the report of a finished session over its turns up
// to throughTurn (the report job calls it). final marks the job's last
// attempt: a failure is then recorded as a failed report instead of
// returned. Writing a useful report may start a learning run. Errors:
// ErrModel, ErrInvalidModelOutput, ErrUnavailable.
func (s *Service) WriteReport(ctx context.Context, sessionID string, throughTurn int, final bool) error {
	var agentName string
	var turns int
	err := s.cfg.Pool.QueryRow(ctx, `SELECT agent_id, turns FROM stackbone_platform.sessions WHERE id = $1`, sessionID).Scan(&agentName, &turns)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !s.agentExists(agentName)) {
		return nil // the session or its agent is gone: nothing to learn from
	}
	if err != nil {
		return dbErr("read session", err)
	}
	var from int
	if err := s.cfg.Pool.QueryRow(ctx, `SELECT coalesce(max(through_turn), 0) FROM stackbone_platform.session_reports WHERE session_id = $1`,
		sessionID).Scan(&from); err != nil {
		return dbErr("read reports", err)
	}
	if from >= throughTurn {
		return nil // already reported
	}
	if _, err := s.learnedStore(ctx, agentName); err != nil {
		return err
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT turn, user_text, reply_text FROM stackbone_platform.session_turns
		WHERE session_id = $1 AND turn > $2 AND turn <= $3 ORDER BY turn DESC LIMIT $4`, sessionID, from, throughTurn, reportMaxTurns)
	if err != nil {
		return dbErr("read transcript", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[turnText])
	if err != nil {
		return dbErr("read transcript", err)
	}
	slices.Reverse(list)
	total := 0
	for i := range list {
		list[i].User, list[i].Agent = clip(list[i].User, reportMaxTurnChars), clip(list[i].Agent, reportMaxTurnChars)
		total += len(list[i].User) + len(list[i].Agent)
	}
	for total > reportMaxChars && len(list) > 1 {
		total -= len(list[0].User) + len(list[0].Agent)
		list = list[1:]
	}
	modelID, err := s.effectiveModel(ctx, agentName)
	if err != nil {
		return err
	}
	run := runs.Run{ID: uuid.New(), Kind: KindSessionReport, AgentID: agentName, Model: modelID, StartedAt: time.Now(),
		Metadata: map[string]any{"session": sessionID, "fromTurn": from, "throughTurn": throughTurn, "turnsShown": len(list)}}
	var u strings.Builder
	fmt.Fprintf(&u, "Session %s, turns %d to %d.\n", sessionID, from+1, throughTurn)
	if err := framed(&u, "Transcript", list); err != nil {
		return err
	}
	u.WriteString("Answer with the JSON object only.")
	a, err := s.ask(ctx, modelID, fmt.Sprintf(reportProtocol, agentName), u.String())
	var rep reportAnswer
	if err == nil {
		rep, err = parseReport(a.text)
	}
	finishRun(&run, a, err)
	if err != nil {
		s.log.Warn("session report failed", "agent", agentName, "session", sessionID, "code", Code(err), "final", final)
		wctx := context.WithoutCancel(ctx)
		werr := s.inTx(wctx, "record report failure", func(tx pgx.Tx) error {
			if final {
				if _, err := tx.Exec(wctx, `INSERT INTO stackbone_platform.session_reports
					  (id, session_id, agent_id, from_turn, through_turn, status, error_code, run_id)
					VALUES ($1, $2, $3, $4, $5, 'failed', $6, $7) ON CONFLICT DO NOTHING`,
					uuid.New(), sessionID, agentName, from, throughTurn, Code(err), run.ID); err != nil {
					return err
				}
			}
			return queueRun(wctx, tx, run)
		})
		if werr != nil || !final {
			return errors.Join(err, werr)
		}
		return nil
	}
	run.Metadata["useful"] = rep.useful
	err = s.inTx(ctx, "write report", func(tx pgx.Tx) error {
		// Reports of one agent commit one at a time, so the count below sees
		// every other report and concurrent reports cannot each miss the
		// threshold.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM stackbone_platform.agent_learning WHERE agent_id = $1 FOR UPDATE`, agentName); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO stackbone_platform.session_reports
			  (id, session_id, agent_id, from_turn, through_turn, status, useful, report, run_id)
			VALUES ($1, $2, $3, $4, $5, 'written', $6, $7, $8) ON CONFLICT DO NOTHING`,
			uuid.New(), sessionID, agentName, from, throughTurn, rep.useful, rep.report, run.ID)
		if err != nil {
			return err
		}
		if err := queueRun(ctx, tx, run); err != nil {
			return err
		}
		if tag.RowsAffected() == 0 || !rep.useful {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.agent_learning SET state = 'idle', updated_at = now()
			WHERE agent_id = $1 AND state = 'waiting'`, agentName); err != nil {
			return err
		}
		var waiting int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.session_reports
			WHERE agent_id = $1 AND useful AND reflection_id IS NULL`, agentName).Scan(&waiting); err != nil {
			return err
		}
		if waiting >= s.cfg.ReportsPerRun {
			return enqueueLearn(ctx, tx, agentName, TriggerReports,
				fmt.Sprintf("%d useful session reports were waiting (a run starts at %d)", waiting, s.cfg.ReportsPerRun))
		}
		return nil
	})
	if err == nil {
		s.log.Info("session report written", "agent", agentName, "session", sessionID, "through", throughTurn, "useful", rep.useful)
	}
	return err
}

// enqueueLearn inserts a learning job in tx with the River client of the
// working job; outside a job (no client) it leaves the run to the tick.
func enqueueLearn(ctx context.Context, tx pgx.Tx, agentName, trigger, reason string) error {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return nil
	}
	args := LearnArgs{Agent: agentName, TriggeredBy: trigger, Reason: reason}
	if tx == nil {
		_, err = client.Insert(ctx, args, nil)
	} else {
		_, err = client.InsertTx(ctx, tx, args, nil)
	}
	return err
}

// Learning prompt bounds: the memories shown and their content budget.
const (
	learnMaxShown     = 200
	learnContentBytes = 64 << 10
)

// reportRow is a waiting useful report.
type reportRow struct {
	ID        uuid.UUID `json:"-"`
	SessionID string    `json:"session_id"`
	Report    string    `json:"report"`
}

// RunLearning runs one learning attempt for an agent (the learning job
// calls it): it reads the waiting useful reports and the current learned
// memories, asks the memory model for a small set of changes, and applies
// them as versions with their rationale and evidence, all in one
// transaction with the reflection row, the reports' consumption and the
// run. A failure moves the agent to delayed with next_retry_at = now +
// RetryDelay(attempt) and is returned, so the job retries; existing
// memories stay readable throughout. Errors: ErrModel,
// ErrInvalidModelOutput, ErrConflict, ErrNotFound, ErrUnavailable.
func (s *Service) RunLearning(ctx context.Context, agentName, trigger, reason string, attempt int) error {
	return s.runLearning(ctx, agentName, trigger, reason, attempt, nil)
}

// runLearning is RunLearning; complete, when set, runs inside the
// transaction that applies a successful run (the job marks itself
// completed there, so a run enqueued right after is not taken for a
// duplicate of this one).
func (s *Service) runLearning(ctx context.Context, agentName, trigger, reason string, attempt int, complete func(pgx.Tx) error) (err error) {
	st, err := s.learnedStore(ctx, agentName)
	if err != nil {
		return err
	}
	modelID, err := s.effectiveModel(ctx, agentName)
	if err != nil {
		return err
	}
	reports, err := s.waitingReports(ctx, agentName)
	if err != nil {
		return err
	}
	if len(reports) == 0 {
		_, err := s.cfg.Pool.Exec(ctx, `UPDATE stackbone_platform.agent_learning SET last_checked_at = now(), updated_at = now(),
			state = CASE WHEN state IN ('updating', 'delayed') THEN 'idle' ELSE state END, next_retry_at = NULL WHERE agent_id = $1`, agentName)
		return dbErr("record check", err)
	}
	lr := s.newLearnRun(agentName, trigger, attempt, st, modelID, reports)
	if err := lr.start(ctx, reason); err != nil {
		return err
	}
	s.log.Info("learning run started", "agent", agentName, "reflection", lr.refID, "trigger", trigger, "attempt", attempt, "reports", len(reports))
	defer func() {
		if err != nil {
			lr.fail(ctx, err)
		}
	}()
	ans, snapshot, err := lr.think(ctx)
	if err != nil {
		return err
	}
	if err := lr.apply(ctx, ans, snapshot, complete); err != nil {
		return err
	}
	s.startWaiting(ctx, agentName)
	s.log.Info("learning run succeeded", "agent", agentName, "reflection", lr.refID, "added", lr.counts[changeAdd],
		"updated", lr.counts[changeRefine], "merged", lr.counts[changeMerge], "retired", lr.counts[changeRetire],
		"in", lr.asked.in, "out", lr.asked.out)
	return nil
}

// waitingReports reads the useful reports no learning run has consumed,
// oldest first, as many as one run reads.
func (s *Service) waitingReports(ctx context.Context, agentName string) ([]reportRow, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT id, session_id, report FROM stackbone_platform.session_reports
		WHERE agent_id = $1 AND useful AND reflection_id IS NULL ORDER BY created_at, id LIMIT $2`, agentName, s.cfg.MaxReportsPerRun)
	if err != nil {
		return nil, dbErr("read reports", err)
	}
	reports, err := pgx.CollectRows(rows, pgx.RowToStructByPos[reportRow])
	if err != nil {
		return nil, dbErr("read reports", err)
	}
	return reports, nil
}

// startWaiting starts the next learning run when reports that arrived
// during this one are enough (they could not start it while this one ran).
func (s *Service) startWaiting(ctx context.Context, agentName string) {
	var waiting int
	if err := s.cfg.Pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.session_reports
		WHERE agent_id = $1 AND useful AND reflection_id IS NULL`, agentName).Scan(&waiting); err != nil || waiting < s.cfg.ReportsPerRun {
		return
	}
	if err := enqueueLearn(ctx, nil, agentName, TriggerReports,
		fmt.Sprintf("%d useful session reports were waiting (a run starts at %d)", waiting, s.cfg.ReportsPerRun)); err != nil {
		s.log.Warn("learning run: enqueue the next run", "agent", agentName, "error", err)
	}
}

// learnRun is one learning attempt of an agent: its reflection row, its
// run history row, and what the model answered and the changes did.
type learnRun struct {
	s         *Service
	agent     string
	trigger   string
	attempt   int
	st        Store
	modelID   string
	reports   []reportRow
	reportIDs []uuid.UUID
	refID     uuid.UUID
	run       runs.Run
	asked     asked
	counts    map[string]int // applied changes by op
}

func (s *Service) newLearnRun(agentName, trigger string, attempt int, st Store, modelID string, reports []reportRow) *learnRun {
	lr := &learnRun{s: s, agent: agentName, trigger: trigger, attempt: attempt, st: st, modelID: modelID, reports: reports,
		refID: uuid.New(), counts: map[string]int{}}
	lr.run = runs.Run{ID: uuid.New(), Kind: KindLearningRun, AgentID: agentName, Model: modelID, StartedAt: time.Now(),
		Metadata: map[string]any{"reflection": lr.refID.String(), "trigger": trigger, "attempt": attempt, "reports": len(reports)}}
	lr.reportIDs = make([]uuid.UUID, len(reports))
	for i, r := range reports {
		lr.reportIDs[i] = r.ID
	}
	return lr
}

// start records the run as running and the agent as updating.
func (lr *learnRun) start(ctx context.Context, reason string) error {
	return lr.s.inTx(ctx, "start learning run", func(tx pgx.Tx) error {
		// Only one learning job of an agent runs at a time, so a running row
		// left here is from a box that died mid-run.
		if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.memory_reflections SET status = 'failed', error_code = 'interrupted',
			error_message = 'the box stopped during the run', finished_at = now() WHERE agent_id = $1 AND status = 'running'`, lr.agent); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO stackbone_platform.memory_reflections
			  (id, agent_id, store_id, status, triggered_by, reason, attempt, model, run_id, report_ids)
			VALUES ($1, $2, $3, 'running', $4, $5, $6, $7, $8, $9)`,
			lr.refID, lr.agent, lr.st.ID, lr.trigger, reason, lr.attempt, lr.modelID, lr.run.ID, lr.reportIDs); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE stackbone_platform.agent_learning SET state = 'updating', updated_at = now() WHERE agent_id = $1`, lr.agent)
		return err
	})
}

// think shows the model the current memories and the reports, and
// returns its validated changes with the memories as it saw them.
func (lr *learnRun) think(ctx context.Context) (learningAnswer, map[string]snapMemory, error) {
	shown, snapshot, err := lr.s.snapshot(ctx, lr.st.ID)
	if err != nil {
		return learningAnswer{}, nil, err
	}
	var u strings.Builder
	fmt.Fprintf(&u, "The learned memory holds %d memories; %d are shown, the most recently updated first.\n", lr.st.MemoryCount, len(shown))
	if err := framed(&u, "Memories", shown); err != nil {
		return learningAnswer{}, nil, err
	}
	if err := framed(&u, "Reports", lr.reports); err != nil {
		return learningAnswer{}, nil, err
	}
	u.WriteString("Answer with the JSON object only.")
	lr.asked, err = lr.s.ask(ctx, lr.modelID, fmt.Sprintf(learningProtocol, lr.agent, lr.s.cfg.MaxChangesPerRun), u.String())
	if err != nil {
		return learningAnswer{}, nil, err
	}
	sessions := map[string]bool{}
	for _, r := range lr.reports {
		sessions[r.SessionID] = true
	}
	existing := map[string]bool{}
	for p := range snapshot {
		existing[p] = true
	}
	ans, err := parseLearning(lr.asked.text, existing, sessions, lr.st.MemoryCount, lr.s.cfg.MaxChangesPerRun)
	if err != nil {
		return learningAnswer{}, nil, err
	}
	finishRun(&lr.run, lr.asked, nil)
	return ans, snapshot, nil
}

// apply writes the changes, consumes the reports and records the run's
// success, all in one transaction (with complete, when set).
func (lr *learnRun) apply(ctx context.Context, ans learningAnswer, snapshot map[string]snapMemory, complete func(pgx.Tx) error) error {
	return lr.s.inTx(ctx, "apply learning run", func(tx pgx.Tx) error {
		learnedFrom, err := lr.applyChanges(ctx, tx, ans.changes, snapshot)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE stackbone_platform.session_reports SET reflection_id = $2
			WHERE id = ANY($1) AND reflection_id IS NULL`, lr.reportIDs, lr.refID)
		if err != nil {
			return err
		}
		if int(tag.RowsAffected()) != len(lr.reportIDs) {
			return fmt.Errorf("%w: another learning run read these reports", ErrConflict)
		}
		if err := lr.recordSuccess(ctx, tx, ans, learnedFrom); err != nil {
			return err
		}
		if complete != nil {
			return complete(tx)
		}
		return nil
	})
}

// applyChanges applies each change to the locked learned store and
// returns the sessions they learned from, each once.
func (lr *learnRun) applyChanges(ctx context.Context, tx pgx.Tx, changes []change, snapshot map[string]snapMemory) ([]string, error) {
	locked, err := lockStore(ctx, tx, lr.st.ID)
	if err != nil {
		return nil, err
	}
	author := Author{Kind: AuthorReflection, ID: lr.refID.String()}
	learnedFrom := []string{}
	for i := range changes {
		if err := applyChange(ctx, tx, &locked, snapshot, &changes[i], author, lr.refID); err != nil {
			return nil, err
		}
		lr.counts[changes[i].Op]++
		for _, id := range changes[i].Evidence {
			if !slices.Contains(learnedFrom, id) {
				learnedFrom = append(learnedFrom, id)
			}
		}
	}
	return learnedFrom, nil
}

// recordSuccess marks the reflection succeeded with its changes, the
// agent idle, and queues the run's history row.
func (lr *learnRun) recordSuccess(ctx context.Context, tx pgx.Tx, ans learningAnswer, learnedFrom []string) error {
	changes, err := json.Marshal(ans.changes)
	if err != nil {
		return err
	}
	c := lr.counts
	lr.run.Metadata["added"], lr.run.Metadata["updated"] = c[changeAdd], c[changeRefine]
	lr.run.Metadata["merged"], lr.run.Metadata["retired"] = c[changeMerge], c[changeRetire]
	if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.memory_reflections SET status = 'succeeded', learned_from = $2,
		  added = $3, updated = $4, merged = $5, retired = $6, changes = $7, summary = $8, finished_at = now()
		WHERE id = $1`, lr.refID, learnedFrom, c[changeAdd], c[changeRefine], c[changeMerge], c[changeRetire],
		changes, ans.summary); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.agent_learning SET state = 'idle', next_retry_at = NULL,
		  last_error_code = NULL, last_checked_at = now(), updated_at = now(),
		  last_updated_at = CASE WHEN $2 THEN now() ELSE last_updated_at END
		WHERE agent_id = $1`, lr.agent, len(ans.changes) > 0); err != nil {
		return err
	}
	return queueRun(ctx, tx, lr.run)
}

// fail records a failed run: the reflection failed, the agent delayed
// until its next retry. It is recorded even when the job's context ended
// (a timeout is a failure like any other).
func (lr *learnRun) fail(ctx context.Context, cause error) {
	s := lr.s
	finishRun(&lr.run, lr.asked, cause)
	next := s.cfg.Now().Add(s.cfg.RetryDelay(lr.attempt))
	msg := strings.TrimPrefix(cause.Error(), "stores: ")
	if !errors.Is(cause, ErrModel) && !errors.Is(cause, ErrInvalidModelOutput) && !errors.Is(cause, ErrConflict) {
		msg = "the run could not be saved"
	}
	wctx := context.WithoutCancel(ctx)
	werr := s.inTx(wctx, "record learning failure", func(tx pgx.Tx) error {
		if _, err := tx.Exec(wctx, `UPDATE stackbone_platform.memory_reflections SET status = 'failed', error_code = $2,
			error_message = $3, finished_at = now() WHERE id = $1`, lr.refID, lr.run.ErrorCode, clip(msg, 500)); err != nil {
			return err
		}
		if _, err := tx.Exec(wctx, `UPDATE stackbone_platform.agent_learning SET state = 'delayed', next_retry_at = $2,
			last_error_code = $3, last_checked_at = now(), updated_at = now() WHERE agent_id = $1`, lr.agent, next, lr.run.ErrorCode); err != nil {
			return err
		}
		return queueRun(wctx, tx, lr.run)
	})
	s.log.Warn("learning run failed", "agent", lr.agent, "reflection", lr.refID, "code", lr.run.ErrorCode, "attempt", lr.attempt,
		"next_retry_at", next.Format(time.RFC3339))
	if werr != nil {
		s.log.Error("learning run: record failure", "agent", lr.agent, "error", werr)
	}
}

// snapMemory is a live memory as a learning run saw it.
type snapMemory struct {
	id   uuid.UUID
	head uuid.UUID
}

// snapshot reads the memories shown to the learning model: the most
// recently updated, with content while the budget lasts.
func (s *Service) snapshot(ctx context.Context, storeID uuid.UUID) ([]shownMemory, map[string]snapMemory, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT id, head_version_id, path, summary, content FROM stackbone_platform.memories
		WHERE store_id = $1 AND status = 'active' ORDER BY updated_at DESC, id LIMIT $2`, storeID, learnMaxShown)
	if err != nil {
		return nil, nil, dbErr("read memories", err)
	}
	defer rows.Close()
	var shown []shownMemory
	snap := map[string]snapMemory{}
	budget := learnContentBytes
	for rows.Next() {
		var sm snapMemory
		var m shownMemory
		var content string
		if err := rows.Scan(&sm.id, &sm.head, &m.Path, &m.Summary, &content); err != nil {
			return nil, nil, dbErr("read memories", err)
		}
		if len(content) <= budget {
			budget -= len(content)
			m.Content = &content
		}
		shown = append(shown, m)
		snap[m.Path] = sm
	}
	if err := rows.Err(); err != nil {
		return nil, nil, dbErr("read memories", err)
	}
	if shown == nil {
		shown = []shownMemory{}
	}
	return shown, snap, nil
}

// applyChange applies one validated change to the locked learned store,
// checking that the memories it names are still as the run saw them.
func applyChange(ctx context.Context, tx pgx.Tx, st *Store, snap map[string]snapMemory, c *change, author Author, refID uuid.UUID) error {
	rationale := c.Rationale
	row := func(op string) versionRow {
		return versionRow{op: op, author: author, rationale: &rationale, evidence: c.Evidence, reflectionID: &refID}
	}
	current := func(path string) (Memory, error) {
		sm, ok := snap[path]
		m, err := scanMemory(tx.QueryRow(ctx, `SELECT `+memoryCols+` FROM stackbone_platform.memories
			WHERE store_id = $1 AND path = $2 AND status = 'active' FOR UPDATE`, st.ID, path))
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (!ok || m.ID != sm.id || m.HeadVersionID != sm.head)) {
			return Memory{}, fmt.Errorf("%w: a memory changed while the run was thinking", ErrConflict)
		}
		return m, err
	}
	create := func(op string) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.memories
			WHERE store_id = $1 AND path = $2 AND status = 'active')`, st.ID, c.Path).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return badOutput("a change adds a path that exists but was not shown")
		}
		m, err := createLocked(ctx, tx, *st, CreateMemory{Path: c.Path, Summary: c.Summary, Content: c.Content}, row(op))
		if err != nil {
			return err
		}
		st.MemoryCount++
		c.MemoryID, c.VersionIDs = m.ID.String(), append(c.VersionIDs, m.HeadVersionID.String())
		return nil
	}
	retire := func(path, op string) error {
		m, err := current(path)
		if err != nil {
			return err
		}
		v := row(op)
		if err := removeLocked(ctx, tx, m, StatusRetired, v); err != nil {
			return err
		}
		st.MemoryCount--
		var vid uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT head_version_id FROM stackbone_platform.memories WHERE id = $1`, m.ID).Scan(&vid); err != nil {
			return err
		}
		if c.MemoryID == "" {
			c.MemoryID = m.ID.String()
		}
		c.VersionIDs = append(c.VersionIDs, vid.String())
		return nil
	}
	switch c.Op {
	case changeAdd:
		return create(OpCreated)
	case changeRefine:
		m, err := current(c.Path)
		if err != nil {
			return err
		}
		next := m
		next.Content = c.Content
		if c.Summary != "" {
			next.Summary = c.Summary
		}
		if next.Content == m.Content && next.Summary == m.Summary {
			c.MemoryID = m.ID.String()
			return nil
		}
		out, err := writeLocked(ctx, tx, m, next, row(OpUpdated))
		if err != nil {
			return err
		}
		c.MemoryID, c.VersionIDs = out.ID.String(), []string{out.HeadVersionID.String()}
		return nil
	case changeMerge:
		// Sources other than the target are retired first, so the target may
		// take a free path.
		for _, p := range c.Sources {
			if p != c.Path {
				if err := retire(p, OpMerged); err != nil {
					return err
				}
			}
		}
		c.MemoryID = ""
		if !slices.Contains(c.Sources, c.Path) {
			return create(OpMerged)
		}
		m, err := current(c.Path)
		if err != nil {
			return err
		}
		next := m
		next.Summary, next.Content = c.Summary, c.Content
		out, err := writeLocked(ctx, tx, m, next, row(OpMerged))
		if err != nil {
			return err
		}
		c.MemoryID, c.VersionIDs = out.ID.String(), append(c.VersionIDs, out.HeadVersionID.String())
		return nil
	case changeRetire:
		return retire(c.Path, OpRetired)
	}
	return badOutput("unknown change %q", c.Op)
}

// staleUpdating is how long "updating" may last before the tick takes the
// run for lost: well past River's rescue of stuck jobs (1 hour).
const staleUpdating = 2 * time.Hour

// Tick is one pass of the learning scheduler (the periodic tick job calls
// it): it enqueues a report job for every finished session of a declared
// agent whose newest turns have no report, and a learning job for every
// agent that is due: enough useful reports waiting (ReportsPerRun), a
// useful report waiting longer than Schedule, or a delayed run whose
// next_retry_at has come. A session is finished when it is neither running
// nor held and has had no turn for IdleAfter. Jobs are unique, so ticks
// from several boxes do not double the work.
func (s *Service) Tick(ctx context.Context, client *river.Client[pgx.Tx]) error {
	now := s.cfg.Now()
	agents := (&config.Config{Agents: s.cfg.Agents}).AgentNames()
	if len(agents) == 0 {
		return nil
	}
	rows, err := s.cfg.Pool.Query(ctx, `
		SELECT s.id, s.turns FROM stackbone_platform.sessions s
		WHERE s.agent_id = ANY($1) AND s.status IN ('completed', 'failed')
		  AND s.last_activity_at < $2 AND s.last_activity_at > $3
		  AND s.turns > coalesce((SELECT max(r.through_turn) FROM stackbone_platform.session_reports r WHERE r.session_id = s.id), 0)
		ORDER BY s.last_activity_at LIMIT 500`, agents, now.Add(-s.cfg.IdleAfter), now.Add(-s.cfg.ReportLookback))
	if err != nil {
		return dbErr("find finished sessions", err)
	}
	var params []river.InsertManyParams
	var sessionID string
	var turns int
	if _, err := pgx.ForEachRow(rows, []any{&sessionID, &turns}, func() error {
		params = append(params, river.InsertManyParams{Args: ReportArgs{SessionID: sessionID, ThroughTurn: turns}})
		return nil
	}); err != nil {
		return dbErr("find finished sessions", err)
	}
	reports := len(params)
	rows, err = s.cfg.Pool.Query(ctx, `
		SELECT l.agent_id, l.state, l.next_retry_at, l.last_checked_at, l.updated_at,
		  (SELECT count(*) FROM stackbone_platform.session_reports r WHERE r.agent_id = l.agent_id AND r.useful AND r.reflection_id IS NULL),
		  (SELECT min(r.created_at) FROM stackbone_platform.session_reports r WHERE r.agent_id = l.agent_id AND r.useful AND r.reflection_id IS NULL)
		FROM stackbone_platform.agent_learning l WHERE l.agent_id = ANY($1)`, agents)
	if err != nil {
		return dbErr("find due learning", err)
	}
	var agentName, state string
	var nextRetry, lastChecked, oldest *time.Time
	var changed time.Time
	var waiting int
	if _, err := pgx.ForEachRow(rows, []any{&agentName, &state, &nextRetry, &lastChecked, &changed, &waiting, &oldest}, func() error {
		args := LearnArgs{Agent: agentName}
		switch {
		case state == StateUpdating && now.Sub(changed) < staleUpdating:
			return nil
		case state == StateUpdating:
			// The box running it died and its job is gone (a job that still
			// exists makes this insert a no-op).
			args.TriggeredBy, args.Reason = TriggerRetry, "a learning run was interrupted"
		case state == StateDelayed:
			if nextRetry == nil || nextRetry.After(now) {
				return nil
			}
			args.TriggeredBy, args.Reason = TriggerRetry, "the last learning run failed and its retry time came"
		case waiting >= s.cfg.ReportsPerRun:
			args.TriggeredBy = TriggerReports
			args.Reason = fmt.Sprintf("%d useful session reports were waiting (a run starts at %d)", waiting, s.cfg.ReportsPerRun)
		case waiting > 0 && oldest != nil && now.Sub(*oldest) >= s.cfg.Schedule && (lastChecked == nil || now.Sub(*lastChecked) >= s.cfg.Schedule):
			args.TriggeredBy = TriggerSchedule
			args.Reason = fmt.Sprintf("the regular schedule (every %s) with %d useful report(s) waiting", s.cfg.Schedule, waiting)
		default:
			return nil
		}
		params = append(params, river.InsertManyParams{Args: args})
		return nil
	}); err != nil {
		return dbErr("find due learning", err)
	}
	if len(params) == 0 {
		return nil
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		return dbErr("enqueue learning jobs", err)
	}
	s.log.Debug("learning tick", "report_jobs", reports, "learning_jobs", len(params)-reports)
	return nil
}
