// Package rag is retrieval: collections of documents split into chunks,
// each chunk embedded with its collection's one model and kept in the box's
// Postgres (stackbone_platform.rag_*) with JSONB metadata, and searched by
// meaning so agents answer from them.
//
// Three ways in, one set of tables: an upload (a .txt, .md or .pdf file up
// to 25 MB, kept in the object store and ingested by a River job whose
// state the document row shows, one run recorded per attempt), code ingest
// (chunks under a caller's id, replaced atomically on re-ingest), and the
// CLI, which uploads.
//
// Search runs in the box: each collection has an in-memory HNSW graph
// (package rag/hnsw) loaded from Postgres at start and kept current from
// per-collection version numbers, with LISTEN/NOTIFY so every box sharing
// the database catches up within milliseconds, and a version check on
// every query so none answers from an index older than the data it was
// asked about. Small collections and selective filters are scanned
// exactly. Hybrid retrieval fuses PostgreSQL full-text ranking with vector
// similarity by reciprocal rank.
//
// Wiring, once, in cmd/stackbone:
//
//	svc, err := rag.New(rag.Config{Pool: pool, Models: registry, Store: store, Logger: log})
//	svc.AddWorkers(reg)                 // before jobs.NewClient(pool, reg, log)
//	err = svc.Start(ctx, jobClient)     // loads the indexes, listens for changes
//	svc.Register(apiServer)             // the /api/rag routes
//	tools := svc.Tools(cfg.Agents)      // agent.Config.Tools
//
// And from Go:
//
//	_, err = svc.Ingest(ctx, rag.IngestRequest{ID: "faq-returns", Collection: "help-center",
//		Chunks: []rag.Chunk{{Content: "You can return any item within 30 days."}}})
//	hits, err := svc.Retrieve(ctx, rag.RetrieveRequest{Text: "How long do I have to return an item?", TopK: 3, Namespace: "help-center"})
package rag
