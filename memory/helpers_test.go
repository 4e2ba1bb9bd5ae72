package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
)

type harness struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	model *providertest.Server
	svc   *memory.Service
}

func newHarness(t *testing.T, mut ...func(*memory.Config)) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), pool: pgtest.Pool(t), model: providertest.New(t)}
	reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: h.model.URL(), APIKey: "test"}}, nil)
	cfg := memory.Config{Pool: h.pool, Models: reg, Logger: pgtest.Logger(t), FallbackModel: "openai/extractor"}
	for _, m := range mut {
		m(&cfg)
	}
	h.svc = memory.NewService(cfg)
	return h
}

// answer scripts one model reply.
func (h *harness) answer(content string) { h.model.Script(providertest.Reply{Content: content}) }

func (h *harness) add(user string, text string) (memory.AddResult, error) {
	return h.svc.Add(h.ctx, memory.AddRequest{AgentID: "support", UserID: user, Transcript: memory.Transcript{Text: text}})
}

func (h *harness) mustAdd(user, text, answer string) memory.AddResult {
	h.t.Helper()
	h.answer(answer)
	res, err := h.add(user, text)
	if err != nil {
		h.t.Fatalf("add: %v", err)
	}
	return res
}

func (h *harness) recall(agent, user string) memory.RecallResult {
	h.t.Helper()
	n := 100
	res, err := h.svc.Recall(h.ctx, memory.RecallRequest{AgentID: agent, UserID: user, Calls: &n})
	if err != nil {
		h.t.Fatalf("recall: %v", err)
	}
	return res
}

func (h *harness) revision(agent, user string) int64 {
	h.t.Helper()
	var rev int64
	err := h.pool.QueryRow(h.ctx, `SELECT coalesce((SELECT revision FROM stackbone_platform.memory_revisions
		WHERE agent_id = $1 AND user_id = $2), 0)`, agent, user).Scan(&rev)
	if err != nil {
		h.t.Fatal(err)
	}
	return rev
}

func contents(facts []memory.Fact) []string {
	out := make([]string, len(facts))
	for i, f := range facts {
		out[i] = f.Content
	}
	return out
}

func wantCode(t *testing.T, err error, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

// lastChat is the newest chat request the model received.
func (h *harness) lastChat() *openai.ChatCompletionRequest {
	h.t.Helper()
	reqs := h.model.ChatRequests()
	if len(reqs) == 0 {
		h.t.Fatal("the model received no request")
	}
	return reqs[len(reqs)-1]
}

func ops(parts ...string) string {
	return `{"operations":[` + strings.Join(parts, ",") + `],"summary":"A short call."}`
}
