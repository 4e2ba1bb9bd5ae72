package memory_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
)

// benchService seeds one person with 50 facts and 5 calls through add itself.
func benchService(b *testing.B) (*memory.Service, string) {
	b.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(b)
	model := providertest.New(b)
	model.DiscardRequests()
	reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: model.URL()}}, nil)
	svc := memory.NewService(memory.Config{Pool: pool, Models: reg, FallbackModel: "openai/bench", Logger: slog.New(slog.DiscardHandler)})
	user := "+34600000000"
	for call := 0; call < 5; call++ {
		var adds []string
		for i := 0; i < 10; i++ {
			adds = append(adds, fmt.Sprintf(`{"op":"add","content":"Fact %d of call %d: prefers afternoon calls and email."}`, i, call))
		}
		model.Script(providertest.Reply{Content: ops(adds...)})
		if _, err := svc.Add(ctx, memory.AddRequest{AgentID: "support", UserID: user, Transcript: memory.Transcript{Text: "seed"}}); err != nil {
			b.Fatal(err)
		}
	}
	model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: ops(`{"op":"update","handle":"f3","content":"Prefers a call back after 16:00."}`)}
	})
	return svc, user
}

// BenchmarkRecall: one person with 50 facts and 5 calls.
func BenchmarkRecall(b *testing.B) {
	svc, user := benchService(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := svc.Recall(ctx, memory.RecallRequest{AgentID: "support", UserID: user})
		if err != nil || len(res.Facts) != 50 || len(res.Calls) != 5 {
			b.Fatalf("%d facts %d calls %v", len(res.Facts), len(res.Calls), err)
		}
	}
}

// BenchmarkAdd: the whole add with a scripted model that answers at once
// (one update on 50 facts), sequential so no add conflicts.
func BenchmarkAdd(b *testing.B) {
	svc, user := benchService(b)
	ctx := context.Background()
	tr := memory.Transcript{Messages: []memory.Message{{Role: "user", Content: "Call me after four."}, {Role: "assistant", Content: "Sure."}}}
	b.ResetTimer()
	for b.Loop() {
		if _, err := svc.Add(ctx, memory.AddRequest{AgentID: "support", UserID: user, Transcript: tr}); err != nil {
			b.Fatal(err)
		}
	}
}
