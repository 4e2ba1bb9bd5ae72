package memory

import (
	"time"

	"github.com/google/uuid"
)

// Limits of person memory.
const (
	// MaxFactChars is the longest fact, in characters.
	MaxFactChars = 500
	// MaxFacts is the most unique facts one person may have per agent.
	MaxFacts = 50
	// MaxSummaryChars is the longest call summary, in characters.
	MaxSummaryChars = 600
	// MaxInstructionsChars is the longest extraction policy, in characters.
	MaxInstructionsChars = 20000
	// DefaultRecallCalls and MaxRecallCalls bound recall's calls.
	DefaultRecallCalls = 5
	MaxRecallCalls     = 100
	// MaxUserIDChars bounds the opaque person id, like any identity value.
	MaxUserIDChars = 500
	// MaxAgentIDChars bounds the agent id.
	MaxAgentIDChars = 200
	// MaxTranscriptChars bounds the transcript given to one add.
	MaxTranscriptChars = 200000
	// MaxMessages bounds the messages of one add.
	MaxMessages = 2000
	// MaxOperations bounds the operations of one model answer.
	MaxOperations = 200
	// MaxOutcomeChars and MaxRunIDChars bound call metadata strings.
	MaxOutcomeChars = 100
	MaxRunIDChars   = 200
)

// Fact is one stored fact about a person.
type Fact struct {
	ID        uuid.UUID `json:"id"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Call is one stored call record.
type Call struct {
	ID              uuid.UUID `json:"id"`
	StartedAt       time.Time `json:"startedAt"`
	DurationSeconds *float64  `json:"durationSeconds"`
	Outcome         *string   `json:"outcome"`
	Summary         string    `json:"summary"`
	RunID           *string   `json:"runId"`
}

// Message is one turn of a transcript.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Transcript is what add reads: a plain string, or messages.
type Transcript struct {
	Text     string
	Messages []Message
}

// CallMeta is the optional call metadata of an add.
type CallMeta struct {
	// StartedAt defaults to the time of the update.
	StartedAt       *time.Time
	DurationSeconds *float64
	Outcome         *string
	// RunID links the call to the run it came from.
	RunID *string
}

// AddRequest is one update of a person's memory.
type AddRequest struct {
	AgentID    string
	UserID     string
	Transcript Transcript
	Call       CallMeta
	// Instructions is trusted agent-specific extraction policy (1 to 20,000
	// characters); nil uses the generic person-memory policy.
	Instructions *string
	// Model and ReasoningEffort are the client's choice, used when no System
	// selection is stored. Empty falls through to the box's configuration.
	Model           string
	ReasoningEffort string
	// IdempotencyKey, when set (1 to 200 characters), makes a retry safe: an
	// add for the same agent and person with a key already used returns
	// the first add's result and changes nothing.
	IdempotencyKey string
}

// AddResult is the full stored list after an update and the new call record.
type AddResult struct {
	Facts []Fact `json:"facts"`
	Call  Call   `json:"call"`
}

// RecallRequest reads a person's memory.
type RecallRequest struct {
	AgentID string
	UserID  string
	// Calls is how many newest call records to return; nil means 5.
	Calls *int
}

// RecallResult holds every fact (oldest first) and the newest calls first.
type RecallResult struct {
	Facts []Fact `json:"facts"`
	Calls []Call `json:"calls"`
}
