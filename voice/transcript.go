package voice

import (
	"strings"
	"sync"
	"time"

	"github.com/stackbone/box/agent"
)

// Roles of transcript entries.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Entry is one committed turn of the heard transcript.
type Entry struct {
	Turn int       `json:"turn"`
	Role string    `json:"role"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
	// Cut marks an agent turn the caller interrupted (or the call's end
	// cut): Text is only the part that played.
	Cut bool `json:"cut,omitempty"`
}

// Transcript is the heard transcript of a call: user text committed when its
// transcript is final, assistant text committed from the playout clock. Each
// turn commits exactly once; a second commit of the same turn is ignored.
// It is safe for concurrent use.
type transcript struct {
	// onCommit, when set, is called after each commit that added an entry
	// (outside the lock; it must not block).
	onCommit func()

	mu        sync.Mutex
	entries   []Entry
	committed map[int]bool
}

// NewTranscript returns an empty transcript.
func newTranscript() *transcript { return &transcript{committed: map[int]bool{}} }

// Commit records turn's text once and reports whether this call committed
// it. Empty text marks the turn committed without an entry (nothing was
// heard).
func (t *transcript) Commit(turn int, role, text string, at time.Time) bool {
	return t.commit(Entry{Turn: turn, Role: role, Text: text, At: at})
}

// CommitCut commits an agent turn that was cut: e.Text is what played.
func (t *transcript) CommitCut(turn int, text string, at time.Time) bool {
	return t.commit(Entry{Turn: turn, Role: RoleAssistant, Text: text, At: at, Cut: true})
}

func (t *transcript) commit(e Entry) bool {
	turn, text := e.Turn, e.Text
	t.mu.Lock()
	if t.committed[turn] {
		t.mu.Unlock()
		return false
	}
	t.committed[turn] = true
	added := false
	if text = strings.TrimSpace(text); text != "" {
		e.Text = text
		t.entries = append(t.entries, e)
		added = true
	}
	t.mu.Unlock()
	if added && t.onCommit != nil {
		t.onCommit()
	}
	return true
}

// Entries returns a copy of the committed entries in commit order.
func (t *transcript) Entries() []Entry {
	return t.Since(0)
}

// Since returns a copy of the entries committed after the first n.
func (t *transcript) Since(n int) []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Entry(nil), t.entries[min(n, len(t.entries)):]...)
}

// Len is the number of entries committed (without copying them: a call
// asks at every turn, and its transcript only grows).
func (t *transcript) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Messages is the transcript as the conversation of a model request, with
// room for one more message (the turn's).
func (t *transcript) Messages() []agent.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]agent.Message, len(t.entries), len(t.entries)+1)
	for i, e := range t.entries {
		out[i] = agent.Message{Role: e.Role, Content: e.Text}
	}
	return out
}
