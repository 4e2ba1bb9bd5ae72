package rag

import (
	"errors"
	"net/http"
)

// Errors of the package. Each has a stable code for the API envelope (see
// Code) and is wrapped with a sentence saying what was wrong; messages never
// hold document or query text.
var (
	// ErrInvalidRequest: a request breaks a rule (rag_invalid_request, 400).
	ErrInvalidRequest = errors.New("rag: invalid request")
	// ErrCollectionNotFound: no collection of that name (rag_collection_not_found, 404).
	ErrCollectionNotFound = errors.New("rag: collection not found")
	// ErrCollectionExists: a collection of that name exists (rag_collection_exists, 409).
	ErrCollectionExists = errors.New("rag: collection exists")
	// ErrDocumentNotFound: no document with that id (rag_document_not_found, 404).
	ErrDocumentNotFound = errors.New("rag: document not found")
	// ErrDocumentConflict: the id names a document of another collection
	// (rag_document_conflict, 409).
	ErrDocumentConflict = errors.New("rag: document id taken by another collection")
	// ErrJobNotFound: no ingest job with that id (rag_job_not_found, 404).
	ErrJobNotFound = errors.New("rag: job not found")
	// ErrModelMismatch: a query or chunks embedded with another model or
	// dimension than the collection's (rag_model_mismatch, 409).
	ErrModelMismatch = errors.New("rag: embedding model mismatch")
	// ErrFileTooLarge: an upload over the limit (rag_file_too_large, 413).
	ErrFileTooLarge = errors.New("rag: file too large")
	// ErrUnsupportedType: not a .txt, .md or .pdf file, or its bytes do not
	// match its name (rag_unsupported_type, 415).
	ErrUnsupportedType = errors.New("rag: unsupported file type")
	// ErrParseFailed: the file could not be read as text, or holds none
	// (rag_parse_failed; a job's error).
	ErrParseFailed = errors.New("rag: the document could not be parsed")
	// ErrEmbeddingFailed: the provider failed to embed (rag_embedding_failed, 502).
	ErrEmbeddingFailed = errors.New("rag: embedding failed")
	// ErrProviderNotConfigured: the collection's model names a provider with
	// no endpoint (rag_provider_not_configured, 503).
	ErrProviderNotConfigured = errors.New("rag: model provider not configured")
	// ErrIngestUnavailable: uploads need the job queue and the object store,
	// and this box has not got them (rag_ingest_unavailable, 503).
	ErrIngestUnavailable = errors.New("rag: ingest unavailable")
	// ErrUnavailable: the database failed (rag_unavailable, 503).
	ErrUnavailable = errors.New("rag: storage unavailable")
)

// codes is the one table from errors to codes and HTTP statuses.
var codes = []struct {
	err    error
	code   string
	status int
}{
	{ErrInvalidRequest, "rag_invalid_request", http.StatusBadRequest},
	{ErrCollectionNotFound, "rag_collection_not_found", http.StatusNotFound},
	{ErrCollectionExists, "rag_collection_exists", http.StatusConflict},
	{ErrDocumentNotFound, "rag_document_not_found", http.StatusNotFound},
	{ErrDocumentConflict, "rag_document_conflict", http.StatusConflict},
	{ErrJobNotFound, "rag_job_not_found", http.StatusNotFound},
	{ErrModelMismatch, "rag_model_mismatch", http.StatusConflict},
	{ErrFileTooLarge, "rag_file_too_large", http.StatusRequestEntityTooLarge},
	{ErrUnsupportedType, "rag_unsupported_type", http.StatusUnsupportedMediaType},
	{ErrParseFailed, "rag_parse_failed", http.StatusUnprocessableEntity},
	{ErrEmbeddingFailed, "rag_embedding_failed", http.StatusBadGateway},
	{ErrProviderNotConfigured, "rag_provider_not_configured", http.StatusServiceUnavailable},
	{ErrIngestUnavailable, "rag_ingest_unavailable", http.StatusServiceUnavailable},
	{ErrUnavailable, "rag_unavailable", http.StatusServiceUnavailable},
}

// Code is the API error code of err ("" for an unexpected error).
func Code(err error) string {
	c, _ := classify(err)
	return c
}

func classify(err error) (string, int) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code, c.status
		}
	}
	return "", http.StatusInternalServerError
}
