package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/rag/synth"
)

// RAGConfig sizes the retrieval load run. Zero values take the defaults.
type RAGConfig struct {
	// AdminURL is a server where the run may create a throwaway database.
	AdminURL string
	// Sizes are the collection sizes measured (default 10,000 and 100,000).
	Sizes []int
	// Dims is the vector dimension (default 1536).
	Dims int
	// Queries per size (default 1000), each run on the graph and on the
	// exact baseline, interleaved.
	Queries int
	// TopK (default 10) is also the k of recall@k.
	TopK int
	// IngestChunks go through the whole code-ingest path, embeddings from
	// the scripted provider included (default 5,000).
	IngestChunks int
	Logger       *slog.Logger
}

// RAGSize is what one collection size measured.
type RAGSize struct {
	Chunks int
	// Load is storing the chunks (COPY of precomputed vectors, the
	// embedding call excluded) in chunks per second.
	LoadPerSec float64
	// IndexLoad is reading the vectors back from Postgres into a fresh
	// box's index; Link is building its graph.
	IndexLoad, Link time.Duration
	Graph, Exact    Figures
	Recall          float64
}

// RAGReport is the result of a retrieval load run.
type RAGReport struct {
	Setup []string
	Sizes []RAGSize
	// IngestPerSec is code ingest end to end (scripted embeddings over
	// HTTP, then storage) in chunks per second.
	IngestPerSec float64
}

// RAG measures retrieval on clustered synthetic vectors (rag/synth: topics
// and sub-topics, not uniform noise): for each size it stores the chunks,
// starts a second service on the database as a restarted box would (load
// and link its index), then times Search (vector given, so the embedding
// call is excluded; the chunk rows are still read from Postgres) on the
// graph and on the exact scan, interleaved, and the recall@k of the graph
// against the exact answers.
func RAG(ctx context.Context, cfg RAGConfig) (RAGReport, error) {
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = []int{10_000, 100_000}
	}
	if cfg.Dims == 0 {
		cfg.Dims = 1536
	}
	if cfg.Queries == 0 {
		cfg.Queries = 1000
	}
	if cfg.TopK == 0 {
		cfg.TopK = 10
	}
	if cfg.IngestChunks == 0 {
		cfg.IngestChunks = 5000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	quiet := slog.New(slog.DiscardHandler)
	pool, drop, err := Database(ctx, cfg.AdminURL, 0)
	if err != nil {
		return RAGReport{}, err
	}
	defer drop()
	prov := providertest.Start()
	defer prov.Close()
	prov.DiscardRequests()
	models := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: prov.URL()}}, nil)
	newService := func() (*rag.Service, context.CancelFunc, error) {
		svc, err := rag.New(rag.Config{Pool: pool, Models: models, Logger: quiet})
		if err != nil {
			return nil, nil, err
		}
		sctx, cancel := context.WithCancel(ctx)
		if err := svc.Start(sctx, nil); err != nil {
			cancel()
			return nil, nil, err
		}
		return svc, cancel, nil
	}
	rep := RAGReport{Setup: []string{
		fmt.Sprintf("PostgreSQL %s, Go %s, %d CPUs (GOMAXPROCS %d)", serverVersion(ctx, pool), runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0)),
		fmt.Sprintf("vectors: %d dimensions, clustered (topics, sub-topics of ~50, noise), queries from the same distribution but not in the data", cfg.Dims),
		fmt.Sprintf("search: top %d, one client, graph and exact interleaved; latency includes reading the hits from Postgres, not the embedding call", cfg.TopK),
	}}
	writer, stopWriter, err := newService()
	if err != nil {
		return RAGReport{}, err
	}
	defer stopWriter()
	for _, n := range cfg.Sizes {
		name := "bench-" + strconv.Itoa(n)
		if _, err := writer.CreateCollection(ctx, rag.CreateCollection{Name: name, Model: "openai/text-embedding-3-small", Dimensions: cfg.Dims}); err != nil {
			return RAGReport{}, err
		}
		gen := synth.New(cfg.Dims, n, uint64(n))
		cfg.Logger.Info("bench rag: storing", "chunks", n)
		began := time.Now()
		const perDoc = 1000
		for d := 0; d*perDoc < n; d++ {
			m := min(perDoc, n-d*perDoc)
			req := rag.IngestRequest{ID: fmt.Sprintf("%s-doc-%d", name, d), Collection: name, Chunks: make([]rag.Chunk, m)}
			vecs := make([][]float32, m)
			for i := range m {
				req.Chunks[i] = rag.Chunk{Content: fmt.Sprintf("chunk %d of document %d", i, d), Metadata: map[string]any{"doc": d}}
				vecs[i] = gen.Next()
			}
			if _, err := writer.IngestEmbedded(ctx, req, vecs); err != nil {
				return RAGReport{}, err
			}
		}
		size := RAGSize{Chunks: n, LoadPerSec: float64(n) / time.Since(began).Seconds()}
		// A second box, as after a restart: load the index from Postgres, link it.
		svc, stop, err := newService()
		if err != nil {
			return RAGReport{}, err
		}
		cfg.Logger.Info("bench rag: building the index", "chunks", n)
		began = time.Now()
		if _, err := svc.Search(ctx, rag.SearchRequest{Collection: name, Vector: gen.Next(), TopK: 1, Exact: true}); err != nil {
			stop()
			return RAGReport{}, err
		}
		size.IndexLoad = time.Since(began)
		began = time.Now()
		if err := svc.BuildIndex(ctx, name); err != nil {
			stop()
			return RAGReport{}, err
		}
		size.Link = time.Since(began)
		cfg.Logger.Info("bench rag: searching", "chunks", n, "queries", cfg.Queries)
		var graph, exact recorder
		hit, total := 0, 0
		for q := range cfg.Queries {
			v := gen.Next()
			run := func(ex bool, rec *recorder) []rag.Hit {
				s := time.Now()
				hits, err := svc.Search(ctx, rag.SearchRequest{Collection: name, Vector: v, TopK: cfg.TopK, Exact: ex})
				rec.add(time.Since(s), err)
				return hits
			}
			var g, e []rag.Hit
			if q%2 == 0 { // alternate which goes first
				g, e = run(false, &graph), run(true, &exact)
			} else {
				e, g = run(true, &exact), run(false, &graph)
			}
			truth := map[int64]bool{}
			for _, h := range e {
				truth[h.ChunkID] = true
			}
			for _, h := range g {
				if truth[h.ChunkID] {
					hit++
				}
			}
			total += len(e)
		}
		stop()
		size.Graph = graph.figures("graph (HNSW)", false)
		size.Exact = exact.figures("exact scan", true)
		if total > 0 {
			size.Recall = float64(hit) / float64(total)
		}
		rep.Sizes = append(rep.Sizes, size)
	}
	// Code ingest end to end: the scripted provider embeds (JSON over HTTP).
	if _, err := writer.CreateCollection(ctx, rag.CreateCollection{Name: "bench-ingest", Model: "openai/text-embedding-3-small", Dimensions: cfg.Dims}); err != nil {
		return RAGReport{}, err
	}
	gen := synth.New(cfg.Dims, cfg.IngestChunks, 99)
	vecs := make([][]float32, cfg.IngestChunks)
	for i := range vecs {
		vecs[i] = gen.Next()
	}
	prov.EmbedWith(func(_, text string, _ int) []float32 {
		i, _ := strconv.Atoi(strings.TrimPrefix(text, "chunk "))
		return vecs[i%len(vecs)]
	})
	cfg.Logger.Info("bench rag: ingesting through the provider", "chunks", cfg.IngestChunks)
	began := time.Now()
	const perCall = 500
	for start := 0; start < cfg.IngestChunks; start += perCall {
		m := min(perCall, cfg.IngestChunks-start)
		req := rag.IngestRequest{ID: fmt.Sprintf("ingest-%d", start), Collection: "bench-ingest", Chunks: make([]rag.Chunk, m)}
		for i := range m {
			req.Chunks[i] = rag.Chunk{Content: fmt.Sprintf("chunk %d", start+i)}
		}
		if _, err := writer.Ingest(ctx, req); err != nil {
			return RAGReport{}, err
		}
	}
	rep.IngestPerSec = float64(cfg.IngestChunks) / time.Since(began).Seconds()
	return rep, nil
}

// Print writes the report as tables.
func (r RAGReport) Print(w io.Writer) {
	fmt.Fprintln(w, "Retrieval (stackbone bench rag)")
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chunks\tsearch\tn\terrors\tp50 ms\tp95 ms\tp99 ms\trecall@10\t")
	for _, s := range r.Sizes {
		for _, f := range []Figures{s.Graph, s.Exact} {
			name := f.Name
			recall := fmt.Sprintf("%.4f", s.Recall)
			if f.Baseline {
				name, recall = "(baseline) "+name, "1 (truth)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%s\t\n", s.Chunks, name, f.N, f.Errors, ms(f.P50), ms(f.P95), ms(f.P99), recall)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chunks\tstore (chunks/s)\tindex load from Postgres\tgraph build\t")
	for _, s := range r.Sizes {
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t\n", s.Chunks, s.LoadPerSec, s.IndexLoad.Round(time.Millisecond), s.Link.Round(time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncode ingest end to end (scripted embeddings over HTTP + storage): %.0f chunks/s\n", r.IngestPerSec)
}
