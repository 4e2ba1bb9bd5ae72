package rag

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// RetrieveRequest is a retrieval: the text to embed and search with, in one
// collection.
type RetrieveRequest struct {
	Text string `json:"text"`
	// TopK defaults to 5, at most 100.
	TopK int `json:"topK,omitempty"`
	// Namespace is the collection ("default" when empty).
	Namespace string `json:"namespace,omitempty"`
	// Filter keeps chunks whose metadata contains it (JSONB @>).
	Filter map[string]any `json:"filter,omitempty"`
	// Model, when set, must be the collection's model.
	Model string `json:"model,omitempty"`
	// Hybrid fuses full-text ranking in; nil takes the box's setting.
	Hybrid *bool `json:"hybrid,omitempty"`
}

// Hit is one retrieved chunk.
type Hit struct {
	ChunkID    int64  `json:"chunkId"`
	DocumentID string `json:"documentId"`
	ChunkIndex int    `json:"chunkIndex"`
	Content    string `json:"content"`
	// Score is between 0 and 1, higher is closer: the cosine similarity
	// (negative ones as 0), or with hybrid retrieval the mean of that and
	// the chunk's full-text rank scaled by the best rank among the
	// candidates.
	Score    float64        `json:"score"`
	Metadata map[string]any `json:"metadata"`
	// Model embedded the chunk: the collection's model.
	Model      string `json:"model"`
	Collection string `json:"collection"`
}

// DefaultTopK is the number of hits of a retrieval that names none.
const DefaultTopK = 5

// Retrieve embeds req.Text with the collection's model and answers the
// nearest chunks, best first. Errors: ErrInvalidRequest,
// ErrCollectionNotFound, ErrModelMismatch, ErrEmbeddingFailed,
// ErrProviderNotConfigured, ErrUnavailable.
func (s *Service) Retrieve(ctx context.Context, req RetrieveRequest) ([]Hit, error) {
	if strings.TrimSpace(req.Text) == "" || utf8.RuneCountInString(req.Text) > MaxQueryChars {
		return nil, fmt.Errorf("%w: text must be 1 to %d characters", ErrInvalidRequest, MaxQueryChars)
	}
	if req.TopK < 0 || req.TopK > MaxTopK {
		return nil, fmt.Errorf("%w: topK must be 1 to %d", ErrInvalidRequest, MaxTopK)
	}
	if err := checkMetadata("filter", req.Filter); err != nil {
		return nil, err
	}
	c, err := s.collection(ctx, s.cfg.Pool, req.Namespace)
	if err != nil {
		return nil, err
	}
	if err := checkModel(c, req.Model); err != nil {
		return nil, err
	}
	emb, err := s.embed(ctx, c, []string{req.Text})
	if err != nil {
		return nil, err
	}
	hybrid := s.cfg.Hybrid
	if req.Hybrid != nil {
		hybrid = *req.Hybrid
	}
	return s.search(ctx, c, SearchRequest{Vector: emb.vectors[0], Text: req.Text, TopK: req.TopK, Filter: req.Filter, Hybrid: hybrid})
}

// SearchRequest is a retrieval with the query already embedded (the
// embedding call excluded, as the benchmarks measure it).
type SearchRequest struct {
	Collection string
	Vector     []float32
	// Text is the query text, for hybrid retrieval.
	Text   string
	TopK   int
	Filter map[string]any
	Hybrid bool
	// Exact scans every vector instead of walking the graph: the baseline.
	Exact bool
}

// Search answers the chunks nearest req.Vector, best first. Errors:
// ErrInvalidRequest, ErrCollectionNotFound, ErrModelMismatch (a vector of
// another dimension), ErrUnavailable.
func (s *Service) Search(ctx context.Context, req SearchRequest) (_ []Hit, err error) {
	defer func(start time.Time) { s.cfg.Metrics.RAG("retrieve", err, time.Since(start)) }(time.Now())
	c, err := s.collection(ctx, s.cfg.Pool, req.Collection)
	if err != nil {
		return nil, err
	}
	if len(req.Vector) != c.Dimensions {
		return nil, fmt.Errorf("%w: the vector has %d dimensions and collection %s holds %d", ErrModelMismatch, len(req.Vector), c.Name, c.Dimensions)
	}
	return s.search(ctx, c, req)
}

func (s *Service) search(ctx context.Context, c Collection, req SearchRequest) ([]Hit, error) {
	k := req.TopK
	if k == 0 {
		k = DefaultTopK
	}
	ci, err := s.idx.get(ctx, c)
	if err != nil {
		return nil, err
	}
	var filter []byte
	var allowed map[int64]struct{}
	if req.Filter != nil {
		filter, _ = json.Marshal(req.Filter)
		if allowed, err = s.filtered(ctx, c.id, filter); err != nil {
			return nil, err
		}
		if len(allowed) == 0 {
			return []Hit{}, nil
		}
	}
	mode := modeAuto
	if req.Exact {
		mode = modeExact
	}
	n := k
	if req.Hybrid {
		n = max(4*k, 40) // candidates of each list to fuse
	}
	vec := ci.search(req.Vector, n, max(s.cfg.EfSearch, n), s.cfg.ExactBelow, allowed, mode)
	var top []rankedChunk
	if !req.Hybrid || strings.TrimSpace(req.Text) == "" {
		for _, h := range vec {
			top = append(top, rankedChunk{h.chunk, float64(min(max(h.sim, 0), 1))})
		}
	} else {
		text, err := s.textSearch(ctx, c.id, req.Text, filter, n)
		if err != nil {
			return nil, err
		}
		top = fuse(ci, req.Vector, vec, text, k)
	}
	if len(top) == 0 {
		return []Hit{}, nil
	}
	return s.readHits(ctx, c, top)
}

// filtered is the set of the collection's chunks whose metadata contains
// filter.
func (s *Service) filtered(ctx context.Context, collectionID int64, filter []byte) (map[int64]struct{}, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT id FROM stackbone_platform.rag_chunks WHERE collection_id = $1 AND metadata @> $2`, collectionID, filter)
	if err != nil {
		return nil, fmt.Errorf("%w: filter: %v", ErrUnavailable, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("%w: filter: %v", ErrUnavailable, err)
	}
	allowed := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		allowed[id] = struct{}{}
	}
	return allowed, nil
}

// rankedChunk is a chunk with its score, best first in a result.
type rankedChunk struct {
	id    int64
	score float64
}

// fuse scores the candidates of the vector and text lists together and
// keeps the best k.
//
// Score fusion: the mean of the cosine similarity (already on a
// meaningful 0..1 scale) and the text rank scaled by the best text
// rank (ts_rank_cd has no fixed scale). Reciprocal rank fusion and
// min-max scaling of both lists were measured first and lose to it
// (TestHybridAgainstVectorOnly): both throw away how much better
// the best text match is, and min-max blows noise-level
// differences of similarity up to the full range.
// Every candidate of either list is scored by both signals: a chunk
// the text search found gets its true similarity (the vectors are
// in memory), not a zero for missing the vector list's cut.
func fuse(ci *colIndex, q []float32, vec []scored, text []textHit, k int) []rankedChunk {
	sims := map[int64]float64{}
	for _, h := range vec {
		sims[h.chunk] = float64(h.sim)
	}
	var missing []int64
	for _, h := range text {
		if _, ok := sims[h.id]; !ok {
			missing = append(missing, h.id)
		}
	}
	for id, sim := range ci.similarities(q, missing) {
		sims[id] = float64(sim)
	}
	ranks := map[int64]float64{}
	maxRank := 0.0
	for _, h := range text {
		ranks[h.id] = h.rank
		maxRank = math.Max(maxRank, h.rank)
	}
	var top []rankedChunk
	for id, sim := range sims {
		t := 0.0
		if maxRank > 0 {
			t = ranks[id] / maxRank
		}
		top = append(top, rankedChunk{id, min(max((min(max(sim, 0), 1)+t)/2, 0), 1)})
	}
	slices.SortFunc(top, func(a, b rankedChunk) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	if len(top) > k {
		top = top[:k]
	}
	return top
}

// readHits reads the ranked chunks, in their order; a chunk replaced or
// deleted since the index was read is left out.
func (s *Service) readHits(ctx context.Context, c Collection, top []rankedChunk) ([]Hit, error) {
	ids := make([]int64, len(top))
	for i, t := range top {
		ids[i] = t.id
	}
	// Planned for these ids each time (the batch is one transaction), not
	// by a plan the connection cached: one made while the collections
	// were small scans every chunk of every collection, and keeps doing so
	// as they grow until the next ANALYZE.
	var b pgx.Batch
	b.Queue(`SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`)
	b.Queue(`SELECT id, document_id, chunk_index, content, metadata FROM stackbone_platform.rag_chunks WHERE id = ANY($1)`, ids)
	br := s.cfg.Pool.SendBatch(ctx, &b)
	defer br.Close()
	byID := map[int64]Hit{}
	_, err := br.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
				var h Hit
				err := r.Scan(&h.ChunkID, &h.DocumentID, &h.ChunkIndex, &h.Content, &h.Metadata)
				byID[h.ChunkID] = h
				return struct{}{}, err
			})
		}
	}
	if err == nil {
		err = br.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read chunks: %v", ErrUnavailable, err)
	}
	out := make([]Hit, 0, len(top))
	for _, t := range top {
		h, ok := byID[t.id]
		if !ok {
			continue
		}
		h.Score, h.Model, h.Collection = t.score, c.Model, c.Name
		out = append(out, h)
	}
	return out, nil
}

// textHit is a chunk ranked by full-text search.
type textHit struct {
	id   int64
	rank float64
}

// textSearch ranks chunks by PostgreSQL full-text search: the query's
// words OR-ed (a question rarely has every word of the answer), ranked by
// cover density.
func (s *Service) textSearch(ctx context.Context, collID int64, text string, filter []byte, n int) ([]textHit, error) {
	rows, err := s.cfg.Pool.Query(ctx, `
		WITH q AS (SELECT nullif(regexp_replace(plainto_tsquery('english', $2)::text, ''' & ''', ''' | ''', 'g'), '')::tsquery AS q)
		SELECT c.id, ts_rank_cd(c.tsv, q.q)::float8 FROM stackbone_platform.rag_chunks c, q
		WHERE c.collection_id = $1 AND q.q IS NOT NULL AND c.tsv @@ q.q AND ($3::jsonb IS NULL OR c.metadata @> $3::jsonb)
		ORDER BY ts_rank_cd(c.tsv, q.q) DESC, c.id
		LIMIT $4`, collID, text, filter, n)
	if err != nil {
		return nil, fmt.Errorf("%w: text search: %v", ErrUnavailable, err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (textHit, error) {
		var h textHit
		return h, r.Scan(&h.id, &h.rank)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: text search: %v", ErrUnavailable, err)
	}
	return hits, nil
}
