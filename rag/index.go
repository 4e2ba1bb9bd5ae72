package rag

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/viterin/vek/vek32"

	"github.com/stackbone/box/rag/hnsw"
)

// notifyChannel carries "collectionID:version" after every change to a
// collection's chunks, to every box listening.
const notifyChannel = "stackbone_rag"

// indexes holds one in-memory index per collection, loaded from Postgres
// and kept current from the version columns: a box catches up with a
// collection by reading the chunks and tombstones above the version it has,
// in one repeatable-read snapshot. Notifications make that prompt; the
// version check of every query makes it certain (a box never answers from
// an index older than the collection row it just read).
type indexes struct {
	pool       *pgxpool.Pool
	log        *slog.Logger
	exactBelow int

	mu    sync.Mutex
	cols  map[int64]*colIndex
	dirty map[int64]bool
	wake  chan struct{} // sync work
	link  chan struct{} // link work
}

// colIndex is the index of one collection.
type colIndex struct {
	id   int64
	dims int

	load sync.Mutex // one load or catch-up at a time

	mu      sync.RWMutex
	g       *hnsw.Graph
	slotOf  map[int64]uint32
	chunkOf []int64
	version int64
	loaded  bool
}

func newIndexes(pool *pgxpool.Pool, log *slog.Logger, exactBelow int) *indexes {
	return &indexes{pool: pool, log: log, exactBelow: exactBelow, cols: map[int64]*colIndex{},
		dirty: map[int64]bool{}, wake: make(chan struct{}, 1), link: make(chan struct{}, 1)}
}

// start loads every collection in the background and runs the listener,
// the catch-up worker, the sweeper and the linker until ctx ends.
func (x *indexes) start(ctx context.Context, every time.Duration) error {
	rows, err := x.pool.Query(ctx, `SELECT id, dimensions FROM stackbone_platform.rag_collections ORDER BY id`)
	if err != nil {
		return fmt.Errorf("%w: list collections: %v", ErrUnavailable, err)
	}
	type col struct {
		ID   int64
		Dims int
	}
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[col])
	if err != nil {
		return fmt.Errorf("%w: list collections: %v", ErrUnavailable, err)
	}
	x.mu.Lock()
	for _, c := range cols {
		x.dirty[c.ID] = true
		if x.cols[c.ID] == nil {
			x.cols[c.ID] = &colIndex{id: c.ID, dims: c.Dims}
		}
	}
	x.mu.Unlock()
	kick(x.wake)
	go x.listen(ctx)
	go x.syncLoop(ctx)
	go x.sweep(ctx, every)
	go x.linkLoop(ctx)
	return nil
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// get returns the collection's index, at least as new as c.version.
func (x *indexes) get(ctx context.Context, c Collection) (*colIndex, error) {
	x.mu.Lock()
	ci := x.cols[c.id]
	if ci == nil {
		ci = &colIndex{id: c.id, dims: c.Dimensions}
		x.cols[c.id] = ci
	}
	x.mu.Unlock()
	ci.mu.RLock()
	fresh := ci.loaded && ci.version >= c.version
	ci.mu.RUnlock()
	if fresh {
		return ci, nil
	}
	if err := x.catchUp(ctx, ci); err != nil {
		return nil, err
	}
	return ci, nil
}

// catchUp brings ci to the collection's committed version: a full load the
// first time (or when the tombstones it needs were pruned), else the chunks
// and tombstones above its version.
func (x *indexes) catchUp(ctx context.Context, ci *colIndex) error {
	ci.load.Lock()
	defer ci.load.Unlock()
	tx, err := x.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("%w: index sync: %v", ErrUnavailable, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var version, from int64
	err = tx.QueryRow(ctx, `SELECT version, tombstones_from FROM stackbone_platform.rag_collections WHERE id = $1`, ci.id).Scan(&version, &from)
	if errors.Is(err, pgx.ErrNoRows) {
		x.drop(ci.id)
		return fmt.Errorf("%w: it was deleted", ErrCollectionNotFound)
	}
	if err != nil {
		return fmt.Errorf("%w: index sync: %v", ErrUnavailable, err)
	}
	ci.mu.RLock()
	loaded, have, reload := ci.loaded, ci.version, ci.loaded && ci.g.Deleted() > ci.g.Len()/4 && ci.g.Len() > x.exactBelow
	ci.mu.RUnlock()
	if loaded && have >= version {
		return nil
	}
	began := time.Now()
	if !loaded || have < from || reload {
		g := hnsw.New(ci.dims, hnsw.Config{Seed: uint64(ci.id)})
		slotOf := map[int64]uint32{}
		var chunkOf []int64
		err := readVectors(ctx, tx, ci, `SELECT id, embedding FROM stackbone_platform.rag_chunks WHERE collection_id = $1 ORDER BY id`,
			[]any{ci.id}, func(id int64, v []float32) {
				slotOf[id] = g.Add(v)
				chunkOf = append(chunkOf, id)
			})
		if err != nil {
			return err
		}
		ci.mu.Lock()
		ci.g, ci.slotOf, ci.chunkOf, ci.version, ci.loaded = g, slotOf, chunkOf, version, true
		ci.mu.Unlock()
		x.log.Info("index loaded", "collection", ci.id, "version", version, "chunks", len(chunkOf), "ms", time.Since(began).Milliseconds())
		kick(x.link)
		return nil
	}
	type vec struct {
		id int64
		v  []float32
	}
	var adds []vec
	err = readVectors(ctx, tx, ci, `SELECT id, embedding FROM stackbone_platform.rag_chunks WHERE collection_id = $1 AND version > $2 ORDER BY id`,
		[]any{ci.id, have}, func(id int64, v []float32) { adds = append(adds, vec{id, v}) })
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT chunk_id FROM stackbone_platform.rag_tombstones WHERE collection_id = $1 AND version > $2`, ci.id, have)
	if err != nil {
		return fmt.Errorf("%w: index sync: %v", ErrUnavailable, err)
	}
	dels, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("%w: index sync: %v", ErrUnavailable, err)
	}
	ci.mu.Lock()
	for _, id := range dels {
		if s, ok := ci.slotOf[id]; ok {
			ci.g.Delete(s)
			delete(ci.slotOf, id)
		}
	}
	for _, a := range adds {
		if _, ok := ci.slotOf[a.id]; ok {
			continue
		}
		s := ci.g.Add(a.v)
		ci.slotOf[a.id] = s
		ci.chunkOf = append(ci.chunkOf, a.id)
	}
	ci.version = version
	ci.mu.Unlock()
	x.log.Debug("index caught up", "collection", ci.id, "version", version, "added", len(adds), "deleted", len(dels), "ms", time.Since(began).Milliseconds())
	kick(x.link)
	return nil
}

// readVectors streams (id, embedding) rows, decoding the binary real[]
// itself: the generic array decoder costs more than the rest of a load.
func readVectors(ctx context.Context, tx pgx.Tx, ci *colIndex, sql string, args []any, fn func(int64, []float32)) error {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("%w: index load: %v", ErrUnavailable, err)
	}
	defer rows.Close()
	buf := make([]float32, ci.dims)
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != 2 || len(raw[0]) != 8 {
			return fmt.Errorf("%w: index load: unexpected row shape", ErrUnavailable)
		}
		id := int64(binary.BigEndian.Uint64(raw[0]))
		if err := decodeFloat4Array(raw[1], buf); err != nil {
			return fmt.Errorf("%w: index load: chunk %d: %v", ErrUnavailable, id, err)
		}
		fn(id, buf)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: index load: %v", ErrUnavailable, err)
	}
	return nil
}

// decodeFloat4Array decodes PostgreSQL's binary one-dimensional real[]
// into dst, which must have the array's length.
func decodeFloat4Array(b []byte, dst []float32) error {
	if len(b) < 12 {
		return errors.New("short array")
	}
	ndim := int32(binary.BigEndian.Uint32(b[0:]))
	if ndim != 1 || len(b) < 20 {
		return fmt.Errorf("array of %d dimensions", ndim)
	}
	if n := int(int32(binary.BigEndian.Uint32(b[12:]))); n != len(dst) {
		return fmt.Errorf("vector of %d dimensions, collection has %d", n, len(dst))
	}
	p := b[20:]
	if len(p) != 8*len(dst) {
		return errors.New("array length mismatch (nulls?)")
	}
	for i := range dst {
		if int32(binary.BigEndian.Uint32(p[8*i:])) != 4 {
			return errors.New("null or malformed element")
		}
		dst[i] = math.Float32frombits(binary.BigEndian.Uint32(p[8*i+4:]))
	}
	return nil
}

func (x *indexes) drop(id int64) {
	x.mu.Lock()
	delete(x.cols, id)
	x.mu.Unlock()
}

// markDirty schedules a catch-up of a loaded index.
func (x *indexes) markDirty(id, version int64) {
	x.mu.Lock()
	ci := x.cols[id]
	if ci != nil {
		ci.mu.RLock()
		stale := !ci.loaded || ci.version < version
		ci.mu.RUnlock()
		if stale {
			x.dirty[id] = true
		}
	}
	x.mu.Unlock()
	kick(x.wake)
}

// syncLoop catches up dirty indexes one at a time.
func (x *indexes) syncLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.wake:
		}
		for {
			x.mu.Lock()
			var id int64
			var ci *colIndex
			for k := range x.dirty {
				id, ci = k, x.cols[k]
				delete(x.dirty, k)
				break
			}
			x.mu.Unlock()
			if id == 0 {
				break
			}
			if ci == nil {
				continue
			}
			if err := x.catchUp(ctx, ci); err != nil && ctx.Err() == nil && !errors.Is(err, ErrCollectionNotFound) {
				x.log.Warn("index sync failed; retrying at the next sweep", "collection", id, "error", err)
			}
		}
	}
}

// listen turns notifications into catch-ups, reconnecting after errors; a
// reconnect marks every index dirty, for the notifications it missed.
func (x *indexes) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := x.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		x.log.Warn("index listener lost its connection; reconnecting", "error", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
		x.mu.Lock()
		for id := range x.cols {
			x.dirty[id] = true
		}
		x.mu.Unlock()
		kick(x.wake)
	}
}

func (x *indexes) listenOnce(ctx context.Context) error {
	conn, err := x.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	defer func() {
		// Do not hand a listening connection back to the pool.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "UNLISTEN *")
	}()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		idStr, verStr, ok := strings.Cut(n.Payload, ":")
		id, err1 := strconv.ParseInt(idStr, 10, 64)
		ver, err2 := strconv.ParseInt(verStr, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		x.markDirty(id, ver)
	}
}

// sweep checks every loaded index against its collection's version, for
// notifications lost while nobody noticed, and prunes old tombstones.
func (x *indexes) sweep(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rows, err := x.pool.Query(ctx, `SELECT id, version FROM stackbone_platform.rag_collections`)
		if err != nil {
			continue
		}
		type cv struct{ ID, Version int64 }
		list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[cv])
		if err != nil {
			continue
		}
		for _, c := range list {
			x.markDirty(c.ID, c.Version)
		}
		if time.Since(lastPrune) > time.Hour {
			lastPrune = time.Now()
			x.prune(ctx)
		}
	}
}

// prune deletes tombstones older than a day and raises tombstones_from past
// them, so a box that was behind them reloads instead of missing deletes.
func (x *indexes) prune(ctx context.Context) {
	_, err := x.pool.Exec(ctx, `
		WITH d AS (
		  DELETE FROM stackbone_platform.rag_tombstones WHERE deleted_at < now() - interval '1 day'
		  RETURNING collection_id, version)
		UPDATE stackbone_platform.rag_collections c SET tombstones_from = greatest(c.tombstones_from, m.v + 1)
		FROM (SELECT collection_id, max(version) AS v FROM d GROUP BY collection_id) m
		WHERE c.id = m.collection_id`)
	if err != nil && ctx.Err() == nil {
		x.log.Warn("pruning tombstones failed", "error", err)
	}
}

// linkLoop puts added vectors into their collection's graph, a few at a
// time under the write lock so searches interleave. Collections below
// exactBelow stay exact-only.
func (x *indexes) linkLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.link:
		case <-t.C:
		}
		for {
			worked := false
			x.mu.Lock()
			cols := make([]*colIndex, 0, len(x.cols))
			for _, ci := range x.cols {
				cols = append(cols, ci)
			}
			x.mu.Unlock()
			for _, ci := range cols {
				if ctx.Err() != nil {
					return
				}
				if ci.linkSome(x.exactBelow, 2*time.Millisecond) {
					worked = true
				}
			}
			if !worked {
				break
			}
		}
	}
}

// linkSome links vectors for about budget; it reports whether any remain.
func (ci *colIndex) linkSome(exactBelow int, budget time.Duration) bool {
	ci.mu.RLock()
	idle := !ci.loaded || ci.g.Unlinked() == 0 || ci.g.Live() < exactBelow
	ci.mu.RUnlock()
	if idle {
		return false
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if !ci.loaded || ci.g.Unlinked() == 0 || ci.g.Live() < exactBelow {
		return false
	}
	start := time.Now()
	for time.Since(start) < budget && ci.g.Link() {
	}
	return ci.g.Unlinked() > 0
}

// linkAll links every vector now (benchmarks and tests).
func (ci *colIndex) linkAll() {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	for ci.g.Link() {
	}
}

// scored is a chunk and its cosine similarity.
type scored struct {
	chunk int64
	sim   float32
}

// searchMode picks how a search runs.
type searchMode int

const (
	modeAuto  searchMode = iota
	modeExact            // scan every vector: the baseline
)

// search returns the k nearest chunks to q. allowed, when not nil, is the
// set of chunks a filter admits: a small set is scanned exactly, a large
// one walks the graph with a beam widened by its selectivity.
func (ci *colIndex) search(q []float32, k, ef, exactBelow int, allowed map[int64]struct{}, mode searchMode) []scored {
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	g := ci.g
	var hits []hnsw.Hit
	switch {
	case allowed != nil && len(allowed) < exactBelow:
		slots := make([]uint32, 0, len(allowed))
		for id := range allowed {
			if s, ok := ci.slotOf[id]; ok {
				slots = append(slots, s)
			}
		}
		hits = g.ExactSlots(q, k, slots)
	case allowed != nil:
		ok := func(s uint32) bool { _, in := allowed[ci.chunkOf[s]]; return in }
		if mode == modeExact {
			hits = g.Exact(q, k, ok)
			break
		}
		widen := max(1, g.Live()/max(1, len(allowed)))
		hits = g.Search(q, k, min(ef*widen, g.Live()), ok)
	case mode == modeExact || g.Live() < exactBelow:
		hits = g.Exact(q, k, nil)
	default:
		hits = g.Search(q, k, ef, nil)
	}
	out := make([]scored, len(hits))
	for i, h := range hits {
		out[i] = scored{chunk: ci.chunkOf[h.Slot], sim: h.Sim}
	}
	return out
}

// IndexStats describes a collection's in-memory index on this box.
type IndexStats struct {
	Loaded  bool  `json:"loaded"`
	Version int64 `json:"version"`
	// Vectors are live vectors; Unlinked are searched by exact scan until
	// the background linker puts them in the graph; Deleted still hold a
	// slot until the next rebuild.
	Vectors  int `json:"vectors"`
	Unlinked int `json:"unlinked"`
	Deleted  int `json:"deleted"`
}

// IndexStats reports the collection's index on this box without loading it.
// Errors: ErrCollectionNotFound, ErrUnavailable.
func (s *Service) IndexStats(ctx context.Context, collection string) (IndexStats, error) {
	c, err := s.collection(ctx, s.cfg.Pool, collection)
	if err != nil {
		return IndexStats{}, err
	}
	s.idx.mu.Lock()
	ci := s.idx.cols[c.id]
	s.idx.mu.Unlock()
	if ci == nil {
		return IndexStats{}, nil
	}
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	if !ci.loaded {
		return IndexStats{}, nil
	}
	return IndexStats{Loaded: true, Version: ci.version, Vectors: ci.g.Live(), Unlinked: ci.g.Unlinked(), Deleted: ci.g.Deleted()}, nil
}

// BuildIndex brings the collection's index up to date and links every
// vector into its graph now rather than in the background (benchmarks, or
// a box that wants its indexes warm before it serves). Errors:
// ErrCollectionNotFound, ErrUnavailable.
func (s *Service) BuildIndex(ctx context.Context, collection string) error {
	c, err := s.collection(ctx, s.cfg.Pool, collection)
	if err != nil {
		return err
	}
	ci, err := s.idx.get(ctx, c)
	if err != nil {
		return err
	}
	ci.linkAll()
	return nil
}

// similarities returns the cosine similarity of q to each chunk in ids that
// the index holds.
func (ci *colIndex) similarities(q []float32, ids []int64) map[int64]float32 {
	out := make(map[int64]float32, len(ids))
	if len(ids) == 0 {
		return out
	}
	qn := slices.Clone(q)
	hnsw.Normalize(qn)
	ci.mu.RLock()
	defer ci.mu.RUnlock()
	for _, id := range ids {
		if s, ok := ci.slotOf[id]; ok {
			out[id] = vek32.Dot(qn, ci.g.Vector(s))
		}
	}
	return out
}
