package stores

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CreateMemory is the body of createMemory; every field is required.
type CreateMemory struct {
	Path    string
	Summary string
	Content string
}

const memoryCols = `store_id, id, path, summary, content, content_sha256, byte_size, status, head_version_id, created_at, updated_at`

func scanMemory(row pgx.Row) (Memory, error) {
	var m Memory
	err := row.Scan(&m.StoreID, &m.ID, &m.Path, &m.Summary, &m.Content, &m.ContentSHA256, &m.ByteSize, &m.Status,
		&m.HeadVersionID, &m.CreatedAt, &m.UpdatedAt)
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, err
}

// versionRow is what insertVersion writes.
type versionRow struct {
	id                uuid.UUID
	storeID, memoryID uuid.UUID
	op                string
	path, summary     string
	content           *string
	author            Author
	rationale         *string
	evidence          []string
	reflectionID      *uuid.UUID
	restoredFrom      *uuid.UUID
}

func insertVersion(ctx context.Context, tx pgx.Tx, v versionRow) error {
	var sha *string
	var size *int
	if v.content != nil {
		h, n := SHA256(*v.content), len(*v.content)
		sha, size = &h, &n
	}
	if v.evidence == nil {
		v.evidence = []string{}
	}
	_, err := tx.Exec(ctx, `INSERT INTO stackbone_platform.memory_versions
		  (id, store_id, memory_id, operation, path, summary, content, content_sha256, byte_size,
		   author_kind, author_id, rationale, evidence_session_ids, reflection_id, restored_from)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		v.id, v.storeID, v.memoryID, v.op, v.path, v.summary, v.content, sha, size,
		v.author.Kind, v.author.ID, v.rationale, v.evidence, v.reflectionID, v.restoredFrom)
	return err
}

// CreateMemory adds a memory at a free path; it never overwrites. Errors:
// ErrInvalidRequest (fields, a learned or archived store), ErrPathExists,
// ErrStoreFull, ErrNotFound, ErrUnavailable.
func (s *Service) CreateMemory(ctx context.Context, storeID uuid.UUID, in CreateMemory, author Author) (Memory, error) {
	if err := ValidatePath("path", in.Path); err != nil {
		return Memory{}, err
	}
	if err := checkSummary(in.Summary); err != nil {
		return Memory{}, err
	}
	if err := checkContent(in.Content); err != nil {
		return Memory{}, err
	}
	var m Memory
	err := s.inTx(ctx, "create memory", func(tx pgx.Tx) error {
		st, err := lockStore(ctx, tx, storeID)
		if err != nil {
			return err
		}
		if err := checkWritable(st, author, false); err != nil {
			return err
		}
		m, err = createLocked(ctx, tx, st, in, versionRow{op: OpCreated, author: author})
		return err
	})
	if err == nil {
		s.log.Info("memory created", "store", storeID, "memory", m.ID, "bytes", m.ByteSize, "author", author.Kind)
	}
	return m, err
}

// createLocked inserts a memory and its first version into a locked store
// and counts it. v supplies the operation, author and learning fields.
func createLocked(ctx context.Context, tx pgx.Tx, st Store, in CreateMemory, v versionRow) (Memory, error) {
	if st.MemoryCount >= MaxMemories {
		return Memory{}, errFull()
	}
	id, vid := uuid.New(), uuid.New()
	m, err := scanMemory(tx.QueryRow(ctx, `INSERT INTO stackbone_platform.memories
		  (id, store_id, path, summary, content, content_sha256, byte_size, status, head_version_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8)
		ON CONFLICT (store_id, path) WHERE status = 'active' DO NOTHING
		RETURNING `+memoryCols, id, st.ID, in.Path, in.Summary, in.Content, SHA256(in.Content), len(in.Content), vid))
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, errPathExists(in.Path)
	}
	if err != nil {
		return Memory{}, err
	}
	v.id, v.storeID, v.memoryID, v.path, v.summary, v.content = vid, st.ID, id, in.Path, in.Summary, &in.Content
	if err := insertVersion(ctx, tx, v); err != nil {
		return Memory{}, err
	}
	if err := adjustFolders(ctx, tx, st.ID, in.Path, 1); err != nil {
		return Memory{}, err
	}
	return m, bumpStore(ctx, tx, st.ID, 1, int64(m.ByteSize))
}

// folders are the folders a path is beneath, with each one's parent:
// "/a/b/c.md" is beneath "/a/" (in "/") and "/a/b/" (in "/a/").
func folders(path string) (paths, parents []string) {
	parent := "/"
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			f := path[:i+1]
			paths, parents = append(paths, f), append(parents, parent)
			parent = f
		}
	}
	return paths, parents
}

// adjustFolders counts a live memory at path in (delta 1) or out (-1) of
// the folders above it, in a locked store.
func adjustFolders(ctx context.Context, tx pgx.Tx, storeID uuid.UUID, path string, delta int) error {
	paths, parents := folders(path)
	if len(paths) == 0 {
		return nil
	}
	if delta > 0 {
		_, err := tx.Exec(ctx, `INSERT INTO stackbone_platform.memory_folders (store_id, path, parent, count)
			SELECT $1, f, p, 1 FROM unnest($2::text[], $3::text[]) AS t (f, p)
			ON CONFLICT (store_id, path) DO UPDATE SET count = memory_folders.count + 1`, storeID, paths, parents)
		return err
	}
	_, err := tx.Exec(ctx, `WITH emptied AS (
			DELETE FROM stackbone_platform.memory_folders WHERE store_id = $1 AND path = ANY($2) AND count = 1)
		UPDATE stackbone_platform.memory_folders SET count = count - 1 WHERE store_id = $1 AND path = ANY($2) AND count > 1`,
		storeID, paths)
	return err
}

func errPathExists(path string) error {
	return &pathExistsError{path: path}
}

type pathExistsError struct{ path string }

func (e *pathExistsError) Error() string {
	return ErrPathExists.Error() + ": " + clip(e.path, 200) + " (create never overwrites; update the memory instead)"
}
func (e *pathExistsError) Unwrap() error { return ErrPathExists }

func errFull() error {
	return &limitError{}
}

type limitError struct{}

func (e *limitError) Error() string {
	return ErrStoreFull.Error() + ": a store holds at most 10000 memories; delete or merge some first"
}
func (e *limitError) Unwrap() error { return ErrStoreFull }

// GetMemory reads a live memory by id. Errors: ErrNotFound, ErrUnavailable.
func (s *Service) GetMemory(ctx context.Context, storeID, memoryID uuid.UUID) (Memory, error) {
	m, err := scanMemory(s.cfg.Pool.QueryRow(ctx, `SELECT `+memoryCols+` FROM stackbone_platform.memories
		WHERE id = $1 AND store_id = $2 AND status = 'active'`, memoryID, storeID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, s.missing(ctx, storeID, "no memory "+memoryID.String()+" in this store")
	}
	if err != nil {
		return Memory{}, dbErr("get memory", err)
	}
	return m, nil
}

// GetMemoryByPath reads the live memory at path. Errors: ErrInvalidRequest,
// ErrNotFound, ErrUnavailable.
func (s *Service) GetMemoryByPath(ctx context.Context, storeID uuid.UUID, path string) (Memory, error) {
	if err := ValidatePath("path", path); err != nil {
		return Memory{}, err
	}
	m, err := scanMemory(s.cfg.Pool.QueryRow(ctx, `SELECT `+memoryCols+` FROM stackbone_platform.memories
		WHERE store_id = $1 AND path = $2 AND status = 'active'`, storeID, path))
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, s.missing(ctx, storeID, "no memory at "+clip(path, 200))
	}
	if err != nil {
		return Memory{}, dbErr("get memory", err)
	}
	return m, nil
}

// missing tells a missing store from a missing memory.
func (s *Service) missing(ctx context.Context, storeID uuid.UUID, what string) error {
	if _, err := s.GetStore(ctx, storeID); err != nil {
		return err
	}
	return notFound(what)
}

// UpdateMemory is the body of updateMemory; nil fields stay as they are.
type UpdateMemory struct {
	// Path, when different, renames the memory.
	Path    *string
	Summary *string
	Content *string
	// ContentSHA256, when set, must be the memory's current content hash.
	ContentSHA256 *string
}

// UpdateMemory changes a memory by id. With ContentSHA256 it is a
// compare-and-swap: if the memory changed since that hash was read, it
// returns ErrHashMismatch and changes nothing. An update that changes
// nothing writes no version. Errors: ErrInvalidRequest, ErrHashMismatch,
// ErrPathExists, ErrNotFound, ErrUnavailable.
func (s *Service) UpdateMemory(ctx context.Context, storeID, memoryID uuid.UUID, in UpdateMemory, author Author) (Memory, error) {
	if in.Path != nil {
		if err := ValidatePath("path", *in.Path); err != nil {
			return Memory{}, err
		}
	}
	if in.Summary != nil {
		if err := checkSummary(*in.Summary); err != nil {
			return Memory{}, err
		}
	}
	if in.Content != nil {
		if err := checkContent(*in.Content); err != nil {
			return Memory{}, err
		}
	}
	if in.ContentSHA256 != nil {
		if err := checkSHA("content_sha256", *in.ContentSHA256); err != nil {
			return Memory{}, err
		}
	}
	var out Memory
	err := s.inTx(ctx, "update memory", func(tx pgx.Tx) error {
		st, err := lockStore(ctx, tx, storeID)
		if err != nil {
			return err
		}
		if err := checkWritable(st, author, false); err != nil {
			return err
		}
		cur, err := lockMemory(ctx, tx, storeID, memoryID)
		if err != nil {
			return err
		}
		if in.ContentSHA256 != nil && *in.ContentSHA256 != cur.ContentSHA256 {
			return errMismatch()
		}
		next := cur
		if in.Path != nil {
			next.Path = *in.Path
		}
		if in.Summary != nil {
			next.Summary = *in.Summary
		}
		if in.Content != nil {
			next.Content = *in.Content
		}
		op := OpUpdated
		if next.Summary == cur.Summary && next.Content == cur.Content {
			op = OpRenamed
			if next.Path == cur.Path {
				out = cur
				return nil
			}
		}
		out, err = writeLocked(ctx, tx, cur, next, versionRow{op: op, author: author})
		return err
	})
	if err == nil {
		s.log.Info("memory updated", "store", storeID, "memory", memoryID, "bytes", out.ByteSize, "author", author.Kind)
	}
	return out, err
}

func errMismatch() error {
	return fmt.Errorf("%w: the memory changed after you read it: read it again, reapply your change, and retry with the new content_sha256", ErrHashMismatch)
}

// lockMemory reads a live memory of a locked store.
func lockMemory(ctx context.Context, tx pgx.Tx, storeID, memoryID uuid.UUID) (Memory, error) {
	m, err := scanMemory(tx.QueryRow(ctx, `SELECT `+memoryCols+` FROM stackbone_platform.memories
		WHERE id = $1 AND store_id = $2 AND status = 'active'`, memoryID, storeID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, notFound("no memory " + memoryID.String() + " in this store")
	}
	return m, err
}

// writeLocked writes next over the live memory cur (same id) with a new
// version and adjusts the store's bytes.
func writeLocked(ctx context.Context, tx pgx.Tx, cur, next Memory, v versionRow) (Memory, error) {
	if next.Path != cur.Path {
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.memories
			WHERE store_id = $1 AND path = $2 AND status = 'active')`, cur.StoreID, next.Path).Scan(&taken); err != nil {
			return Memory{}, err
		}
		if taken {
			return Memory{}, errPathExists(next.Path)
		}
	}
	vid := uuid.New()
	v.id, v.storeID, v.memoryID, v.path, v.summary, v.content = vid, cur.StoreID, cur.ID, next.Path, next.Summary, &next.Content
	if err := insertVersion(ctx, tx, v); err != nil {
		return Memory{}, err
	}
	m, err := scanMemory(tx.QueryRow(ctx, `UPDATE stackbone_platform.memories SET path = $2, summary = $3, content = $4,
		  content_sha256 = $5, byte_size = $6, head_version_id = $7, updated_at = now()
		WHERE id = $1 RETURNING `+memoryCols, cur.ID, next.Path, next.Summary, next.Content, SHA256(next.Content), len(next.Content), vid))
	if err != nil {
		return Memory{}, err
	}
	if next.Path != cur.Path {
		if err := adjustFolders(ctx, tx, cur.StoreID, cur.Path, -1); err != nil {
			return Memory{}, err
		}
		if err := adjustFolders(ctx, tx, cur.StoreID, next.Path, 1); err != nil {
			return Memory{}, err
		}
	}
	return m, bumpStore(ctx, tx, cur.StoreID, 0, int64(m.ByteSize-cur.ByteSize))
}

// DeleteMemory removes a memory from every read path and frees its path;
// the deletion is recorded in history, where the earlier versions stay
// restorable. Errors: ErrInvalidRequest, ErrNotFound, ErrUnavailable.
func (s *Service) DeleteMemory(ctx context.Context, storeID, memoryID uuid.UUID, author Author) error {
	err := s.inTx(ctx, "delete memory", func(tx pgx.Tx) error {
		st, err := lockStore(ctx, tx, storeID)
		if err != nil {
			return err
		}
		if err := checkWritable(st, author, false); err != nil {
			return err
		}
		cur, err := lockMemory(ctx, tx, storeID, memoryID)
		if err != nil {
			return err
		}
		return removeLocked(ctx, tx, cur, StatusDeleted, versionRow{op: OpDeleted, author: author})
	})
	if err == nil {
		s.log.Info("memory deleted", "store", storeID, "memory", memoryID, "author", author.Kind)
	}
	return err
}

// removeLocked deletes or retires a live memory: a content-less version,
// and the row keeps no content, so redacting its old versions removes the
// content for good.
func removeLocked(ctx context.Context, tx pgx.Tx, cur Memory, status string, v versionRow) error {
	vid := uuid.New()
	v.id, v.storeID, v.memoryID, v.path, v.summary, v.content = vid, cur.StoreID, cur.ID, cur.Path, cur.Summary, nil
	if err := insertVersion(ctx, tx, v); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.memories SET status = $2, content = '', content_sha256 = '',
		byte_size = 0, head_version_id = $3, updated_at = now() WHERE id = $1`, cur.ID, status, vid); err != nil {
		return err
	}
	if err := adjustFolders(ctx, tx, cur.StoreID, cur.Path, -1); err != nil {
		return err
	}
	return bumpStore(ctx, tx, cur.StoreID, -1, -int64(cur.ByteSize))
}

// ListOptions pages a listing.
type ListOptions struct {
	// Limit is 1 to MaxPageSize; 0 means DefaultPageSize.
	Limit  int
	Cursor string
}

// ListMemories lists one level of a store under prefix, like a directory:
// the memories directly in it and a memory_prefix entry (with a count) for
// each folder beneath, in path order. prefix matches whole segments:
// "/releases/" never lists "/releases-old/". A page reads only its own
// entries (folder counts are kept by the writes), whatever the store's
// size. Errors: ErrInvalidRequest, ErrNotFound, ErrUnavailable.
func (s *Service) ListMemories(ctx context.Context, storeID uuid.UUID, prefix string, opt ListOptions) (Listing, error) {
	prefix, err := NormalizePrefix("path_prefix", prefix)
	if err != nil {
		return Listing{}, err
	}
	limit, err := Page(opt.Limit)
	if err != nil {
		return Listing{}, err
	}
	c, has, err := decodeCursor(opt.Cursor, "entries")
	if err != nil {
		return Listing{}, err
	}
	// Every entry of the level sorts after the prefix itself; a page goes
	// on after the cursor's entry.
	after := prefix
	if has {
		if !strings.HasPrefix(c.P, prefix) || len(c.P) <= len(prefix) {
			return Listing{}, invalid("cursor", "belongs to another path_prefix")
		}
		after = c.P
	}
	rows, err := s.cfg.Pool.Query(ctx, `
		(SELECT path, true, NULL::uuid, NULL::text, NULL::int, NULL::timestamptz, count
		 FROM stackbone_platform.memory_folders
		 WHERE store_id = $1 AND parent = $2 AND path > $3 ORDER BY path LIMIT $4)
		UNION ALL
		(SELECT path, false, id, summary, byte_size, updated_at, 1
		 FROM stackbone_platform.memories
		 WHERE store_id = $1 AND parent = $2 AND status = 'active' AND path > $3 ORDER BY path LIMIT $4)
		ORDER BY 1 LIMIT $4`, storeID, prefix, after, limit+1)
	if err != nil {
		return Listing{}, dbErr("list memories", err)
	}
	out := Listing{Entries: []Entry{}}
	for rows.Next() {
		var e Entry
		var isPrefix bool
		var n int
		if err := rows.Scan(&e.Path, &isPrefix, &e.MemoryID, &e.Summary, &e.ByteSize, &e.UpdatedAt, &n); err != nil {
			rows.Close()
			return Listing{}, dbErr("list memories", err)
		}
		if isPrefix {
			e.Type, e.Count = EntryPrefix, &n
		} else {
			e.Type = EntryMemory
			t := e.UpdatedAt.UTC()
			e.UpdatedAt = &t
		}
		out.Entries = append(out.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return Listing{}, dbErr("list memories", err)
	}
	if len(out.Entries) == 0 {
		if _, err := s.GetStore(ctx, storeID); err != nil {
			return Listing{}, err
		}
	}
	if len(out.Entries) > limit {
		out.Entries = out.Entries[:limit]
		out.NextCursor = cursor{K: "entries", P: out.Entries[limit-1].Path}.encode()
	}
	return out, nil
}

// SearchOptions narrows a search.
type SearchOptions struct {
	// PathPrefix limits the search to a folder.
	PathPrefix string
	Limit      int
	Cursor     string
}

// MaxSearchResults bounds one query's results: a search ranks the most
// recently updated matches, at most this many, by relevance. Add words or
// a path_prefix to narrow a query that matches more.
const MaxSearchResults = 100

// SearchMemories finds live memories by their content, summary and path
// (PostgreSQL full-text search with English stemming; all words must
// match), best first: the MaxSearchResults most recently updated matches
// ranked by relevance. When the words match nothing, it falls back to a
// case-insensitive substring of the path or summary. Errors:
// ErrInvalidRequest, ErrNotFound, ErrUnavailable.
func (s *Service) SearchMemories(ctx context.Context, storeID uuid.UUID, query string, opt SearchOptions) (SearchResult, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return SearchResult{}, invalid("query", "is required")
	}
	if utf8.RuneCountInString(query) > 500 || !utf8.ValidString(query) || strings.ContainsRune(query, 0) {
		return SearchResult{}, invalid("query", "must be valid text of at most 500 characters")
	}
	prefix, err := NormalizePrefix("path_prefix", opt.PathPrefix)
	if err != nil {
		return SearchResult{}, err
	}
	limit, err := Page(opt.Limit)
	if err != nil {
		return SearchResult{}, err
	}
	c, _, err := decodeCursor(opt.Cursor, "search")
	if err != nil {
		return SearchResult{}, err
	}
	if c.O < 0 || c.O >= MaxSearchResults {
		return SearchResult{}, invalid("cursor", "is not a next_cursor of this list")
	}
	hits, err := s.search(ctx, storeID, query, prefix, limit+1, c.O)
	if err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Memories: hits}
	if len(hits) > limit {
		out.Memories = hits[:limit]
		if c.O+limit < MaxSearchResults {
			out.NextCursor = cursor{K: "search", O: c.O + limit}.encode()
		}
	}
	if out.Memories == nil {
		out.Memories = []Hit{}
	}
	return out, nil
}

func (s *Service) search(ctx context.Context, storeID uuid.UUID, query, prefix string, n, offset int) ([]Hit, error) {
	var hits []Hit
	scan := func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			h := Hit{StoreID: storeID}
			if err := rows.Scan(&h.MemoryID, &h.Path, &h.Summary, &h.ByteSize, &h.UpdatedAt, &h.Rank); err != nil {
				return err
			}
			h.UpdatedAt = h.UpdatedAt.UTC()
			hits = append(hits, h)
		}
		return rows.Err()
	}
	// The folder condition is only added when asked for, and each query is
	// planned for its own words (QueryExecModeExec): a rare word is found
	// through the text index, a common one by walking the newest memories.
	folder, args := "", []any{pgx.QueryExecModeExec, storeID, query, n, offset, MaxSearchResults}
	if prefix != "/" {
		folder, args = ` AND m.path >= $6 AND m.path < $7`, append(args, prefix, prefixEnd(prefix))
	}
	rows, err := s.cfg.Pool.Query(ctx, `
		SELECT id, path, summary, byte_size, updated_at, ts_rank_cd(search, websearch_to_tsquery('english', $2)) AS rank
		FROM (SELECT m.id, m.path, m.summary, m.byte_size, m.updated_at, m.search FROM stackbone_platform.memories m
		      WHERE m.search @@ websearch_to_tsquery('english', $2) AND m.status = 'active' AND m.store_id = $1`+folder+`
		      ORDER BY m.updated_at DESC LIMIT $5) c
		ORDER BY rank DESC, path LIMIT $3 OFFSET $4`, args...)
	if err != nil {
		return nil, dbErr("search memories", err)
	}
	if err := scan(rows); err != nil {
		return nil, dbErr("search memories", err)
	}
	if len(hits) == 0 && offset == 0 {
		// No word matched (or the query was only stop words): a substring of
		// the path or summary.
		pat := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(query) + "%"
		rows, err = s.cfg.Pool.Query(ctx, `
			SELECT m.id, m.path, m.summary, m.byte_size, m.updated_at, 0::real
			FROM stackbone_platform.memories m
			WHERE m.store_id = $1 AND m.status = 'active' AND m.path >= $3 AND m.path < $4
			  AND (m.path ILIKE $2 OR m.summary ILIKE $2)
			ORDER BY m.path LIMIT $5`, storeID, pat, prefix, prefixEnd(prefix), n)
		if err != nil {
			return nil, dbErr("search memories", err)
		}
		if err := scan(rows); err != nil {
			return nil, dbErr("search memories", err)
		}
	}
	if len(hits) == 0 {
		if _, err := s.GetStore(ctx, storeID); err != nil {
			return nil, err
		}
	}
	return hits, nil
}
