package agent

import (
	"errors"
	"slices"
	"testing"
)

func TestNewMessagesRecognisesAResend(t *testing.T) {
	t.Parallel()
	server := func(name string) bool { return name == ToolMemoryRead }
	u := func(s string) Message { return Message{Role: RoleUser, Content: s} }
	a := func(s string, calls ...ToolCall) Message {
		return Message{Role: RoleAssistant, Content: s, ToolCalls: calls}
	}
	tool := func(id, s string) Message { return Message{Role: RoleTool, ToolCallID: id, Content: s} }
	mem := ToolCall{ID: "m1", Name: ToolMemoryRead, Arguments: "{}"}
	w := ToolCall{ID: "w1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}
	hist := []Message{{Role: RoleSystem, Content: "Be brief.", ID: "s"}, u("Hi"), a("Let me check.", mem), tool("m1", "{}"), a("Nothing saved."),
		u("Weather?"), a("", w)}
	for _, c := range []struct {
		name string
		msgs []Message
		want []Message
		err  bool
	}{
		{"only the new message", []Message{tool("w1", "rain")}, []Message{tool("w1", "rain")}, false},
		{"a new message equal to the first one", []Message{u("Hi")}, []Message{u("Hi")}, false},
		{"the whole conversation again, steps joined, system resent",
			[]Message{{Role: RoleSystem, Content: "Be brief."}, u("Hi"), a("Let me check.\n\nNothing saved."), u("Weather?"), a("", w), tool("w1", "rain")},
			[]Message{tool("w1", "rain")}, false},
		{"steps joined with one newline (Anthropic's text blocks)",
			[]Message{u("Hi"), a("Let me check.\nNothing saved."), u("Weather?"), a("", w), tool("w1", "rain")}, []Message{tool("w1", "rain")}, false},
		{"a contradicting history", []Message{u("Hi"), a("Something else."), u("Weather?"), a("", w), tool("w1", "rain")}, nil, true},
		{"another tool call id", []Message{u("Hi"), a("Let me check. Nothing saved."), u("Weather?"), a("", ToolCall{ID: "w2", Name: "get_weather"}), tool("w2", "rain")}, nil, true},
	} {
		got, err := newMessages(hist, slices.Clone(c.msgs), server)
		if c.err {
			if !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("%s: err %v, want ErrInvalidRequest", c.name, err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
			continue
		}
		for i := range got {
			if !sameMessage(got[i], c.want[i]) {
				t.Errorf("%s: message %d is %+v, want %+v", c.name, i, got[i], c.want[i])
			}
		}
	}

	// A cut answer matches whatever the client says it received, or
	// nothing at all.
	cut := []Message{u("Tell me a story"), {Role: RoleAssistant, Content: "Once", Cut: true}}
	for _, msgs := range [][]Message{
		{u("Tell me a story"), a("Once upon a"), u("Go on")},
		{u("Tell me a story"), u("Go on")},
	} {
		got, err := newMessages(cut, msgs, server)
		if err != nil || len(got) != 1 || got[0].Content != "Go on" {
			t.Errorf("after a cut answer, %+v: got %+v, %v", msgs, got, err)
		}
	}
}

// BenchmarkNewMessagesResend measures recognising a resent conversation of
// 200 messages (100 turns) on a session, the work a stock tool loop adds to
// each turn.
func BenchmarkNewMessagesResend(b *testing.B) {
	server := func(name string) bool { return name == ToolMemoryRead }
	var hist []Message
	for i := range 100 {
		hist = append(hist, Message{Role: RoleUser, Content: "Where is my order, and when will it arrive? " + string(rune('a'+i%26))},
			Message{Role: RoleAssistant, Content: "It left the warehouse this morning and arrives tomorrow before noon."})
	}
	msgs := append(slices.Clone(hist), Message{Role: RoleUser, Content: "Thanks!"})
	for b.Loop() {
		got, err := newMessages(hist, slices.Clone(msgs), server)
		if err != nil || len(got) != 1 {
			b.Fatal(got, err)
		}
	}
}

func TestSameText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a b", "a  b", true}, {"a\n\nb", "a\nb", true}, {" a b ", "a b", true}, {"ab", "a b", false},
		{"a b", "a c", false}, {"", "  ", true}, {"Größe  ok", "Größe ok", true}, {"a", "ab", false},
	} {
		if got := sameText(c.a, c.b); got != c.want {
			t.Errorf("sameText(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
