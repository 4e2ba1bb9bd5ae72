package stores

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CreateStore is the body of createMemoryStore.
type CreateStore struct {
	Name        string
	Description string
	// AgentID scopes the store to one declared agent; nil makes a
	// workspace store.
	AgentID *string
}

// CreateStore makes a curated store. Its slug comes from the name and
// stays when the store is renamed. Errors: ErrInvalidRequest, ErrNotFound
// (an unknown agent_id), ErrUnavailable.
func (s *Service) CreateStore(ctx context.Context, in CreateStore) (Store, error) {
	in.Name = strings.TrimSpace(in.Name)
	if err := checkName(in.Name); err != nil {
		return Store{}, err
	}
	if err := checkDescription(in.Description); err != nil {
		return Store{}, err
	}
	if in.AgentID != nil && !s.agentExists(*in.AgentID) {
		return Store{}, notFound("no agent " + clip(*in.AgentID, 64))
	}
	base := Slugify(in.Name)
	for i := 1; i <= 1000; i++ {
		slug := base
		if i > 1 {
			slug = fmt.Sprintf("%s-%d", base, i)
		}
		st, err := scanStore(s.cfg.Pool.QueryRow(ctx, `INSERT INTO stackbone_platform.memory_stores
			  (id, name, slug, description, agent_id, origin) VALUES ($1, $2, $3, $4, $5, 'curated')
			ON CONFLICT (slug) DO NOTHING RETURNING `+storeCols, uuid.New(), in.Name, slug, in.Description, in.AgentID))
		if err == nil {
			s.log.Info("store created", "store", st.ID, "slug", st.Slug)
			return st, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return Store{}, dbErr("create store", err)
		}
	}
	return Store{}, invalid("name", "too many stores share this name's slug %q", base)
}

// GetStore returns a store by id. Errors: ErrNotFound, ErrUnavailable.
func (s *Service) GetStore(ctx context.Context, id uuid.UUID) (Store, error) {
	st, err := scanStore(s.cfg.Pool.QueryRow(ctx, `SELECT `+storeCols+` FROM stackbone_platform.memory_stores WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Store{}, notFound("no memory store " + id.String())
	}
	if err != nil {
		return Store{}, dbErr("get store", err)
	}
	return st, nil
}

// ResolveStore finds a store by id or by slug. Errors: ErrNotFound,
// ErrUnavailable.
func (s *Service) ResolveStore(ctx context.Context, ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil
	}
	var id uuid.UUID
	err := s.cfg.Pool.QueryRow(ctx, `SELECT id FROM stackbone_platform.memory_stores WHERE slug = $1`, ref).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, notFound("no memory store " + clip(ref, 100))
	}
	if err != nil {
		return uuid.Nil, dbErr("resolve store", err)
	}
	return id, nil
}

// StoreFilter narrows ListStores. Zero values do not filter.
type StoreFilter struct {
	AgentID string
	// Origin is curated or reflection.
	Origin string
	// Status is active or archived.
	Status string
	// IncludeArchived lists archived stores too (they are left out
	// otherwise, unless Status asks for them).
	IncludeArchived bool
	Limit           int
	Cursor          string
}

// ListStores returns stores oldest first. Errors: ErrInvalidRequest,
// ErrUnavailable.
func (s *Service) ListStores(ctx context.Context, f StoreFilter) (StorePage, error) {
	limit, err := Page(f.Limit)
	if err != nil {
		return StorePage{}, err
	}
	if f.Origin != "" && f.Origin != OriginCurated && f.Origin != OriginReflection {
		return StorePage{}, invalid("origin", "must be curated or reflection")
	}
	if f.Status != "" && f.Status != StatusActive && f.Status != StatusArchived {
		return StorePage{}, invalid("status", "must be active or archived")
	}
	c, has, err := decodeCursor(f.Cursor, "stores")
	if err != nil {
		return StorePage{}, err
	}
	var after *time.Time
	var afterID *uuid.UUID
	if has {
		t, err1 := time.Parse(time.RFC3339Nano, c.T)
		id, err2 := uuid.Parse(c.I)
		if err1 != nil || err2 != nil {
			return StorePage{}, invalid("cursor", "is not a next_cursor of this list")
		}
		after, afterID = &t, &id
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+storeCols+` FROM stackbone_platform.memory_stores
		WHERE ($1 = '' OR agent_id = $1) AND ($2 = '' OR origin = $2)
		  AND (CASE WHEN $3 <> '' THEN status = $3 WHEN $4 THEN true ELSE status = 'active' END)
		  AND ($5::timestamptz IS NULL OR (created_at, id) > ($5, $6))
		ORDER BY created_at, id LIMIT $7`, f.AgentID, f.Origin, f.Status, f.IncludeArchived, after, afterID, limit+1)
	if err != nil {
		return StorePage{}, dbErr("list stores", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Store, error) { return scanStore(r) })
	if err != nil {
		return StorePage{}, dbErr("list stores", err)
	}
	page := StorePage{Stores: list}
	if len(list) > limit {
		page.Stores = list[:limit]
		last := page.Stores[limit-1]
		page.NextCursor = cursor{K: "stores", T: last.CreatedAt.Format(time.RFC3339Nano), I: last.ID.String()}.encode()
	}
	if page.Stores == nil {
		page.Stores = []Store{}
	}
	return page, nil
}

// UpdateStore is the body of updateMemoryStore; nil fields stay as they are.
type UpdateStore struct {
	Name        *string
	Description *string
}

// UpdateStore renames or redescribes a curated store; the slug stays.
// Errors: ErrInvalidRequest (a learned store), ErrNotFound, ErrUnavailable.
func (s *Service) UpdateStore(ctx context.Context, id uuid.UUID, in UpdateStore) (Store, error) {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		in.Name = &n
		if err := checkName(n); err != nil {
			return Store{}, err
		}
	}
	if in.Description != nil {
		if err := checkDescription(*in.Description); err != nil {
			return Store{}, err
		}
	}
	var out Store
	err := s.inTx(ctx, "update store", func(tx pgx.Tx) error {
		st, err := lockStore(ctx, tx, id)
		if err != nil {
			return err
		}
		if st.Origin == OriginReflection {
			return invalid("memory_store_id", "the store is an agent's learned memory, which is named by the box")
		}
		out, err = scanStore(tx.QueryRow(ctx, `UPDATE stackbone_platform.memory_stores
			SET name = coalesce($2, name), description = coalesce($3, description), updated_at = now()
			WHERE id = $1 RETURNING `+storeCols, id, in.Name, in.Description))
		return err
	})
	return out, err
}

// ArchiveStore freezes a curated store: read-only, never attached to new
// sessions, no unarchive. Archiving an archived store does nothing. Errors:
// ErrInvalidRequest (a learned store), ErrNotFound, ErrUnavailable.
func (s *Service) ArchiveStore(ctx context.Context, id uuid.UUID) error {
	return s.inTx(ctx, "archive store", func(tx pgx.Tx) error {
		st, err := lockStore(ctx, tx, id)
		if err != nil {
			return err
		}
		if st.Origin == OriginReflection {
			return invalid("memory_store_id", "the store is an agent's learned memory, which cannot be archived")
		}
		_, err = tx.Exec(ctx, `UPDATE stackbone_platform.memory_stores SET status = 'archived', archived_at = now(), updated_at = now()
			WHERE id = $1 AND status = 'active'`, id)
		return err
	})
}

// DeleteStore deletes a curated store with its memories and history.
// Errors: ErrInvalidRequest (a learned store), ErrNotFound, ErrUnavailable.
func (s *Service) DeleteStore(ctx context.Context, id uuid.UUID) error {
	err := s.inTx(ctx, "delete store", func(tx pgx.Tx) error {
		st, err := lockStore(ctx, tx, id)
		if err != nil {
			return err
		}
		if st.Origin == OriginReflection {
			return invalid("memory_store_id", "the store is an agent's learned memory, which cannot be deleted")
		}
		_, err = tx.Exec(ctx, `DELETE FROM stackbone_platform.memory_stores WHERE id = $1`, id)
		return err
	})
	if err == nil {
		s.log.Info("store deleted", "store", id)
	}
	return err
}

// lockStore reads a store and locks its row until the transaction ends:
// every write of a store's memories takes this lock, so writes to one
// store are serialized and the counts and revision stay exact.
func lockStore(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Store, error) {
	st, err := scanStore(tx.QueryRow(ctx, `SELECT `+storeCols+` FROM stackbone_platform.memory_stores WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Store{}, notFound("no memory store " + id.String())
	}
	return st, err
}

// checkWritable says whether author may change the memories of st.
// Learned memory is written by learning runs only; an admin may restore
// in it. Archived stores are read-only.
func checkWritable(st Store, author Author, restore bool) error {
	if st.Origin == OriginReflection {
		if author.Kind == AuthorReflection || (restore && author.Kind == AuthorAdmin) {
			return nil
		}
		return invalid("memory_store_id", "the store is an agent's learned memory, which only learning runs write; write to an active curated store")
	}
	if author.Kind == AuthorReflection {
		return invalid("memory_store_id", "learning runs write only the agent's learned memory")
	}
	if st.Status != StatusActive {
		return invalid("memory_store_id", "the store is archived and read-only; write to an active curated store")
	}
	return nil
}

// bumpStore adds to a locked store's counts and raises its revision.
func bumpStore(ctx context.Context, tx pgx.Tx, id uuid.UUID, dCount int, dBytes int64) error {
	_, err := tx.Exec(ctx, `UPDATE stackbone_platform.memory_stores SET memory_count = memory_count + $2,
		total_bytes = total_bytes + $3, revision = revision + 1, updated_at = now() WHERE id = $1`, id, dCount, dBytes)
	return err
}
