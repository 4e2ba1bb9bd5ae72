package agent

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A session's client sends either only the new messages, or (every stock
// tool loop does this: the openai SDK's runTools, the AI SDK's stopWhen,
// LangChain's bindTools loop, Anthropic's documented loop) the whole
// conversation again. newMessages tells the two apart so each message
// reaches the session once.
//
// The rules, in order:
//   - a message whose ID the session holds is dropped (AG-UI resends its
//     history with ids);
//   - a system message equal to one the session holds is dropped (clients
//     resend their system prompt with every request);
//   - the other messages, when none carries an ID, are compared with the
//     session's history as the client saw it (see clientView): when they are
//     longer than that history (not counting cut answers, which a client may
//     leave out) and their first message is its first message, they are a
//     resent conversation: the history must be their
//     prefix, and only what follows is new; a difference before the end of
//     the history is ErrInvalidRequest (the client's conversation
//     contradicts the session). Otherwise they are all new: a client that
//     sends only new messages never sends more of them than the session
//     holds and starts with the session's own first message.
//
// Messages are compared by role, text (with runs of white space folded, as
// each wire joins a message's text blocks its own way), tool-call ids and
// the tool-call id a result answers. An answer the client stopped (cut)
// matches whatever the client says it received, or nothing.
func newMessages(hist, msgs []Message, server func(name string) bool) ([]Message, error) {
	have := map[string]bool{}
	system := map[string]bool{}
	for _, m := range hist {
		if m.ID != "" {
			have[m.ID] = true
		}
		if m.Role == RoleSystem {
			system[m.Content] = true
		}
	}
	var sys, rest []Message
	withIDs := false
	for _, m := range msgs {
		switch {
		case m.ID != "" && have[m.ID], m.Role == RoleSystem && system[m.Content]:
		case m.Role == RoleSystem:
			sys = append(sys, m)
		default:
			withIDs = withIDs || m.ID != ""
			rest = append(rest, m)
		}
	}
	if !withIDs {
		view := clientView(hist, server)
		held := 0 // the messages a resend must hold: cut answers are optional
		for _, m := range view {
			if !m.Cut {
				held++
			}
		}
		if len(rest) > held && len(view) > 0 && sameMessage(view[0], rest[0]) {
			i, j := 0, 0
			for i < len(view) && j < len(rest) {
				switch {
				case view[i].Cut && rest[j].Role == RoleAssistant:
					i, j = i+1, j+1
				case view[i].Cut:
					i++
				case sameMessage(view[i], rest[j]):
					i, j = i+1, j+1
				default:
					return nil, fmt.Errorf("%w: messages[%d] (%s) differs from the session's history, which holds %s there; on a session send only the new messages, or the whole conversation as the session holds it", ErrInvalidRequest, j, rest[j].Role, view[i].Role+" "+describe(view[i]))
				}
			}
			rest = rest[j:]
		}
	}
	return append(sys, rest...), nil
}

// clientView is a session's history as a client of the OpenAI or Anthropic
// wire saw it: without system messages, without the calls of tools the box
// ran itself (and their results), and with the assistant messages of one
// turn's model steps merged into one, as those wires answer one message per
// turn.
func clientView(hist []Message, server func(name string) bool) []Message {
	serverCalls := map[string]bool{}
	var out []Message
	lastAssistant := false // the last message kept is an assistant message still open for merging
	for _, m := range hist {
		switch m.Role {
		case RoleSystem:
			continue
		case RoleTool:
			if serverCalls[m.ToolCallID] {
				continue
			}
		case RoleAssistant:
			var calls []ToolCall
			for _, c := range m.ToolCalls {
				if server(c.Name) {
					serverCalls[c.ID] = true
				} else {
					calls = append(calls, c)
				}
			}
			if lastAssistant && !out[len(out)-1].Cut {
				prev := &out[len(out)-1]
				if m.Content != "" {
					if prev.Content != "" {
						prev.Content += StepSeparator
					}
					prev.Content += m.Content
				}
				prev.ToolCalls = append(prev.ToolCalls, calls...)
				prev.Cut = m.Cut
				continue
			}
			m.ToolCalls = calls
			out = append(out, m)
			lastAssistant = true
			continue
		}
		out = append(out, m)
		lastAssistant = false
	}
	return out
}

func sameMessage(a, b Message) bool {
	if a.Role != b.Role || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i].ID != b.ToolCalls[i].ID {
			return false
		}
	}
	return sameText(a.Content, b.Content)
}

// sameText compares two texts with runs of white space folded into one
// space and white space at either end dropped, without allocating.
func sameText(a, b string) bool {
	if a == b {
		return true
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	for a != "" && b != "" {
		if c := a[0]; c < utf8.RuneSelf && c == b[0] && c != ' ' && (c < '\t' || c > '\r') {
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		spaceA, spaceB := unicode.IsSpace(ra), unicode.IsSpace(rb)
		switch {
		case spaceA && spaceB:
			a, b = strings.TrimLeftFunc(a, unicode.IsSpace), strings.TrimLeftFunc(b, unicode.IsSpace)
			continue
		case spaceA || spaceB || ra != rb:
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b == ""
}

// describe names a message for an error without quoting its text.
func describe(m Message) string {
	switch {
	case m.ToolCallID != "":
		return "(the result of tool call " + clip(m.ToolCallID, 64) + ")"
	case len(m.ToolCalls) > 0:
		return fmt.Sprintf("(%d tool calls, the first %s)", len(m.ToolCalls), clip(m.ToolCalls[0].ID, 64))
	}
	return fmt.Sprintf("(%d characters of text)", len([]rune(m.Content)))
}
