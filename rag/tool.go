package rag

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
)

var toolParameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for, as a question or keywords."}},"required":["query"],"additionalProperties":false}`)

// Tools is the agent.ToolSource of the retrieval tools that agents declare
// in config (agents.NAME.tools with kind retrieval). Each searches the one
// collection its declaration names, whatever the model asks, and hands the
// model the hits as "[score] content" blocks, best first. A failed search
// is answered to the model as "search_failed: CODE", never as a failed turn.
func (s *Service) Tools(agents map[string]config.Agent) agent.ToolSource {
	return func(_ context.Context, name string) ([]agent.ServerTool, error) {
		a, ok := agents[name]
		if !ok {
			return nil, nil
		}
		var out []agent.ServerTool
		for _, t := range a.Tools {
			if t.Kind == config.ToolKindRetrieval {
				out = append(out, s.retrievalTool(t))
			}
		}
		return out, nil
	}
}

func (s *Service) retrievalTool(t config.AgentTool) agent.ServerTool {
	collection := t.Collection
	if collection == "" {
		collection = DefaultCollection
	}
	topK := t.TopK
	if topK == 0 {
		topK = config.DefaultToolTopK
	}
	desc := t.Description
	if desc == "" {
		desc = fmt.Sprintf("Search the %s documents and answer from what it returns.", collection)
	}
	return agent.ServerTool{
		Def: agent.Tool{Name: t.Name, Description: desc, Parameters: toolParameters},
		Run: func(ctx context.Context, call agent.ToolCall, scope agent.Scope) (string, error) {
			var args struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || strings.TrimSpace(args.Query) == "" {
				return "search_failed: rag_invalid_request (pass {\"query\": \"...\"})", nil
			}
			hits, err := s.Retrieve(ctx, RetrieveRequest{Text: args.Query, TopK: topK, Namespace: collection, Filter: t.Filter, Hybrid: t.Hybrid})
			if err != nil {
				code := Code(err)
				if code == "" {
					code = "internal"
				}
				s.log.Warn("retrieval tool failed", "agent", scope.Agent, "run", scope.RunID, "tool", t.Name, "code", code)
				return "search_failed: " + code, nil
			}
			if len(hits) == 0 {
				return fmt.Sprintf("No matching document in the %s collection.", collection), nil
			}
			parts := make([]string, len(hits))
			for i, h := range hits {
				parts[i] = fmt.Sprintf("[%.2f] %s", h.Score, h.Content)
			}
			return strings.Join(parts, "\n\n"), nil
		},
	}
}
