// Package openapi is the contract of the box's /api routes: the OpenAPI 3.1
// document built from the route table (Routes) and the Go types the
// handlers write, and a validator that checks a real answer against it.
// The document is committed as api/openapi.json and served, without a key,
// at GET /api/openapi.json; a test rebuilds it and fails when the committed
// file is stale or when the box's router and the table disagree.
//
//	doc, err := openapi.Document()          // the JSON the box serves
//	v, err := openapi.NewValidator(doc)
//	err = v.Response("POST", "/api/memory/add", 200, body)
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/fault"
)

var apiInvalid = api.ErrInvalidRequest

// Code is one error code a route answers, with its HTTP status.
type Code struct {
	Status int
	Code   string
}

// CodeOf is the code and status the box answers for err: an error with no
// sentinel is answered as "internal".
func CodeOf(err error) Code {
	e := fault.Of(err)
	if e == nil {
		return Code{500, "internal"}
	}
	return Code{api.Status(e.Kind()), e.Code()}
}

// Codes are every error code of r with its status: the route's own and
// those of every route (a path or query that is not UTF-8 text, refused
// before routing) and every authenticated route.
func (r Route) Codes() []Code {
	out := []Code{{400, "invalid_request"}}
	if !r.Public {
		out = append(out, Code{401, "unauthorized"}, Code{403, "forbidden"}, Code{503, "unavailable"}, Code{500, "internal"})
	}
	for _, e := range r.Errors {
		c := CodeOf(e)
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Method and Path split r's pattern.
func (r Route) Method() string { m, _, _ := strings.Cut(r.Pattern, " "); return m }

// Path is the route's path with its {parameters}.
func (r Route) Path() string { _, p, _ := strings.Cut(r.Pattern, " "); return p }

var pathParam = regexp.MustCompile(`\{([A-Za-z_]+)\}`)

// common are the answers of every authenticated route, each one response
// component.
var common = map[int]string{400: "InvalidRequest", 401: "Unauthorized", 403: "Forbidden", 500: "Internal", 503: "Unavailable"}

func errorResponse(status int, codes []string) map[string]any {
	return map[string]any{
		"description": http.StatusText(status) + ": " + strings.Join(codes, ", "),
		"content": map[string]any{"application/json": map[string]any{"schema": Schema{"type": "object", "required": []string{"data", "error"},
			"properties": Schema{"data": Schema{"type": "null"}, "error": Schema{"allOf": []any{
				Schema{"$ref": "#/components/schemas/ApiError"},
				Schema{"type": "object", "properties": Schema{"code": Schema{"enum": codes}}}}}}}}},
	}
}

// Document is the OpenAPI 3.1 document of Routes, as committed in
// api/openapi.json.
func Document() ([]byte, error) {
	s := newSchemas()
	paths := map[string]map[string]any{}
	for _, r := range Routes {
		op, err := operation(s, r)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", r.Pattern, err)
		}
		p := paths[r.Path()]
		if p == nil {
			p = map[string]any{}
			paths[r.Path()] = p
		}
		m := strings.ToLower(r.Method())
		if _, dup := p[m]; dup {
			return nil, fmt.Errorf("openapi: %s is listed twice", r.Pattern)
		}
		p[m] = op
	}
	s.components["ApiError"] = Schema{"type": "object", "required": []string{"code", "message"}, "additionalProperties": false,
		"properties": Schema{"code": Schema{"type": "string", "description": "A stable, machine-readable code such as memory_conflict."},
			"message": Schema{"type": "string", "description": "What went wrong, for a person."}}}
	responses := map[string]any{}
	for _, c := range (Route{}).Codes() {
		responses[common[c.Status]] = errorResponse(c.Status, []string{c.Code})
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Stackbone box API",
			"version": "1",
			"description": "Every /api route answers the envelope {\"data\": ..., \"error\": null} or " +
				"{\"data\": null, \"error\": {\"code\": \"...\", \"message\": \"...\"}} with a status that fits the code. " +
				"Every route but this document needs `Authorization: Bearer KEY`; the security requirement of each operation " +
				"names the scope its key must hold. A request body with an unknown member is a 400.",
		},
		"servers":  []any{map[string]any{"url": "http://127.0.0.1:4242", "description": "stackbone dev"}},
		"security": []any{map[string]any{"bearer": []string{}}},
		"paths":    paths,
		"components": map[string]any{
			"schemas":   s.components,
			"responses": responses,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer",
				"description": "An API key. Each operation's requirement lists the scope it needs."}},
		},
		"tags": tags(),
	}
	return json.MarshalIndent(doc, "", " ")
}

func tags() []any {
	var names []string
	for _, r := range Routes {
		if !slices.Contains(names, r.Tag) {
			names = append(names, r.Tag)
		}
	}
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"name": n, "description": tagDescriptions[n]}
	}
	return out
}

// TagDescription is what the routes of tag are about.
func TagDescription(tag string) string { return tagDescriptions[tag] }

var tagDescriptions = map[string]string{
	"meta":      "This document and what the box offers.",
	"keys":      "API keys and their scopes.",
	"memory":    "Person memory: facts and call records per agent and person, and each agent's memory settings.",
	"system":    "Box-wide settings: the extraction model and guidance, providers, models, the activity log.",
	"agents":    "The agent catalog and each agent's model chains and turn-taking.",
	"sessions":  "Conversations the box keeps, and decisions on held tool calls.",
	"runs":      "Run history.",
	"costs":     "What calls and text sessions used and cost, by the config's price table.",
	"rag":       "Retrieval: collections, documents, ingest jobs and search.",
	"voice":     "Phone calls over SIP trunks and browser test calls.",
	"campaigns": "Batch outbound calling: contacts, calling windows, a cap and retries; every attempt is a call.",
	"stores":    "Memory stores: learned and curated memories, versions and learning runs.",
	"webhooks":  "Subscriptions to the box's events, and their delivery log.",
}

func operation(s *schemas, r Route) (map[string]any, error) {
	if r.ID == "" || r.Tag == "" || r.Summary == "" || r.Status == 0 {
		return nil, fmt.Errorf("id, tag, summary and status are required")
	}
	op := map[string]any{"operationId": r.ID, "tags": []string{r.Tag}, "summary": r.Summary}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(r.Path(), -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": Schema{"type": "string"}})
	}
	for _, q := range r.Query {
		params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": Schema{"type": q.Type}})
	}
	if r.Idempotent {
		params = append(params, map[string]any{"name": "Idempotency-Key", "in": "header",
			"description": "A retried request with the same key returns the first result instead of applying it twice.",
			"schema":      Schema{"type": "string", "maxLength": 255}})
	}
	if params != nil {
		op["parameters"] = params
	}
	switch {
	case r.Public:
		op["security"] = []any{}
	case r.Scope != "":
		op["security"] = []any{map[string]any{"bearer": []string{r.Scope}}}
	}
	op["x-person"] = r.Person
	if r.Body != nil {
		media := map[string]any{"schema": s.of(r.Body)}
		if r.Example != nil {
			media["example"] = r.Example
		}
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": media}}
	}
	if r.Multipart {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"multipart/form-data": map[string]any{"schema": Schema{
			"type": "object", "required": []string{"file"}, "properties": Schema{"file": Schema{"type": "string", "contentMediaType": "application/octet-stream"},
				"id": Schema{"type": "string"}, "metadata": Schema{"type": "string", "description": "A JSON object."}}}}}}
	}
	responses := map[string]any{}
	switch {
	case r.NoContent:
		responses[strconv.Itoa(r.Status)] = map[string]any{"description": "Done; no body."}
	case r.Public:
		// The document itself, not an envelope.
		responses[strconv.Itoa(r.Status)] = map[string]any{"description": "The OpenAPI document.",
			"content": map[string]any{"application/json": map[string]any{"schema": Schema{"type": "object", "required": []string{"openapi", "paths"},
				"properties": Schema{"openapi": Schema{"type": "string"}, "paths": Schema{"type": "object"}}}}}}
	case r.Binary:
		responses[strconv.Itoa(r.Status)] = map[string]any{"description": "The file.",
			"content": map[string]any{"application/octet-stream": map[string]any{"schema": Schema{"type": "string", "contentMediaType": "application/octet-stream"}}}}
	default:
		data := Schema{}
		if r.Data != nil {
			data = s.of(r.Data)
		}
		responses[strconv.Itoa(r.Status)] = map[string]any{"description": http.StatusText(r.Status),
			"content": map[string]any{"application/json": map[string]any{"schema": Schema{"type": "object", "required": []string{"data", "error"},
				"properties": Schema{"data": data, "error": Schema{"type": "null"}}}}}}
	}
	byStatus := map[int][]string{}
	for _, c := range r.Codes() {
		byStatus[c.Status] = append(byStatus[c.Status], c.Code)
	}
	for status, codes := range byStatus {
		sort.Strings(codes)
		if name, ok := common[status]; ok && len(codes) == 1 && (!r.Public || status == 400) {
			responses[strconv.Itoa(status)] = map[string]any{"$ref": "#/components/responses/" + name}
			continue
		}
		responses[strconv.Itoa(status)] = errorResponse(status, codes)
	}
	op["responses"] = responses
	return op, nil
}
