package rag

import "github.com/stackbone/box/fault"

// Errors of the package, each with its kind and stable code (package
// fault), wrapped with a sentence saying what was wrong; messages never
// hold document or query text.
var (
	// ErrInvalidRequest: a request breaks a rule (rag_invalid_request, 400).
	ErrInvalidRequest = fault.New(fault.Invalid, "rag_invalid_request", "rag: invalid request")
	// ErrCollectionNotFound: no collection of that name (rag_collection_not_found, 404).
	ErrCollectionNotFound = fault.New(fault.NotFound, "rag_collection_not_found", "rag: collection not found")
	// ErrCollectionExists: a collection of that name exists (rag_collection_exists, 409).
	ErrCollectionExists = fault.New(fault.Conflict, "rag_collection_exists", "rag: collection exists")
	// ErrDocumentNotFound: no document with that id (rag_document_not_found, 404).
	ErrDocumentNotFound = fault.New(fault.NotFound, "rag_document_not_found", "rag: document not found")
	// ErrDocumentConflict: the id names a document of another collection
	// (rag_document_conflict, 409).
	ErrDocumentConflict = fault.New(fault.Conflict, "rag_document_conflict", "rag: document id taken by another collection")
	// ErrJobNotFound: no ingest job with that id (rag_job_not_found, 404).
	ErrJobNotFound = fault.New(fault.NotFound, "rag_job_not_found", "rag: job not found")
	// ErrModelMismatch: a query or chunks embedded with another model or
	// dimension than the collection's (rag_model_mismatch, 409).
	ErrModelMismatch = fault.New(fault.Conflict, "rag_model_mismatch", "rag: embedding model mismatch")
	// ErrFileTooLarge: an upload over the limit (rag_file_too_large, 413).
	ErrFileTooLarge = fault.New(fault.TooLarge, "rag_file_too_large", "rag: file too large")
	// ErrUnsupportedType: not a .txt, .md or .pdf file, or its bytes do not
	// match its name (rag_unsupported_type, 415).
	ErrUnsupportedType = fault.New(fault.Unsupported, "rag_unsupported_type", "rag: unsupported file type")
	// ErrParseFailed: the file could not be read as text, or holds none
	// (rag_parse_failed; a job's error).
	ErrParseFailed = fault.New(fault.Unprocessable, "rag_parse_failed", "rag: the document could not be parsed")
	// ErrEmbeddingFailed: the provider failed to embed (rag_embedding_failed, 502).
	ErrEmbeddingFailed = fault.New(fault.Upstream, "rag_embedding_failed", "rag: embedding failed")
	// ErrProviderNotConfigured: the collection's model names a provider with
	// no endpoint (rag_provider_not_configured, 503).
	ErrProviderNotConfigured = fault.New(fault.Unavailable, "rag_provider_not_configured", "rag: model provider not configured")
	// ErrIngestUnavailable: uploads need the job queue and the object store,
	// and this box has not got them (rag_ingest_unavailable, 503).
	ErrIngestUnavailable = fault.New(fault.Unavailable, "rag_ingest_unavailable", "rag: ingest unavailable")
	// ErrUnavailable: the database failed (rag_unavailable, 503).
	ErrUnavailable = fault.New(fault.Unavailable, "rag_unavailable", "rag: storage unavailable")
)

// Code is the API error code of err ("" for an unexpected error).
func Code(err error) string { return fault.Code(err) }
