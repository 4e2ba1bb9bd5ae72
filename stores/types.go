package stores

import (
	"time"

	"github.com/google/uuid"
)

// Limits of the specification.
const (
	// MaxContentBytes is one memory's content: 100 KiB.
	MaxContentBytes = 100 << 10
	// MaxSummaryChars is one memory's summary, in characters.
	MaxSummaryChars = 512
	// MaxMemories is the live memories of one store.
	MaxMemories = 10000
	// MaxStoresPerSession counts the learned memory and the attached stores.
	MaxStoresPerSession = 8
	// DefaultPageSize and MaxPageSize bound history and memory lists.
	DefaultPageSize = 50
	MaxPageSize     = 100
	// MaxNameChars and MaxDescriptionChars bound a store's name and
	// description (the specification gives none; these keep tool
	// descriptions bounded).
	MaxNameChars        = 100
	MaxDescriptionChars = 2000
	// MaxPathBytes and MaxSegmentBytes bound a memory path.
	MaxPathBytes    = 1024
	MaxSegmentBytes = 255
)

// Origins of a store.
const (
	OriginCurated    = "curated"
	OriginReflection = "reflection"
)

// Statuses of a store and of a memory.
const (
	StatusActive   = "active"
	StatusArchived = "archived"
	StatusDeleted  = "deleted"
	StatusRetired  = "retired"
)

// Author kinds of a version.
const (
	AuthorSession    = "session"
	AuthorAPI        = "api"
	AuthorReflection = "reflection"
	AuthorAdmin      = "admin"
)

// Operations a version records.
const (
	OpCreated  = "created"
	OpUpdated  = "updated"
	OpRenamed  = "renamed"
	OpDeleted  = "deleted"
	OpRestored = "restored"
	OpMerged   = "merged"
	OpRetired  = "retired"
)

// Store is a memory store.
type Store struct {
	ID          uuid.UUID `json:"memory_store_id"`
	Name        string    `json:"name"`
	Slug        string    `json:"slug"`
	Description string    `json:"description"`
	// AgentID is nil for a workspace store.
	AgentID     *string    `json:"agent_id"`
	Origin      string     `json:"origin"`
	Status      string     `json:"status"`
	MemoryCount int        `json:"memory_count"`
	TotalBytes  int64      `json:"total_bytes"`
	Revision    int64      `json:"revision"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	ArchivedAt  *time.Time `json:"archived_at"`
}

// Memory is one memory with its content.
type Memory struct {
	StoreID       uuid.UUID `json:"memory_store_id"`
	ID            uuid.UUID `json:"memory_id"`
	Path          string    `json:"path"`
	Summary       string    `json:"summary"`
	Content       string    `json:"content"`
	ContentSHA256 string    `json:"content_sha256"`
	ByteSize      int       `json:"byte_size"`
	Status        string    `json:"status"`
	HeadVersionID uuid.UUID `json:"head_version_id"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Entry types of a listing.
const (
	EntryMemory = "memory"
	EntryPrefix = "memory_prefix"
)

// Entry is one line of a directory-like listing: a memory, or a
// memory_prefix standing for the Count memories beneath it.
type Entry struct {
	Type      string     `json:"type"`
	Path      string     `json:"path"`
	MemoryID  *uuid.UUID `json:"memory_id,omitempty"`
	Summary   *string    `json:"summary,omitempty"`
	ByteSize  *int       `json:"byte_size,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	Count     *int       `json:"count,omitempty"`
}

// Listing is one page of a directory-like listing.
type Listing struct {
	Entries    []Entry `json:"entries"`
	NextCursor *string `json:"next_cursor"`
}

// Hit is one search result, without content.
type Hit struct {
	StoreID   uuid.UUID `json:"memory_store_id"`
	MemoryID  uuid.UUID `json:"memory_id"`
	Path      string    `json:"path"`
	Summary   string    `json:"summary"`
	ByteSize  int       `json:"byte_size"`
	UpdatedAt time.Time `json:"updated_at"`
	Rank      float32   `json:"rank"`
}

// SearchResult is one page of search results.
type SearchResult struct {
	Memories   []Hit   `json:"memories"`
	NextCursor *string `json:"next_cursor"`
}

// Version is one immutable version of a memory. Content is only filled by
// GetVersion, and stays nil for deletions, retirements and redacted versions.
type Version struct {
	ID                 uuid.UUID  `json:"memory_version_id"`
	StoreID            uuid.UUID  `json:"memory_store_id"`
	MemoryID           uuid.UUID  `json:"memory_id"`
	Operation          string     `json:"operation"`
	Path               string     `json:"path"`
	Summary            string     `json:"summary"`
	ContentSHA256      *string    `json:"content_sha256"`
	ByteSize           *int       `json:"byte_size"`
	AuthorKind         string     `json:"author_kind"`
	AuthorID           string     `json:"author_id"`
	Rationale          *string    `json:"rationale"`
	EvidenceSessionIDs []string   `json:"evidence_session_ids"`
	ReflectionID       *uuid.UUID `json:"reflection_id"`
	RestoredFrom       *uuid.UUID `json:"restored_from_version_id"`
	CreatedAt          time.Time  `json:"created_at"`
	Redacted           bool       `json:"redacted"`
	RedactedAt         *time.Time `json:"redacted_at"`
	RedactedBy         *string    `json:"redacted_by"`
}

// VersionDetail is a version with its content (nil when redacted or when
// the version records a deletion).
type VersionDetail struct {
	Version
	Content *string `json:"content"`
}

// VersionPage is one page of history, newest first.
type VersionPage struct {
	Versions   []Version `json:"memory_versions"`
	NextCursor *string   `json:"next_cursor"`
}

// StorePage is one page of stores.
type StorePage struct {
	Stores     []Store `json:"memory_stores"`
	NextCursor *string `json:"next_cursor"`
}

// Author is who writes a version: its kind and an id (the API key's actor
// name, the session id, the reflection id).
type Author struct {
	Kind string
	ID   string
}
