package stores

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

const versionCols = `id, store_id, memory_id, operation, path, summary, content_sha256, byte_size, author_kind, author_id,
	rationale, evidence_session_ids, reflection_id, restored_from, created_at, redacted_at, redacted_by, seq`

func scanVersion(row pgx.Row, content **string) (Version, int64, error) {
	var v Version
	var seq int64
	dest := []any{&v.ID, &v.StoreID, &v.MemoryID, &v.Operation, &v.Path, &v.Summary, &v.ContentSHA256, &v.ByteSize,
		&v.AuthorKind, &v.AuthorID, &v.Rationale, &v.EvidenceSessionIDs, &v.ReflectionID, &v.RestoredFrom, &v.CreatedAt,
		&v.RedactedAt, &v.RedactedBy, &seq}
	if content != nil {
		dest = append(dest, content)
	}
	err := row.Scan(dest...)
	v.CreatedAt = v.CreatedAt.UTC()
	if v.RedactedAt != nil {
		t := v.RedactedAt.UTC()
		v.RedactedAt = &t
	}
	v.Redacted = v.RedactedAt != nil
	if v.EvidenceSessionIDs == nil {
		v.EvidenceSessionIDs = []string{}
	}
	return v, seq, err
}

// VersionFilter narrows ListVersions.
type VersionFilter struct {
	// MemoryID lists one memory's history (deleted memories included).
	MemoryID *uuid.UUID
	Limit    int
	Cursor   string
}

// ListVersions returns a store's history newest first, without content.
// Errors: ErrInvalidRequest, ErrNotFound (the store, or MemoryID in it),
// ErrUnavailable.
func (s *Service) ListVersions(ctx context.Context, storeID uuid.UUID, f VersionFilter) (VersionPage, error) {
	limit, err := Page(f.Limit)
	if err != nil {
		return VersionPage{}, err
	}
	c, has, err := decodeCursor(f.Cursor, "versions")
	if err != nil {
		return VersionPage{}, err
	}
	var before *int64
	if has {
		before = &c.S
	}
	if _, err := s.GetStore(ctx, storeID); err != nil {
		return VersionPage{}, err
	}
	if f.MemoryID != nil {
		var ok bool
		if err := s.cfg.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.memories WHERE id = $1 AND store_id = $2)`,
			*f.MemoryID, storeID).Scan(&ok); err != nil {
			return VersionPage{}, dbErr("list versions", err)
		}
		if !ok {
			return VersionPage{}, notFound("no memory " + f.MemoryID.String() + " in this store")
		}
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT `+versionCols+` FROM stackbone_platform.memory_versions
		WHERE store_id = $1 AND ($2::uuid IS NULL OR memory_id = $2) AND ($3::bigint IS NULL OR seq < $3)
		ORDER BY seq DESC LIMIT $4`, storeID, f.MemoryID, before, limit+1)
	if err != nil {
		return VersionPage{}, dbErr("list versions", err)
	}
	defer rows.Close()
	page := VersionPage{Versions: []Version{}}
	var lastSeq int64
	for rows.Next() {
		v, seq, err := scanVersion(rows, nil)
		if err != nil {
			return VersionPage{}, dbErr("list versions", err)
		}
		if len(page.Versions) == limit {
			page.NextCursor = cursor{K: "versions", S: lastSeq}.encode()
			break
		}
		page.Versions, lastSeq = append(page.Versions, v), seq
	}
	if err := rows.Err(); err != nil {
		return VersionPage{}, dbErr("list versions", err)
	}
	return page, nil
}

// GetVersion returns one version with its content, unless it was redacted
// or records a deletion. Errors: ErrNotFound, ErrUnavailable.
func (s *Service) GetVersion(ctx context.Context, storeID, versionID uuid.UUID) (VersionDetail, error) {
	var d VersionDetail
	v, _, err := scanVersion(s.cfg.Pool.QueryRow(ctx, `SELECT `+versionCols+`, content FROM stackbone_platform.memory_versions
		WHERE id = $1 AND store_id = $2`, versionID, storeID), &d.Content)
	if errors.Is(err, pgx.ErrNoRows) {
		return VersionDetail{}, s.missing(ctx, storeID, "no memory version "+versionID.String()+" in this store")
	}
	if err != nil {
		return VersionDetail{}, dbErr("get version", err)
	}
	d.Version = v
	return d, nil
}

// RestoreVersion writes a version's path, summary and content back as a
// new version (operation "restored") and returns the memory; a deleted or
// retired memory is recreated under its id. In an agent's learned memory
// a restore is an operator's act, recorded with author_kind "admin".
// Errors: ErrInvalidRequest (a redacted or deletion version, an archived
// store), ErrPathExists (another memory took the path), ErrStoreFull,
// ErrNotFound, ErrUnavailable.
func (s *Service) RestoreVersion(ctx context.Context, storeID, versionID uuid.UUID, author Author) (Memory, error) {
	var out Memory
	err := s.inTx(ctx, "restore version", func(tx pgx.Tx) error {
		st, err := lockStore(ctx, tx, storeID)
		if err != nil {
			return err
		}
		if st.Origin == OriginReflection && author.Kind == AuthorAPI {
			author.Kind = AuthorAdmin
		}
		if err := checkWritable(st, author, true); err != nil {
			return err
		}
		var content *string
		v, _, err := scanVersion(tx.QueryRow(ctx, `SELECT `+versionCols+`, content FROM stackbone_platform.memory_versions
			WHERE id = $1 AND store_id = $2`, versionID, storeID), &content)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("no memory version " + versionID.String() + " in this store")
		}
		if err != nil {
			return err
		}
		if v.Redacted {
			return invalid("memory_version_id", "the version was redacted and cannot be restored; restore a different version")
		}
		if content == nil {
			return invalid("memory_version_id", "the version records a %s and has no content; restore an earlier version", v.Operation)
		}
		cur, err := scanMemory(tx.QueryRow(ctx, `SELECT `+memoryCols+` FROM stackbone_platform.memories WHERE id = $1 FOR UPDATE`, v.MemoryID))
		if err != nil {
			return err
		}
		next := cur
		next.Path, next.Summary, next.Content = v.Path, v.Summary, *content
		row := versionRow{op: OpRestored, author: author, restoredFrom: &v.ID}
		if cur.Status == StatusActive {
			if next.Path == cur.Path && next.Summary == cur.Summary && next.Content == cur.Content {
				out = cur
				return nil
			}
			out, err = writeLocked(ctx, tx, cur, next, row)
			return err
		}
		out, err = reviveLocked(ctx, tx, st, cur, next, row)
		return err
	})
	if err == nil {
		s.log.Info("memory version restored", "store", storeID, "version", versionID, "memory", out.ID, "author", author.Kind)
	}
	return out, err
}

// reviveLocked makes a deleted or retired memory live again with next's
// path, summary and content.
func reviveLocked(ctx context.Context, tx pgx.Tx, st Store, cur, next Memory, v versionRow) (Memory, error) {
	if st.MemoryCount >= MaxMemories {
		return Memory{}, errFull()
	}
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.memories
		WHERE store_id = $1 AND path = $2 AND status = 'active')`, st.ID, next.Path).Scan(&taken); err != nil {
		return Memory{}, err
	}
	if taken {
		return Memory{}, errPathExists(next.Path)
	}
	vid := uuid.New()
	v.id, v.storeID, v.memoryID, v.path, v.summary, v.content = vid, st.ID, cur.ID, next.Path, next.Summary, &next.Content
	if err := insertVersion(ctx, tx, v); err != nil {
		return Memory{}, err
	}
	m, err := scanMemory(tx.QueryRow(ctx, `UPDATE stackbone_platform.memories SET status = 'active', path = $2, summary = $3,
		  content = $4, content_sha256 = $5, byte_size = $6, head_version_id = $7, updated_at = now()
		WHERE id = $1 RETURNING `+memoryCols, cur.ID, next.Path, next.Summary, next.Content, SHA256(next.Content), len(next.Content), vid))
	if err != nil {
		return Memory{}, err
	}
	if err := adjustFolders(ctx, tx, st.ID, next.Path, 1); err != nil {
		return Memory{}, err
	}
	return m, bumpStore(ctx, tx, st.ID, 1, int64(m.ByteSize))
}

// RedactVersion removes a version's content (and its hash) for good; who
// wrote it, when, its path and summary are kept. The current version of a
// live memory cannot be redacted: write or restore a clean version first.
// Redacting a redacted version does nothing. Redaction works in archived
// stores and in learned memory too, so a leaked secret can always be
// scrubbed from history. Errors: ErrVersionCurrent, ErrNotFound,
// ErrUnavailable.
func (s *Service) RedactVersion(ctx context.Context, storeID, versionID uuid.UUID, by string) error {
	err := s.inTx(ctx, "redact version", func(tx pgx.Tx) error {
		if _, err := lockStore(ctx, tx, storeID); err != nil {
			return err
		}
		var memStatus string
		var head uuid.UUID
		var redacted bool
		err := tx.QueryRow(ctx, `SELECT m.status, m.head_version_id, v.redacted_at IS NOT NULL
			FROM stackbone_platform.memory_versions v JOIN stackbone_platform.memories m ON m.id = v.memory_id
			WHERE v.id = $1 AND v.store_id = $2`, versionID, storeID).Scan(&memStatus, &head, &redacted)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("no memory version " + versionID.String() + " in this store")
		}
		if err != nil {
			return err
		}
		if redacted {
			return nil
		}
		if memStatus == StatusActive && head == versionID {
			return errCurrent()
		}
		_, err = tx.Exec(ctx, `UPDATE stackbone_platform.memory_versions SET content = NULL, content_sha256 = NULL,
			redacted_at = now(), redacted_by = $2 WHERE id = $1`, versionID, by)
		return err
	})
	if err == nil {
		s.log.Info("memory version redacted", "store", storeID, "version", versionID)
	}
	return err
}

type currentError struct{}

func (currentError) Error() string {
	return ErrVersionCurrent.Error() + ": write or restore a replacement first, then redact this version"
}
func (currentError) Unwrap() error { return ErrVersionCurrent }

func errCurrent() error { return currentError{} }

// Prune applies retention: versions older than Retention are deleted,
// except the KeepRecentVersions newest of every live memory; a deleted or
// retired memory whose versions are all gone is forgotten. It returns the
// number of versions deleted. The prune job calls it.
func (s *Service) Prune(ctx context.Context) (int64, error) {
	cutoff := s.cfg.Now().Add(-s.cfg.Retention)
	var total int64
	for {
		tag, err := s.cfg.Pool.Exec(ctx, `
			DELETE FROM stackbone_platform.memory_versions d USING (
				SELECT x.id FROM (
					SELECT v.id, v.created_at, m.status,
					       row_number() OVER (PARTITION BY v.memory_id ORDER BY v.seq DESC) AS rn
					FROM stackbone_platform.memory_versions v
					JOIN stackbone_platform.memories m ON m.id = v.memory_id
					WHERE v.memory_id IN (SELECT memory_id FROM stackbone_platform.memory_versions WHERE created_at < $1)
				) x
				WHERE x.created_at < $1 AND NOT (x.status = 'active' AND x.rn <= $2)
				LIMIT 5000
			) old WHERE d.id = old.id`, cutoff, s.cfg.KeepRecentVersions)
		if err != nil {
			return total, dbErr("prune versions", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
	if _, err := s.cfg.Pool.Exec(ctx, `DELETE FROM stackbone_platform.memories m WHERE m.status <> 'active'
		AND NOT EXISTS (SELECT 1 FROM stackbone_platform.memory_versions v WHERE v.memory_id = m.id)`); err != nil {
		return total, dbErr("prune memories", err)
	}
	if total > 0 {
		s.log.Info("versions pruned", "count", total, "cutoff", cutoff.Format(time.RFC3339))
	}
	return total, nil
}
