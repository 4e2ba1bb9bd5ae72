package api

import (
	_ "embed"
	"net/http"
)

// openAPI is the contract of every /api route (package openapi builds
// it; a test keeps this copy current).
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI is the OpenAPI 3.1 document the box serves at
// GET /api/openapi.json.
func OpenAPI() []byte { return openAPI }

// openAPIDoc serves the document without a key: it describes the routes,
// not anything behind them, and code generators fetch it unauthenticated.
func (s *Server) openAPIDoc(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPI)
}
