package openaiwire_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/stackbone/box/provider/providertest"
)

var weatherFn = responses.ToolParamOfFunction("get_weather", map[string]any{
	"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
}, false)

// The Responses API with the official Go client: plain and streamed,
// instructions, a function tool round trip continued by
// previous_response_id, the steps around a box-run tool as separate message
// items, usage, and the run id header.
func TestResponses(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	c := b.client()
	b.model.Script(
		providertest.Reply{Content: checkText, ToolCalls: []providertest.Call{providertest.ToolCall("call_m1", "memory_read", map[string]any{})}, PromptTokens: 20, CompletionTokens: 4},
		providertest.Reply{Content: answerText, PromptTokens: 30, CompletionTokens: 6},
		providertest.Reply{Content: "Checking.", ToolCalls: []providertest.Call{providertest.ToolCall("call_w1", "get_weather", map[string]string{"city": "Oslo"})}},
		providertest.Reply{Content: "Rain in Oslo."},
	)
	var resp *http.Response
	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "support", User: openai.String("crm/1"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What do you know about me?")}, Instructions: openai.String("Be brief.")},
		option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != "completed" || first.Object != "response" || len(first.Output) != 2 || first.OutputText() != checkText+answerText ||
		first.Output[0].Content[0].Text != checkText || first.Output[1].Content[0].Text != answerText {
		t.Fatalf("response %s", first.RawJSON())
	}
	if first.Usage.InputTokens != 50 || first.Usage.OutputTokens != 10 || first.Usage.TotalTokens != 60 {
		t.Fatalf("usage %s", first.Usage.RawJSON())
	}
	if _, err := uuid.Parse(resp.Header.Get("x-stackbone-run-id")); err != nil {
		t.Fatalf("run id header %q", resp.Header.Get("x-stackbone-run-id"))
	}
	if got := b.sent(0); !slices.Equal(got, []string{"system: You help customers.", "system: Be brief.", "user: What do you know about me?"}) {
		t.Fatalf("the model received %q", got)
	}

	// Streamed, continuing the conversation: only the new input is sent.
	s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "support", User: openai.String("crm/1"), PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Oslo?")}, Tools: []responses.ToolUnionParam{weatherFn}})
	var types []string
	var done responses.Response
	var deltas strings.Builder
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			done = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if got := slices.Compact(slices.Clone(types)); !slices.Equal(got, want) {
		t.Fatalf("events %q\nwant %q", got, want)
	}
	if deltas.String() != "Checking." || len(done.Output) != 2 || done.Output[1].Type != "function_call" || done.Output[1].CallID != "call_w1" ||
		done.Output[1].Arguments.OfString != `{"city":"Oslo"}` || done.ID == first.ID {
		t.Fatalf("completed %s", done.RawJSON())
	}
	if got := b.sent(2); len(got) != 6 || got[len(got)-1] != "user: Weather in Oslo?" || got[2] != "assistant: "+checkText {
		t.Fatalf("the model received %q", got)
	}

	// The function's output goes back with previous_response_id.
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "support", User: openai.String("crm/1"), PreviousResponseID: openai.String(done.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfFunctionCallOutput("rain, 8C")}}})
	expectError(t, err, 400, "invalid_request_error", "", "call_id")
	out := responses.ResponseInputItemParamOfFunctionCallOutput("rain, 8C")
	out.OfFunctionCallOutput.CallID = openai.String("call_w1")
	third, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "support", User: openai.String("crm/1"), PreviousResponseID: openai.String(done.ID),
		Tools: []responses.ToolUnionParam{weatherFn}, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}})
	if err != nil {
		t.Fatal(err)
	}
	if third.OutputText() != "Rain in Oslo." {
		t.Fatalf("response %s", third.RawJSON())
	}
	got := b.sent(3)
	if got[len(got)-1] != "tool: rain, 8C" || got[len(got)-2] != "assistant: Checking." || strings.Count(strings.Join(got, "\n"), "Weather in Oslo?") != 1 {
		t.Fatalf("the model received %q", got)
	}

	// A previous response the box does not hold is a 400 in OpenAI's shape.
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "support", User: openai.String("crm/2"), PreviousResponseID: openai.String(done.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}})
	expectError(t, err, 400, "invalid_request_error", "previous_response_not_found", "previous response not found")
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "support", PreviousResponseID: openai.String("resp_nope"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}})
	expectError(t, err, 400, "invalid_request_error", "previous_response_not_found", "resp_nope")
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "nobody", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}})
	expectError(t, err, 404, "invalid_request_error", "model_not_found", "nobody")
}

// Unknown routes under /openai/v1/ answer a JSON error in OpenAI's shape
// that names the routes the box serves.
func TestUnknownRouteNamesTheRoutes(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	for _, r := range []struct{ method, path string }{{"POST", "/openai/v1/embeddings"}, {"GET", "/openai/v1/chat/completions"}, {"POST", "/openai/v1/assistants"}} {
		req, _ := http.NewRequest(r.method, b.url+r.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal(body, &e) != nil ||
			e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "POST /openai/v1/responses") {
			t.Fatalf("%s %s: %d %s", r.method, r.path, resp.StatusCode, body)
		}
	}
}

// An error after the stream began ends it with an error event and
// response.failed carrying the error, the output so far kept.
func TestResponsesErrorAfterTheStreamBegan(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(checkStep, providertest.Reply{Status: 500, Message: "scripted failure"})
	s := b.client().Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "support", User: openai.String("crm/1"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What do you know about me?")}})
	var types []string
	var failed responses.Response
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.failed" {
			failed = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(types) < 3 || types[len(types)-2] != "error" || types[len(types)-1] != "response.failed" {
		t.Fatalf("events %q", types)
	}
	if failed.Status != "failed" || failed.Error.Code != "provider_error" || len(failed.Output) != 1 || failed.Output[0].Content[0].Text != checkText {
		t.Fatalf("failed response %s", failed.RawJSON())
	}
}

// previous_response_id must name the latest response of its conversation:
// the box keeps one line of history, so a branch is refused.
func TestResponsesRefusesABranch(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "One."}, providertest.Reply{Content: "Two."}, providertest.Reply{Content: "Three."})
	c := b.client()
	in := func(s string) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
	}
	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "plain", Input: in("1")})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "plain", Input: in("2"), PreviousResponseID: openai.String(first.ID)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "plain", Input: in("2b"), PreviousResponseID: openai.String(first.ID)})
	expectError(t, err, 400, "invalid_request_error", "invalid_request", "continue from its latest answer")
	third, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "plain", Input: in("3"), PreviousResponseID: openai.String(second.ID)})
	if err != nil || third.OutputText() != "Three." {
		t.Fatalf("%v %v", third, err)
	}
	if got := b.sent(2); !slices.Equal(got, []string{"system: You are plain.", "user: 1", "assistant: One.", "user: 2", "assistant: Two.", "user: 3"}) {
		t.Fatalf("the model received %q", got)
	}
}
