package rag

import (
	"context"
	"testing"

	"github.com/stackbone/box/postgres/pgtest"
)

// TestReadHitsFindsItsChunksByKey: a search's ranked chunks are read by
// key however many chunks the collections came to hold since the
// connection first read some. It reads while one document of ten chunks
// is stored (a plan cached then would scan the table), a document of
// 20,000 chunks is added, and the reads after read none of them.
func TestReadHitsFindsItsChunksByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OneConnection(t)
	s := &Service{cfg: Config{Pool: pool}}
	var coll int64
	if err := pool.QueryRow(ctx, `INSERT INTO stackbone_platform.rag_collections (name, model, dimensions)
		VALUES ('handbook', 'openai/embed', 2) RETURNING id`).Scan(&coll); err != nil {
		t.Fatal(err)
	}
	add := func(doc string, chunks int) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.rag_documents (id, collection_id, source, status)
			VALUES ($1, $2, 'code', 'succeeded')`, doc, coll); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.rag_chunks (collection_id, document_id, chunk_index, content, embedding, version)
			SELECT $1, $2, g, 'chunk ' || g, '{0,1}', 1 FROM generate_series(0, $3 - 1) g`, coll, doc, chunks); err != nil {
			t.Fatal(err)
		}
	}
	add("doc_small", 10)
	var ids []int64
	if err := pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY chunk_index) FROM stackbone_platform.rag_chunks
		WHERE document_id = 'doc_small' AND chunk_index IN (3, 7)`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	c := Collection{Name: "handbook", Model: "openai/embed"}
	top := []rankedChunk{{id: ids[1], score: 0.9}, {id: ids[0], score: 0.5}}
	read := func() []Hit {
		t.Helper()
		hits, err := s.readHits(ctx, c, top)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	for range 10 {
		read()
	}
	add("doc_large", 20000)
	before := pgtest.SeqRead(t, pool, "stackbone_platform.rag_chunks")
	var hits []Hit
	for range 5 {
		hits = read()
	}
	if n := pgtest.SeqRead(t, pool, "stackbone_platform.rag_chunks") - before; n >= 20000 {
		t.Fatalf("5 reads of two chunks read %d chunks in sequence: the table scanned", n)
	}
	if len(hits) != 2 || hits[0].ChunkIndex != 7 || hits[1].ChunkIndex != 3 || hits[0].Content != "chunk 7" || hits[0].Score != 0.9 {
		t.Fatalf("hits %+v, want chunks 7 then 3 in their ranked order", hits)
	}
}
