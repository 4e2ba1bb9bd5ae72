package memory

import (
	"errors"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// FuzzExtractionProtocol: any model answer is a valid plan or
// ErrInvalidModelOutput, never a panic; a valid plan names only facts of
// the snapshot, once each, with valid content, and applies.
func FuzzExtractionProtocol(f *testing.F) {
	f.Add(`{"operations":[{"op":"add","content":"Prefers email."}],"summary":"Asked about email."}`, 0)
	f.Add(`{"operations":[{"op":"update","handle":"f2","content":"Call after 16:00."},{"op":"delete","handle":"f1"}],"summary":"s"}`, 3)
	f.Add(`{"operations":[],"summary":"nothing"}`, 1)
	f.Add("{\"operations\":[{\"op\":\"add\",\"content\":\"\xff\"}],\"summary\":\"s\"}", 0)
	f.Add(`{"operations":[{"op":"delete","handle":"f99"}],"summary":"s"}`, 2)
	f.Fuzz(func(t *testing.T, out string, n int) {
		n = ((n % 60) + 60) % 60
		p, err := parseAnswer(out, n)
		if err != nil {
			if !errors.Is(err, ErrInvalidModelOutput) {
				t.Fatalf("error outside the protocol: %v", err)
			}
			return
		}
		seen := map[int]bool{}
		for _, op := range p.ops {
			if op.kind != opAdd && (op.index < 0 || op.index >= n || seen[op.index]) {
				t.Fatalf("plan %+v names fact %d of %d twice or out of range", p, op.index, n)
			}
			seen[op.index] = true
			if op.kind != opDelete && (!utf8.ValidString(op.content) || op.content == "") {
				t.Fatalf("invalid content passed: %q", op.content)
			}
		}
		snapshot := make([]Fact, n)
		for i := range snapshot {
			snapshot[i] = Fact{ID: uuid.New(), Content: fmt.Sprintf("fact %d", i), CreatedAt: time.Unix(int64(i), 0)}
		}
		_, _, _, _, _ = applyPlan(snapshot, p)
	})
}
