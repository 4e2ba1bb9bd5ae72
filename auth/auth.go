// Package auth holds the box's API keys: random secrets stored only as
// SHA-256 hashes, each with a set of scopes.
//
//	keys := auth.NewStore(pool)
//	secret, key, err := keys.Create(ctx, "ci", []string{auth.ScopeMemoryRead})
//	key, err = keys.Authenticate(ctx, secret)
//	if !key.Has(auth.ScopeConfigWrite) { ... 403 ... }
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/postgres/notify"
)

// Errors of the key store, with their kinds and codes (package fault).
var (
	// ErrUnauthenticated: no key, or a key that is unknown or revoked.
	ErrUnauthenticated = fault.New(fault.Unauthenticated, "unauthorized", "auth: invalid or missing API key")
	// ErrInvalidScope: a scope name the box does not know.
	ErrInvalidScope = fault.New(fault.Invalid, "invalid_request", "auth: unknown scope")
	// ErrNotFound: no key of that name.
	ErrNotFound = fault.New(fault.NotFound, "key_not_found", "auth: key not found")
	// ErrExists: a key of that name exists.
	ErrExists = fault.New(fault.Conflict, "key_exists", "auth: key exists")
	// ErrInvalidName: a key name that is empty, too long or not printable.
	ErrInvalidName = fault.New(fault.Invalid, "invalid_request", "auth: a key name must be 1 to 100 printable characters")
	// ErrRevoked: Ensure met a key of that name that was revoked; a
	// revocation sticks, so it is not brought back.
	ErrRevoked = fault.New(fault.Conflict, "key_revoked", "auth: key revoked")
	// ErrWhomUnsaid: a key that may act for persons does not say whom (or
	// says it twice): identities it is restricted to, or any identity.
	ErrWhomUnsaid = fault.New(fault.Invalid, "key_identity_required", "auth: a key that may act for persons must say whom")
)

// Scopes.
const (
	ScopeMemoryRead  = "memory:read"
	ScopeMemoryWrite = "memory:write"
	ScopeConfigRead  = "config:read"
	ScopeConfigWrite = "config:write"
	ScopeRunsRead    = "runs:read"
	// ScopeAgentsRun lets a key talk to agents over the text wires.
	ScopeAgentsRun = "agents:run"
	// ScopeSessionsRead and ScopeSessionsWrite read sessions and decide held tools.
	ScopeSessionsRead  = "sessions:read"
	ScopeSessionsWrite = "sessions:write"
	// ScopeRAGRead and ScopeRAGWrite guard collections, documents and retrieval.
	ScopeRAGRead  = "rag:read"
	ScopeRAGWrite = "rag:write"
	// ScopeStoresRead and ScopeStoresWrite guard memory stores.
	ScopeStoresRead  = "stores:read"
	ScopeStoresWrite = "stores:write"
	// ScopeVoice places and reads calls and browser rooms.
	ScopeVoice = "voice"
	// ScopeKeysAdmin lists, creates and revokes API keys over HTTP; a key
	// can only grant scopes it holds itself.
	ScopeKeysAdmin = "keys:admin"
)

// AllScopes is every scope; the dev key `local-dev` holds them all.
var AllScopes = []string{ScopeMemoryRead, ScopeMemoryWrite, ScopeConfigRead, ScopeConfigWrite, ScopeRunsRead,
	ScopeAgentsRun, ScopeSessionsRead, ScopeSessionsWrite, ScopeRAGRead, ScopeRAGWrite, ScopeStoresRead, ScopeStoresWrite, ScopeVoice, ScopeKeysAdmin}

// Roles name sets of scopes for `stackbone keys create --role`.
var Roles = map[string][]string{
	// admin: every scope (an operator's key).
	"admin": AllScopes,
	// readonly: reads everything, changes nothing (a dashboard).
	"readonly": {ScopeMemoryRead, ScopeConfigRead, ScopeRunsRead, ScopeSessionsRead, ScopeRAGRead, ScopeStoresRead},
	// app: talks to agents and calls for one person (a browser or a
	// customer-facing app; give it --identity).
	"app": {ScopeAgentsRun, ScopeMemoryRead, ScopeVoice},
	// backend: a server that talks to agents for many persons and manages
	// their memory and sessions.
	"backend": {ScopeAgentsRun, ScopeMemoryRead, ScopeMemoryWrite, ScopeSessionsRead, ScopeSessionsWrite, ScopeRAGRead, ScopeStoresRead, ScopeVoice},
}

// PersonScopes let a key act for a person (a turn, memory, a call): a key
// holding one must say whom it may act for (restricted or trusted).
var PersonScopes = []string{ScopeAgentsRun, ScopeMemoryRead, ScopeMemoryWrite, ScopeVoice}

// CheckWhom checks what a new key says about the persons it acts for:
// allowed (identity field to value or pattern: a restricted key) or
// anyIdentity (a trusted backend), not both; and a key holding a person
// scope must say one of them, so no key becomes trusted by omission. The
// CLI and the API ask the same question. Errors: ErrWhomUnsaid.
func CheckWhom(scopes []string, allowed map[string]string, anyIdentity bool) error {
	switch {
	case anyIdentity && allowed != nil:
		return fmt.Errorf("%w: give identities or anyIdentity, not both", ErrWhomUnsaid)
	case allowed == nil && !anyIdentity && slices.ContainsFunc(scopes, func(s string) bool { return slices.Contains(PersonScopes, s) }):
		return fmt.Errorf("%w: the key may act for persons (%s); say whom: identities (FIELD=VALUE, one person or a pattern) or anyIdentity (a trusted backend)",
			ErrWhomUnsaid, strings.Join(PersonScopes, ", "))
	}
	return nil
}

// DevKey is the key `stackbone dev` creates; `serve` never does.
const DevKey = "local-dev"

// Key is an API key without its secret.
type Key struct {
	ID     uuid.UUID `json:"id"`
	Name   string    `json:"name"`
	Scopes []string  `json:"scopes"`
	// Identities restricts the persons the key may act for: identity field
	// to fixed value or pattern (identity.Policy). Nil: the key is trusted
	// to name any identity.
	Identities map[string]string `json:"identities,omitempty"`
	CreatedAt  time.Time         `json:"createdAt"`
	RevokedAt  *time.Time        `json:"revokedAt"`
}

// MarshalJSON shows the key with anyIdentity: whether it is trusted to
// name any person (no identities), so every view of a key answers whom it
// acts for.
func (k Key) MarshalJSON() ([]byte, error) {
	type plain Key
	return json.Marshal(struct {
		plain
		AnyIdentity bool `json:"anyIdentity"`
	}{plain(k), k.Identities == nil})
}

// Has reports whether the key holds scope.
func (k Key) Has(scope string) bool { return slices.Contains(k.Scopes, scope) }

// Policy is the key's identity policy.
func (k Key) Policy() identity.Policy { return identity.Policy{Allowed: k.Identities} }

// Restricted reports a key that may act only for the identities it allows.
func (k Key) Restricted() bool { return k.Identities != nil }

// Store reads and writes keys. Authenticated keys are cached in memory for
// at most cacheTTL; any change to keys clears the cache of this box at once
// and of the others through notify (topic "auth"), so a revoked key stops
// working everywhere within a notification's delay.
type Store struct {
	pool *pgxpool.Pool

	mu    sync.Mutex
	cache map[string]cachedKey
}

type cachedKey struct {
	key Key
	at  time.Time
}

// cacheTTL bounds how long a cached key is trusted without a notification.
const cacheTTL = 30 * time.Second

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, cache: map[string]cachedKey{}} }

// Invalidate drops every cached key (the notify subscriber of "auth").
func (s *Store) Invalidate(string) {
	s.mu.Lock()
	clear(s.cache)
	s.mu.Unlock()
}

// changed clears this box's cache and tells the others.
func (s *Store) changed(ctx context.Context) {
	s.Invalidate("")
	_ = notify.Send(ctx, s.pool, "auth", "")
}

// Hash is how a secret is stored.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Create makes a key trusted to name any identity, with a fresh random
// secret, returned once. It returns ErrInvalidScope or ErrExists.
func (s *Store) Create(ctx context.Context, name string, scopes []string) (string, Key, error) {
	return s.CreateRestricted(ctx, name, scopes, nil)
}

// CreateRestricted makes a key that may act only for the identities of
// allowed (identity field to fixed value or pattern; nil: any identity).
// It returns ErrInvalidScope or ErrExists.
func (s *Store) CreateRestricted(ctx context.Context, name string, scopes []string, allowed map[string]string) (string, Key, error) {
	if err := checkScopes(scopes); err != nil {
		return "", Key{}, err
	}
	if !validName(name) {
		return "", Key{}, ErrInvalidName
	}
	if allowed != nil && len(allowed) == 0 {
		return "", Key{}, fmt.Errorf("%w: a restricted key names at least one identity field", ErrWhomUnsaid)
	}
	for f, v := range allowed {
		if f == "" || v == "" || v == "*" || !utf8.ValidString(f+v) || strings.ContainsRune(f+v, 0) {
			return "", Key{}, fmt.Errorf("%w: an identity restriction needs a field and a value or pattern other than *", ErrWhomUnsaid)
		}
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Key{}, fmt.Errorf("auth: random: %w", err)
	}
	secret := "sbk_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	k := Key{ID: uuid.New(), Name: name, Scopes: scopes, Identities: allowed}
	err := s.pool.QueryRow(ctx, `INSERT INTO stackbone_platform.api_keys (id, name, key_hash, scopes, identities) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (name) DO NOTHING RETURNING created_at`, k.ID, name, Hash(secret), scopes, allowed).Scan(&k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", Key{}, fmt.Errorf("%w: %s", ErrExists, name)
	}
	if err != nil {
		return "", Key{}, fmt.Errorf("auth: create: %w", err)
	}
	s.changed(ctx)
	return secret, k, nil
}

// Ensure makes the live key name hold exactly secret and scopes, creating
// it if it does not exist. `stackbone dev` uses it for the well-known dev
// key. A revoked key stays revoked: Ensure returns ErrRevoked.
func (s *Store) Ensure(ctx context.Context, name, secret string, scopes []string) error {
	if err := checkScopes(scopes); err != nil {
		return err
	}
	var revoked bool
	err := s.pool.QueryRow(ctx, `
		INSERT INTO stackbone_platform.api_keys AS k (id, name, key_hash, scopes) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name) DO UPDATE SET key_hash = $3, scopes = $4, identities = NULL WHERE k.revoked_at IS NULL
		RETURNING false`,
		uuid.New(), name, Hash(secret), scopes).Scan(&revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s was revoked; revocation sticks", ErrRevoked, name)
	}
	if err != nil {
		return fmt.Errorf("auth: ensure %s: %w", name, err)
	}
	s.changed(ctx)
	return nil
}

// Live reports whether a live (unrevoked) key has that name.
func (s *Store) Live(ctx context.Context, name string) (bool, error) {
	var live bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.api_keys WHERE name = $1 AND revoked_at IS NULL)`, name).Scan(&live)
	if err != nil {
		return false, fmt.Errorf("auth: lookup %s: %w", name, err)
	}
	return live, nil
}

// Authenticate returns the live key whose secret this is, or ErrUnauthenticated.
func (s *Store) Authenticate(ctx context.Context, secret string) (Key, error) {
	if secret == "" || len(secret) > 200 {
		return Key{}, ErrUnauthenticated
	}
	h := Hash(secret)
	s.mu.Lock()
	c, ok := s.cache[string(h)]
	s.mu.Unlock()
	if ok && time.Since(c.at) < cacheTTL {
		return c.key, nil
	}
	var k Key
	err := s.pool.QueryRow(ctx, `SELECT id, name, scopes, identities, created_at FROM stackbone_platform.api_keys
		WHERE key_hash = $1 AND revoked_at IS NULL`, h).Scan(&k.ID, &k.Name, &k.Scopes, &k.Identities, &k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Key{}, ErrUnauthenticated
	}
	if err != nil {
		return Key{}, fmt.Errorf("auth: lookup: %w", err)
	}
	s.mu.Lock()
	if len(s.cache) > 10000 {
		clear(s.cache) // bound memory against many distinct keys
	}
	s.cache[string(h)] = cachedKey{key: k, at: time.Now()}
	s.mu.Unlock()
	return k, nil
}

// Revoke ends a key; it returns ErrNotFound when no live key has that name.
func (s *Store) Revoke(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE stackbone_platform.api_keys SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL`, name)
	if err != nil {
		return fmt.Errorf("auth: revoke: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	s.changed(ctx)
	return nil
}

// List returns every key, newest first.
func (s *Store) List(ctx context.Context) ([]Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, scopes, identities, created_at, revoked_at FROM stackbone_platform.api_keys ORDER BY created_at DESC`)
	if err != nil {
		return nil, fmt.Errorf("auth: list: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) {
		var k Key
		err := r.Scan(&k.ID, &k.Name, &k.Scopes, &k.Identities, &k.CreatedAt, &k.RevokedAt)
		return k, err
	})
}

func checkScopes(scopes []string) error {
	if len(scopes) == 0 {
		return fmt.Errorf("%w: a key needs at least one scope (%s)", ErrInvalidScope, strings.Join(AllScopes, ", "))
	}
	for _, sc := range scopes {
		if !slices.Contains(AllScopes, sc) {
			return fmt.Errorf("%w %q; known: %s", ErrInvalidScope, sc, strings.Join(AllScopes, ", "))
		}
	}
	return nil
}

// validName: 1 to 100 characters, none of them a control character (names
// are shown in logs, the CLI and Studio).
func validName(name string) bool {
	if name == "" || utf8.RuneCountInString(name) > 100 || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
