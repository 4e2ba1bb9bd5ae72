package rag

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Events publishes what ingestion did (package webhooks).
type Events interface {
	// Emit records an event of type typ in tx, so it exists only if tx
	// commits; an error leaves tx usable.
	Emit(ctx context.Context, tx pgx.Tx, typ string, data, content any) error
}

// ingestedEvent is the data of rag.document.ingested: ids and counts,
// never the document's text.
type ingestedEvent struct {
	Collection string `json:"collection"`
	DocumentID string `json:"documentId"`
	Chunks     int    `json:"chunks"`
	// Source is "upload" (a file ingested by a job) or "code" (chunks
	// given over the API).
	Source string `json:"source"`
}

// emitIngested records rag.document.ingested in tx, the transaction that
// stored the document's chunks.
func (s *Service) emitIngested(ctx context.Context, tx pgx.Tx, docID string, collID int64, chunks int, source string) {
	if s.cfg.Events == nil {
		return
	}
	var name string
	if err := tx.QueryRow(ctx, `SELECT name FROM stackbone_platform.rag_collections WHERE id = $1`, collID).Scan(&name); err != nil {
		s.log.Warn("rag: event not recorded", "type", "rag.document.ingested", "error", err)
		return
	}
	if err := s.cfg.Events.Emit(ctx, tx, "rag.document.ingested", ingestedEvent{Collection: name, DocumentID: docID, Chunks: chunks, Source: source}, nil); err != nil {
		s.log.Warn("rag: event not recorded", "type", "rag.document.ingested", "error", err)
	}
}
