// Package storesbench measures memory store latency at scale: it seeds a
// store with realistic memories straight into PostgreSQL and times list,
// read and search through the Go API and the HTTP API, interleaved with
// baselines measured in the same run.
//
//	rep, err := storesbench.Run(ctx, storesbench.Config{AdminURL: url})
//	rep.Print(os.Stdout)
package storesbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/stores"
)

// Layout of seeded memories: /topic-TT/sub-S/note-NNNNN.md, 20 topics of
// 10 folders each, so a store of 10,000 has 50 notes a folder.
const (
	Topics = 20
	Subs   = 10
)

// PathOf is the path of seeded memory i.
func PathOf(i int) string {
	return fmt.Sprintf("/topic-%02d/sub-%d/note-%05d.md", i%Topics, (i/Topics)%Subs, i)
}

// RareWord occurs in seeded memory i only.
func RareWord(i int) string { return fmt.Sprintf("ticket%05dx", i) }

// vocabulary is pronounceable pseudo-words; content draws from it with a
// skew, so some words are common and most are rare, as in prose.
var vocabulary = func() []string {
	cons, vows := "bdfgklmnprstvz", "aeiou"
	out := make([]string, 0, 2000)
	for i := 0; len(out) < 2000; i++ {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		var b strings.Builder
		for s := 0; s < 2+r.IntN(2); s++ {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		b.WriteByte(cons[r.IntN(len(cons))])
		out = append(out, b.String())
	}
	return out
}()

// CommonWord is a frequent word of seeded content.
func CommonWord() string { return vocabulary[3] }

// ContentOf is the content of seeded memory i: about size bytes.
func ContentOf(i, size int) string {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	var b strings.Builder
	b.WriteString("Note about " + RareWord(i) + ". ")
	for b.Len() < size {
		f := r.Float64()
		b.WriteString(vocabulary[int(f*f*f*float64(len(vocabulary)))])
		if r.IntN(12) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// Seed writes n memories of about size bytes (each with its first version)
// into the store straight in SQL, and sets the store's counts. It is setup
// for measurements and tests, not the code path measured.
func Seed(ctx context.Context, pool *pgxpool.Pool, storeID uuid.UUID, n, size int) error {
	now := time.Now().UTC()
	mem := make([][]any, 0, n)
	ver := make([][]any, 0, n)
	var total int64
	for i := 0; i < n; i++ {
		c := ContentOf(i, size)
		id, vid := uuid.New(), uuid.New()
		sum := fmt.Sprintf("Note %d of topic %02d.", i, i%Topics)
		t := now.Add(time.Duration(i) * time.Microsecond)
		mem = append(mem, []any{id, storeID, PathOf(i), sum, c, stores.SHA256(c), len(c), "active", vid, t, t})
		ver = append(ver, []any{vid, storeID, id, "created", PathOf(i), sum, c, stores.SHA256(c), len(c), "api", "seed", t})
		total += int64(len(c))
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stackbone_platform", "memories"},
		[]string{"id", "store_id", "path", "summary", "content", "content_sha256", "byte_size", "status", "head_version_id", "created_at", "updated_at"},
		pgx.CopyFromRows(mem)); err != nil {
		return fmt.Errorf("storesbench: seed memories: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stackbone_platform", "memory_versions"},
		[]string{"id", "store_id", "memory_id", "operation", "path", "summary", "content", "content_sha256", "byte_size", "author_kind", "author_id", "created_at"},
		pgx.CopyFromRows(ver)); err != nil {
		return fmt.Errorf("storesbench: seed versions: %w", err)
	}
	counts := map[string]int{}
	parents := map[string]string{}
	for i := 0; i < n; i++ {
		parent := "/"
		p := PathOf(i)
		for j := 1; j < len(p); j++ {
			if p[j] == '/' {
				counts[p[:j+1]]++
				parents[p[:j+1]] = parent
				parent = p[:j+1]
			}
		}
	}
	var fs, ps []string
	var cs []int
	for f, c := range counts {
		fs, ps, cs = append(fs, f), append(ps, parents[f]), append(cs, c)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO stackbone_platform.memory_folders (store_id, path, parent, count)
		SELECT $1, f, p, c FROM unnest($2::text[], $3::text[], $4::int[]) AS t (f, p, c)
		ON CONFLICT (store_id, path) DO UPDATE SET count = memory_folders.count + excluded.count`, storeID, fs, ps, cs); err != nil {
		return fmt.Errorf("storesbench: seed folders: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.memory_stores SET memory_count = memory_count + $2,
		total_bytes = total_bytes + $3, revision = revision + 1 WHERE id = $1`, storeID, n, total); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `ANALYZE stackbone_platform.memories; ANALYZE stackbone_platform.memory_versions; ANALYZE stackbone_platform.memory_folders`)
	return err
}
