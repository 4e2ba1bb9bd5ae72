package config

import (
	"fmt"
	"unicode/utf8"
)

// MemoryStoreAttachment attaches one curated memory store to every session
// of an agent, next to the agent's learned memory: what the specification
// calls an automation's run defaults (runDefaults.memoryStores). A store
// that is archived, missing, or scoped to another agent is left out of the
// session (and logged), as the specification says.
type MemoryStoreAttachment struct {
	// MemoryStoreID is the store's id, or its slug (which survives renames).
	MemoryStoreID string `yaml:"memoryStoreId"`
	// Access is read_only (the default) or read_write.
	Access string `yaml:"access"`
	// Instructions are shown to the agent beside the store's name and
	// description; at most MaxAttachmentInstructions characters.
	Instructions string `yaml:"instructions"`
}

// Limits of memory store attachments: 7 curated stores beside the learned
// one (8 stores a session), instructions of at most 4,096 characters.
const (
	MaxAttachedStores         = 7
	MaxAttachmentInstructions = 4096
)

// Attachment access modes.
const (
	AccessReadOnly  = "read_only"
	AccessReadWrite = "read_write"
)

// validateAttachments checks an agent's memoryStores.
func validateAttachments(agent string, list []MemoryStoreAttachment) []string {
	var problems []string
	if len(list) > MaxAttachedStores {
		problems = append(problems, fmt.Sprintf("agent %s: memoryStores: %d stores is more than %d (a session uses at most 8, the learned memory included)",
			agent, len(list), MaxAttachedStores))
	}
	seen := map[string]bool{}
	for i, m := range list {
		switch {
		case m.MemoryStoreID == "" || len(m.MemoryStoreID) > 100:
			problems = append(problems, fmt.Sprintf("agent %s: memoryStores[%d].memoryStoreId must be a store id or slug", agent, i))
		case seen[m.MemoryStoreID]:
			problems = append(problems, fmt.Sprintf("agent %s: memoryStores[%d]: %s is attached twice", agent, i, truncate(m.MemoryStoreID, 100)))
		}
		seen[m.MemoryStoreID] = true
		if m.Access != "" && m.Access != AccessReadOnly && m.Access != AccessReadWrite {
			problems = append(problems, fmt.Sprintf("agent %s: memoryStores[%d].access %q is not read_only or read_write", agent, i, truncate(m.Access, 40)))
		}
		if utf8.RuneCountInString(m.Instructions) > MaxAttachmentInstructions {
			problems = append(problems, fmt.Sprintf("agent %s: memoryStores[%d].instructions is over %d characters", agent, i, MaxAttachmentInstructions))
		}
	}
	return problems
}
