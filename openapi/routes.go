package openapi

import (
	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/campaigns"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/stores"
	"github.com/stackbone/box/voice"
	"github.com/stackbone/box/webhooks"
)

// Route is one /api route of the contract.
type Route struct {
	// Pattern is the route as the box registers it ("POST /api/memory/add").
	Pattern string
	// ID names the operation (operationId), as the SDKs call it.
	ID      string
	Tag     string
	Summary string
	// Scope the key must hold ("" any valid key); Public routes need none.
	Scope  string
	Public bool
	// Person: a key restricted to a person may use the route for them.
	Person bool
	// Body is the request body (a Go value or a Raw schema); nil for none.
	// Multipart marks an upload.
	Body      any
	Multipart bool
	// Query parameters.
	Query []Param
	// Status is the success status; Data the schema of data (nil: any).
	// NoContent: the success answer has no body.
	Status    int
	Data      any
	NoContent bool
	// Binary: the success answer is a file, not the envelope.
	Binary bool
	// Errors the route answers besides the ones of every authenticated
	// route (unauthorized, forbidden, unavailable, internal).
	Errors []error
	// Idempotent: the route honours an Idempotency-Key header.
	Idempotent bool
	// Example is a request body as a client sends it.
	Example any
}

// Param is a query parameter.
type Param struct {
	Name, Type, Description string
}

var (
	qLimit200 = Param{"limit", "integer", "Page size, 1 to 200 (default 50)."}
	qBefore   = Param{"before", "string", "Cursor: the id of the last item of the previous page."}
	qCursor   = Param{"cursor", "string", "Cursor: next_cursor of the previous page."}
	qLimit100 = Param{"limit", "integer", "Page size, 1 to 100 (default 50)."}
)

type object = map[string]any

// Raw schemas of bodies that no exported Go type declares.
var (
	stringSchema  = object{"type": "string"}
	message       = object{"type": "object", "required": []string{"role"}, "properties": object{"role": stringSchema, "content": object{}}}
	identitiesMap = object{"type": "object", "additionalProperties": stringSchema, "description": "Identity field name to value."}
	ids           = object{"type": "object", "properties": object{"id": stringSchema, "status": stringSchema}, "required": []string{"id", "status"}}
)

func str(desc string) object { return object{"type": "string", "description": desc} }

func obj(required []string, props object) Raw {
	out := Raw{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// Routes is every /api route the box serves, in the document's order.
var Routes = []Route{
	// The edge.
	{Pattern: "GET /api/openapi.json", ID: "getOpenAPI", Tag: "meta", Summary: "This document (no key needed).", Public: true, Status: 200},
	{Pattern: "GET /api/capabilities", ID: "getCapabilities", Tag: "meta", Summary: "What this box offers, for SDKs to negotiate.", Person: true, Status: 200,
		Data: obj([]string{"capabilities"}, object{"capabilities": object{"type": "array", "items": stringSchema}})},
	{Pattern: "GET /api/keys/self", ID: "getKeySelf", Tag: "keys", Summary: "The key making the request and what it may do.", Status: 200,
		Data: Raw{"type": "object", "required": []string{"name", "scopes", "allScopes", "personScopes", "anyIdentity"}, "properties": object{
			"name": stringSchema, "scopes": object{"type": "array", "items": stringSchema}, "createdAt": object{"type": "string", "format": "date-time"},
			"allScopes": object{"type": "array", "items": stringSchema}, "personScopes": object{"type": "array", "items": stringSchema},
			"identities": object{"type": []any{"object", "null"}, "additionalProperties": stringSchema}, "anyIdentity": object{"type": "boolean"}}}},
	{Pattern: "GET /api/keys", ID: "listKeys", Tag: "keys", Summary: "Every key, live and revoked (never a secret).", Scope: auth.ScopeKeysAdmin, Status: 200, Data: []auth.Key{}},
	{Pattern: "POST /api/keys", ID: "createKey", Tag: "keys", Summary: "Create a key; its secret is shown once. A key grants only scopes it holds.", Scope: auth.ScopeKeysAdmin,
		Body: obj([]string{"name", "scopes"}, object{"name": str("1 to 100 printable characters; names stay taken after a revoke."),
			"scopes": object{"type": "array", "items": stringSchema}, "identities": identitiesMap, "anyIdentity": object{"type": "boolean"}}),
		Status: 201, Data: obj([]string{"key", "secret"}, object{"key": object{"$ref": "#/components/schemas/Key"}, "secret": stringSchema}),
		Errors: []error{apiInvalid, auth.ErrInvalidName, auth.ErrExists, auth.ErrWhomUnsaid}},
	{Pattern: "DELETE /api/keys/{name}", ID: "revokeKey", Tag: "keys", Summary: "Revoke a key.", Scope: auth.ScopeKeysAdmin, Status: 200,
		Data: obj([]string{"revoked"}, object{"revoked": stringSchema}), Errors: []error{auth.ErrNotFound}},

	// Person memory.
	{Pattern: "POST /api/memory/add", ID: "memoryAdd", Tag: "memory", Summary: "Update a person's facts from a conversation and store one call record.",
		Scope: auth.ScopeMemoryWrite, Person: true, Idempotent: true,
		Body: obj([]string{"content", "agentId", "userId"}, object{
			"content": object{"description": "A transcript string or an array of OpenAI-shaped chat messages.",
				"oneOf": []any{stringSchema, object{"type": "array", "items": message}}},
			"agentId": str("The agent's catalog name."), "userId": str("An opaque person id, preserved exactly."),
			"call": obj(nil, object{"startedAt": object{"type": "string", "format": "date-time"}, "durationSeconds": object{"type": "number"},
				"outcome": stringSchema, "runId": stringSchema}),
			"instructions": object{"type": "string", "minLength": 1, "maxLength": memory.MaxInstructionsChars},
			"model":        stringSchema, "reasoningEffort": object{"type": "string", "enum": []string{"none", "minimal", "low", "medium", "high", "xhigh"}}}),
		Example: object{"content": []any{
			object{"role": "user", "content": "I am interested in the AI master. Call me after 16:00."},
			object{"role": "assistant", "content": "I will arrange an afternoon follow-up."}},
			"agentId": "support", "userId": "+34111111111",
			"call": object{"startedAt": "2026-10-26T09:00:00.000Z", "durationSeconds": 83, "outcome": "scheduled"}},
		Status: 200, Data: memory.AddResult{},
		Errors: []error{memory.ErrInvalidRequest, identity.ErrInvalid, identity.ErrForbidden, memory.ErrUnknownAgent, memory.ErrModelFailed,
			memory.ErrInvalidModelOutput, memory.ErrConflict, memory.ErrSchemaMissing, memory.ErrUnavailable, memory.ErrPersistFailed}},
	{Pattern: "POST /api/memory/recall", ID: "memoryRecall", Tag: "memory", Summary: "Every fact of a person and their newest call records first.",
		Scope: auth.ScopeMemoryRead, Person: true,
		Body: obj([]string{"agentId", "userId"}, object{"agentId": stringSchema, "userId": stringSchema,
			"calls": object{"type": "integer", "minimum": 0, "maximum": 100, "default": 5}}),
		Example: object{"agentId": "support", "userId": "+34111111111", "calls": 3},
		Status:  200, Data: memory.RecallResult{},
		Errors: []error{memory.ErrInvalidRequest, identity.ErrInvalid, identity.ErrForbidden, memory.ErrUnknownAgent, memory.ErrSchemaMissing, memory.ErrUnavailable}},
	{Pattern: "POST /api/memory/delete-all", ID: "memoryDeleteAll", Tag: "memory", Summary: "Delete every fact and call record of one person for one agent.",
		Scope: auth.ScopeMemoryWrite, Person: true,
		Body:    obj([]string{"agentId", "userId"}, object{"agentId": stringSchema, "userId": stringSchema}),
		Example: object{"agentId": "support", "userId": "+34111111111"},
		Status:  200, Data: obj([]string{"deleted"}, object{"deleted": object{"type": "integer"}}),
		Errors: []error{memory.ErrInvalidRequest, identity.ErrInvalid, identity.ErrForbidden, memory.ErrUnknownAgent, memory.ErrSchemaMissing, memory.ErrUnavailable}},
	{Pattern: "GET /api/memory/settings/{agentId}", ID: "getMemorySettings", Tag: "memory", Summary: "An agent's memory settings: overrides, values in force and their origins.",
		Scope: auth.ScopeConfigRead, Status: 200, Data: memory.View{}, Errors: []error{memory.ErrUnknownAgent, memory.ErrUnavailable}},
	{Pattern: "PUT /api/memory/settings/{agentId}", ID: "putMemorySettings", Tag: "memory", Summary: "Save one or more fields; omitted fields stay unchanged.",
		Scope: auth.ScopeConfigWrite, Body: obj(nil, object{"read": object{"type": "boolean"}, "save": object{"type": "boolean"},
			"instructions": stringSchema, "identityKey": stringSchema}),
		Status: 200, Data: memory.View{}, Errors: []error{memory.ErrInvalidRequest, memory.ErrUnknownAgent, memory.ErrIdentityKeyFixed, memory.ErrUnavailable}},
	{Pattern: "DELETE /api/memory/settings/{agentId}", ID: "resetMemorySettings", Tag: "memory", Summary: "Remove one override (?field=) or all of them.",
		Scope: auth.ScopeConfigWrite, Query: []Param{{"field", "string", "read, save or instructions"}},
		Status: 200, Data: memory.View{}, Errors: []error{memory.ErrInvalidRequest, memory.ErrUnknownAgent, memory.ErrUnavailable}},
	{Pattern: "GET /api/system/memory-extraction", ID: "getMemoryExtraction", Tag: "system", Summary: "The extraction model selection and guidance.",
		Scope: auth.ScopeConfigRead, Status: 200, Data: memory.ExtractionSettings{}, Errors: []error{memory.ErrUnavailable}},
	{Pattern: "PUT /api/system/memory-extraction", ID: "putMemoryExtraction", Tag: "system", Summary: "Select the extraction model.",
		Scope: auth.ScopeConfigWrite, Body: obj(nil, object{"model": object{"type": []any{"string", "null"}}, "reasoningEffort": object{"type": []any{"string", "null"}}}),
		Status: 200, Data: memory.ExtractionSettings{}, Errors: []error{apiInvalid, memory.ErrInvalidRequest, memory.ErrUnavailable}},
	{Pattern: "PUT /api/system/memory-extraction/prompt", ID: "putMemoryExtractionPrompt", Tag: "system", Summary: "Save the guidance draft.",
		Scope: auth.ScopeConfigWrite, Body: obj([]string{"text"}, object{"text": stringSchema}), Status: 200, Data: memory.ExtractionSettings{},
		Errors: []error{apiInvalid, memory.ErrInvalidRequest, memory.ErrUnavailable}},
	{Pattern: "POST /api/system/memory-extraction/prompt/publish", ID: "publishMemoryExtractionPrompt", Tag: "system", Summary: "Publish the guidance draft.",
		Scope: auth.ScopeConfigWrite, Status: 200, Data: memory.ExtractionSettings{}, Errors: []error{apiInvalid, memory.ErrInvalidRequest, memory.ErrUnavailable}},
	{Pattern: "DELETE /api/system/memory-extraction/prompt", ID: "resetMemoryExtractionPrompt", Tag: "system", Summary: "Restore the built-in guidance.",
		Scope: auth.ScopeConfigWrite, Status: 200, Data: memory.ExtractionSettings{}, Errors: []error{memory.ErrUnavailable}},
	{Pattern: "GET /api/activity", ID: "listActivity", Tag: "system", Summary: "The operator activity log.", Scope: auth.ScopeConfigRead,
		Query: []Param{qLimit200, {"subject", "string", "Only entries about this subject."}}, Status: 200,
		Data: Raw{"type": "array", "items": object{"type": "object", "required": []string{"id", "at", "actor", "action", "subject", "fields"}, "properties": object{
			"id": object{"type": "integer"}, "at": object{"type": "string", "format": "date-time"}, "actor": stringSchema, "action": stringSchema,
			"subject": stringSchema, "fields": object{"type": []any{"array", "null"}, "items": stringSchema}}}},
		Errors: []error{apiInvalid, memory.ErrUnavailable}},
	{Pattern: "GET /api/system/providers", ID: "listProviders", Tag: "system", Summary: "The model providers' circuits and their recent failures.", Scope: auth.ScopeConfigRead, Status: 200, Data: []provider.CircuitView{}},
	{Pattern: "GET /api/system/models", ID: "listModels", Tag: "system", Summary: "The model ids the configuration knows of.", Scope: auth.ScopeConfigRead, Status: 200, Data: Raw{}},

	// Agents and sessions.
	{Pattern: "GET /api/agents", ID: "listAgents", Tag: "agents", Summary: "Every declared agent with its model chains in force.", Scope: auth.ScopeConfigRead,
		Status: 200, Data: Raw{"type": "array", "items": object{"type": "object", "required": []string{"name", "model", "fallbacks"},
			"properties": object{"name": stringSchema, "model": stringSchema, "fallbacks": object{"type": "array", "items": stringSchema},
				"stt": object{"type": []any{"array", "null"}, "items": stringSchema}, "tts": object{"type": []any{"array", "null"}, "items": stringSchema}, "origins": object{"type": "object"},
				"line": object{"type": "object", "description": "The agent's phone line as its config sets it: answeringMachine, keypad, transferTargets, recording, analysisFields, analysisCriteria."}}}},
		Errors: []error{agent.ErrStorage}},
	{Pattern: "GET /api/agents/{name}/models", ID: "getAgentModels", Tag: "agents", Summary: "An agent's model and speech chains, with Studio's overrides.",
		Scope: auth.ScopeConfigRead, Status: 200, Data: agent.ChainsView{}, Errors: []error{agent.ErrUnknownAgent, agent.ErrStorage}},
	{Pattern: "PUT /api/agents/{name}/models", ID: "putAgentModels", Tag: "agents", Summary: "Override an agent's chains.", Scope: auth.ScopeConfigWrite,
		Body: obj(nil, object{"model": object{"type": []any{"array", "null"}, "items": stringSchema}, "stt": object{"type": []any{"array", "null"}, "items": stringSchema},
			"tts": object{"type": []any{"array", "null"}, "items": stringSchema}}),
		Status: 200, Data: agent.ChainsView{}, Errors: []error{agent.ErrInvalidRequest, agent.ErrUnknownAgent, agent.ErrStorage}},
	{Pattern: "DELETE /api/agents/{name}/models", ID: "resetAgentModels", Tag: "agents", Summary: "Remove an agent's chain overrides.", Scope: auth.ScopeConfigWrite,
		Query: []Param{{"field", "string", "model, stt or tts"}}, Status: 200, Data: agent.ChainsView{}, Errors: []error{agent.ErrInvalidRequest, agent.ErrUnknownAgent, agent.ErrStorage}},
	{Pattern: "GET /api/agents/{name}/turntaking", ID: "getAgentTurnTaking", Tag: "agents",
		Summary: "An agent's turn-taking settings in force (VAD, endpointing, turn detection, interruptions), with Studio's overrides and each one's origin.",
		Scope:   auth.ScopeConfigRead, Status: 200, Data: agent.TurnTakingView{}, Errors: []error{agent.ErrUnknownAgent, agent.ErrStorage}},
	{Pattern: "PUT /api/agents/{name}/turntaking", ID: "putAgentTurnTaking", Tag: "agents",
		Summary: "Override some of an agent's turn-taking settings (durations in milliseconds); the others stay.", Scope: auth.ScopeConfigWrite,
		Body: agent.TurnTakingPatch{}, Example: map[string]any{"endpointingMode": "cautious", "minWords": 3},
		Status: 200, Data: agent.TurnTakingView{}, Errors: []error{agent.ErrInvalidRequest, agent.ErrUnknownAgent, agent.ErrStorage}},
	{Pattern: "DELETE /api/agents/{name}/turntaking", ID: "resetAgentTurnTaking", Tag: "agents", Summary: "Remove an agent's turn-taking overrides.",
		Scope: auth.ScopeConfigWrite, Query: []Param{{"field", "string", "One setting (vad, endpointingMode, minWords, resumeAfterMs...); all when absent."}},
		Status: 200, Data: agent.TurnTakingView{}, Errors: []error{agent.ErrInvalidRequest, agent.ErrUnknownAgent, agent.ErrStorage}},
	{Pattern: "GET /api/sessions", ID: "listSessions", Tag: "sessions", Summary: "Sessions, newest activity first.", Scope: auth.ScopeSessionsRead,
		Query:  []Param{qLimit200, qBefore, {"agent", "string", "Only this agent's."}, {"status", "string", "Only sessions in this status."}},
		Status: 200, Data: []agent.SessionSummary{}, Errors: []error{apiInvalid, agent.ErrStorage}},
	{Pattern: "GET /api/sessions/{id}", ID: "getSession", Tag: "sessions", Summary: "A session with its transcript and any held tool call.", Scope: auth.ScopeSessionsRead,
		Status: 200, Data: agent.SessionDetail{}, Errors: []error{agent.ErrSessionNotFound, agent.ErrStorage}},
	{Pattern: "POST /api/sessions/{id}/decision", ID: "decideSession", Tag: "sessions", Summary: "Approve or reject the held tool call; the rest of the turn runs.",
		Scope: auth.ScopeSessionsWrite, Body: obj([]string{"decision"}, object{"decision": object{"type": "string", "enum": []string{"approve", "reject"}}, "reason": stringSchema}),
		Status: 200, Data: Raw{"type": "object"},
		Errors: []error{agent.ErrInvalidRequest, agent.ErrSessionNotFound, agent.ErrNoDecisionPending, agent.ErrSessionBusy, agent.ErrProvider, agent.ErrProviderTimeout, agent.ErrStorage}},

	// Runs.
	{Pattern: "GET /api/runs", ID: "listRuns", Tag: "runs", Summary: "Run history, newest first.", Scope: auth.ScopeRunsRead,
		Query:  []Param{qLimit200, qBefore, {"kind", "string", "Only runs of this kind."}, {"agent", "string", "Only this agent's."}, {"status", "string", "Only runs in this status."}},
		Status: 200, Data: []runs.Run{}, Errors: []error{apiInvalid}},
	{Pattern: "GET /api/runs/{id}", ID: "getRun", Tag: "runs", Summary: "One run.", Scope: auth.ScopeRunsRead, Status: 200, Data: runs.Run{}, Errors: []error{runs.ErrNotFound}},

	// Costs.
	{Pattern: "GET /api/costs", ID: "costTotals", Tag: "costs", Summary: "What calls and text turns used and cost, totalled per agent or per day (UTC).",
		Scope: auth.ScopeRunsRead,
		Query: []Param{{"by", "string", "agent (default) or day"}, {"agent", "string", "Only this agent's."},
			{"from", "string", "RFC 3339: started at or after."}, {"to", "string", "RFC 3339: started before."}},
		Status: 200, Data: costs.Totals{}, Errors: []error{apiInvalid, identity.ErrForbidden, costs.ErrUnavailable}},
	{Pattern: "GET /api/costs/sessions/{id}", ID: "getSessionCost", Tag: "costs", Summary: "What a text session's turns used and cost.",
		Scope: auth.ScopeSessionsRead, Status: 200, Data: costs.SessionCost{}, Errors: []error{costs.ErrNotFound, costs.ErrUnavailable}},

	// RAG.
	{Pattern: "POST /api/rag/collections", ID: "createCollection", Tag: "rag", Summary: "Create a collection.", Scope: auth.ScopeRAGWrite,
		Body: rag.CreateCollection{}, Status: 201, Data: rag.Collection{}, Errors: []error{rag.ErrInvalidRequest, rag.ErrCollectionExists, rag.ErrUnavailable}},
	{Pattern: "GET /api/rag/collections", ID: "listCollections", Tag: "rag", Summary: "Every collection with its counts.", Scope: auth.ScopeRAGRead,
		Status: 200, Data: []rag.Collection{}, Errors: []error{rag.ErrUnavailable}},
	{Pattern: "POST /api/rag/collections/{name}/documents", ID: "uploadDocument", Tag: "rag", Summary: "Upload a .txt, .md or .pdf file (up to 25 MB); ingest runs in the background.",
		Scope: auth.ScopeRAGWrite, Multipart: true, Status: 202, Data: rag.UploadResult{},
		Errors: []error{rag.ErrInvalidRequest, rag.ErrCollectionNotFound, rag.ErrDocumentConflict, rag.ErrFileTooLarge, rag.ErrUnsupportedType, rag.ErrIngestUnavailable, rag.ErrUnavailable}},
	{Pattern: "GET /api/rag/collections/{name}/documents", ID: "listDocuments", Tag: "rag", Summary: "A collection's documents.", Scope: auth.ScopeRAGRead,
		Query: []Param{{"status", "string", "Only documents in this status."}, qBefore, {"limit", "integer", "Page size."}, {"offset", "integer", "Documents to skip."},
			{"filter", "string", "A JSON object that metadata must contain."}},
		Status: 200, Data: []rag.Document{}, Errors: []error{rag.ErrInvalidRequest, rag.ErrCollectionNotFound, rag.ErrUnavailable}},
	{Pattern: "GET /api/rag/documents/{id}", ID: "getDocument", Tag: "rag", Summary: "One document.", Scope: auth.ScopeRAGRead,
		Status: 200, Data: rag.Document{}, Errors: []error{rag.ErrDocumentNotFound, rag.ErrUnavailable}},
	{Pattern: "DELETE /api/rag/documents/{id}", ID: "deleteDocument", Tag: "rag", Summary: "Delete a document and its chunks.", Scope: auth.ScopeRAGWrite,
		Status: 200, Data: obj([]string{"id", "deleted"}, object{"id": stringSchema, "deleted": object{"type": "boolean"}}), Errors: []error{rag.ErrDocumentNotFound, rag.ErrUnavailable}},
	{Pattern: "GET /api/rag/originals/{id}", ID: "downloadOriginal", Tag: "rag", Summary: "The uploaded file itself.", Scope: auth.ScopeRAGRead,
		Status: 200, Binary: true, Errors: []error{rag.ErrDocumentNotFound, rag.ErrUnavailable}},
	{Pattern: "POST /api/rag/ingest", ID: "ragIngest", Tag: "rag", Summary: "Store a document's chunks; the same id replaces its chunks.", Scope: auth.ScopeRAGWrite,
		Body: rag.IngestRequest{}, Example: object{"id": "returns.md", "collection": "help-center",
			"chunks": []any{object{"content": "You can return an item within 30 days of delivery."}}},
		Status: 200, Data: rag.Document{},
		Errors: []error{rag.ErrInvalidRequest, rag.ErrCollectionNotFound, rag.ErrDocumentConflict, rag.ErrModelMismatch, rag.ErrEmbeddingFailed, rag.ErrProviderNotConfigured, rag.ErrUnavailable}},
	{Pattern: "POST /api/rag/retrieve", ID: "ragRetrieve", Tag: "rag", Summary: "The chunks of one collection closest to a text, each with a score from 0 to 1.", Scope: auth.ScopeRAGRead,
		Body: rag.RetrieveRequest{}, Example: object{"text": "How long do I have to return an item?", "topK": 3, "namespace": "help-center"},
		Status: 200, Data: []rag.Hit{},
		Errors: []error{rag.ErrInvalidRequest, rag.ErrCollectionNotFound, rag.ErrModelMismatch, rag.ErrEmbeddingFailed, rag.ErrProviderNotConfigured, rag.ErrUnavailable}},
	{Pattern: "GET /api/rag/jobs", ID: "listIngestJobs", Tag: "rag", Summary: "Background ingest jobs.", Scope: auth.ScopeRAGRead,
		Query:  []Param{{"state", "string", "Only jobs in this state."}, {"collection", "string", "Only this collection's."}, {"limit", "integer", "Page size."}},
		Status: 200, Data: []rag.Job{}, Errors: []error{rag.ErrInvalidRequest, rag.ErrUnavailable}},
	{Pattern: "GET /api/rag/jobs/{id}", ID: "getIngestJob", Tag: "rag", Summary: "One ingest job.", Scope: auth.ScopeRAGRead, Status: 200, Data: rag.Job{},
		Errors: []error{rag.ErrJobNotFound, rag.ErrUnavailable}},
	{Pattern: "POST /api/rag/jobs/{id}/retry", ID: "retryIngestJob", Tag: "rag", Summary: "Retry a failed ingest job.", Scope: auth.ScopeRAGWrite, Status: 200, Data: rag.Job{},
		Errors: []error{rag.ErrJobNotFound, rag.ErrInvalidRequest, rag.ErrIngestUnavailable, rag.ErrUnavailable}},
	{Pattern: "POST /api/rag/jobs/{id}/cancel", ID: "cancelIngestJob", Tag: "rag", Summary: "Cancel an ingest job.", Scope: auth.ScopeRAGWrite, Status: 200, Data: rag.Job{},
		Errors: []error{rag.ErrJobNotFound, rag.ErrInvalidRequest, rag.ErrIngestUnavailable, rag.ErrUnavailable}},

	// Voice.
	{Pattern: "POST /api/voice/calls", ID: "dialCall", Tag: "voice", Summary: "Place an outbound phone call through a trunk.", Scope: auth.ScopeVoice, Person: true,
		Body: obj([]string{"agent", "to"}, object{"agent": stringSchema, "to": str("E.164 number."), "trunk": stringSchema, "identities": identitiesMap,
			"answeringMachine": obj(nil, object{"detect": str("off, outbound or all."), "voicemail": str("hangup or message."),
				"message": str("Said after a voicemail's beep; {field} placeholders take the call's identities."), "menu": str("talk or hangup.")})}),
		Status: 202, Data: obj([]string{"callId"}, object{"callId": stringSchema}),
		Errors: []error{sip.ErrInvalidDial, identity.ErrForbidden, voice.ErrUnknownAgent, sip.ErrNoTrunk, sip.ErrAtCapacity, sip.ErrNotStarted, sip.ErrDialFailed, voice.ErrDraining}},
	{Pattern: "GET /api/voice/calls", ID: "listCalls", Tag: "voice", Summary: "Calls, newest first, without transcripts.", Scope: auth.ScopeVoice,
		Query: []Param{qLimit200, qBefore, {"direction", "string", "inbound, outbound or browser"}, {"agent", "string", "Only this agent's."},
			{"status", "string", "Only calls in this status."}, {"outcome", "string", "Only calls with this outcome."}, {"number", "string", "An exact phone number."},
			{"from", "string", "RFC 3339: started at or after."}, {"to", "string", "RFC 3339: started before."},
			{"success", "string", "true or false: only calls whose analysis judged every criterion passed, or not."},
			{"field.NAME", "string", "Only calls whose analysis field NAME holds this value (true, false, null and numbers as themselves); up to 10."}},
		Status: 200, Data: []voice.CallRecord{}, Errors: []error{voice.ErrInvalidRequest, voice.ErrUnavailable}},
	{Pattern: "GET /api/voice/calls/{id}", ID: "getCall", Tag: "voice", Summary: "One call with its heard transcript.", Scope: auth.ScopeVoice,
		Status: 200, Data: voice.CallRecord{}, Errors: []error{voice.ErrNotFound, voice.ErrUnavailable}},
	{Pattern: "GET /api/voice/calls/{id}/recording", ID: "getCallRecording", Tag: "voice", Summary: "The call's recording: two channels, the caller left and the agent right.", Scope: auth.ScopeVoice,
		Status: 200, Binary: true, Errors: []error{voice.ErrNotFound, voice.ErrUnavailable}},
	{Pattern: "POST /api/voice/calls/{id}/hangup", ID: "hangupCall", Tag: "voice", Summary: "End a ringing or running call from outside.", Scope: auth.ScopeVoice,
		Status: 202, Data: Raw(ids), Errors: []error{voice.ErrNotFound, voice.ErrCallEnded, voice.ErrUnavailable}},
	{Pattern: "POST /api/voice/rooms", ID: "createRoom", Tag: "voice", Summary: "Open a browser test call for an agent.", Scope: auth.ScopeVoice, Person: true,
		Body:   obj([]string{"agent"}, object{"agent": stringSchema, "identities": identitiesMap}),
		Status: 201, Data: rooms.View{},
		Errors: []error{rooms.ErrInvalidRequest, identity.ErrInvalid, identity.ErrForbidden, voice.ErrUnknownAgent, rooms.ErrAtCapacity, rooms.ErrBackend, rooms.ErrClosed, voice.ErrDraining}},
	{Pattern: "GET /api/voice/rooms", ID: "listRooms", Tag: "voice", Summary: "The browser calls this box carries.", Scope: auth.ScopeVoice, Status: 200, Data: []rooms.View{}},
	{Pattern: "GET /api/voice/rooms/{id}", ID: "getRoom", Tag: "voice", Summary: "One browser call.", Scope: auth.ScopeVoice, Person: true, Status: 200, Data: rooms.View{},
		Errors: []error{rooms.ErrNotFound, identity.ErrForbidden}},
	{Pattern: "DELETE /api/voice/rooms/{id}", ID: "endRoom", Tag: "voice", Summary: "End a browser call.", Scope: auth.ScopeVoice, Person: true, Status: 202, Data: Raw(ids),
		Errors: []error{rooms.ErrNotFound, identity.ErrForbidden, rooms.ErrEnded}},
	{Pattern: "POST /api/voice/rooms/{id}/offer", ID: "offerRoom", Tag: "voice", Summary: "The browser's SDP offer, answered by the embedded peer.", Scope: auth.ScopeVoice, Person: true,
		Body:   obj([]string{"type", "sdp"}, object{"type": object{"type": "string", "enum": []string{"offer"}}, "sdp": stringSchema}),
		Status: 200, Data: obj([]string{"type", "sdp"}, object{"type": stringSchema, "sdp": stringSchema}),
		Errors: []error{rooms.ErrInvalidRequest, rooms.ErrNotFound, identity.ErrForbidden, rooms.ErrWrongBackend, rooms.ErrAlreadyJoined, rooms.ErrEnded, rooms.ErrBackend}},

	// Memory stores.
	{Pattern: "POST /api/memory_stores", ID: "createStore", Tag: "stores", Summary: "Create a curated memory store.", Scope: auth.ScopeStoresWrite,
		Body:   obj([]string{"name"}, object{"name": stringSchema, "description": stringSchema, "agent_id": object{"type": []any{"string", "null"}}}),
		Status: 201, Data: stores.Store{}, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores", ID: "listStores", Tag: "stores", Summary: "Memory stores.", Scope: auth.ScopeStoresRead,
		Query: []Param{qLimit100, qCursor, {"agent_id", "string", "Only this agent's."}, {"origin", "string", "curated or reflection"},
			{"status", "string", "active or archived"}, {"include_archived", "boolean", "Also archived stores."}},
		Status: 200, Data: stores.StorePage{}, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores/{store}", ID: "getStore", Tag: "stores", Summary: "One store.", Scope: auth.ScopeStoresRead, Status: 200, Data: stores.Store{}, Errors: storeErrs},
	{Pattern: "POST /api/memory_stores/{store}", ID: "updateStore", Tag: "stores", Summary: "Rename or redescribe a store.", Scope: auth.ScopeStoresWrite,
		Body: obj(nil, object{"name": stringSchema, "description": stringSchema}), Status: 200, Data: stores.Store{}, Errors: storeErrs},
	{Pattern: "PATCH /api/memory_stores/{store}", ID: "patchStore", Tag: "stores", Summary: "Rename or redescribe a store.", Scope: auth.ScopeStoresWrite,
		Body: obj(nil, object{"name": stringSchema, "description": stringSchema}), Status: 200, Data: stores.Store{}, Errors: storeErrs},
	{Pattern: "POST /api/memory_stores/{store}/archive", ID: "archiveStore", Tag: "stores", Summary: "Make a curated store read-only.", Scope: auth.ScopeStoresWrite,
		Status: 204, NoContent: true, Errors: storeErrs},
	{Pattern: "DELETE /api/memory_stores/{store}", ID: "deleteStore", Tag: "stores", Summary: "Delete a curated store and its memories.", Scope: auth.ScopeStoresWrite,
		Status: 204, NoContent: true, Errors: storeErrs},
	{Pattern: "POST /api/memory_stores/{store}/memories", ID: "createMemory", Tag: "stores", Summary: "Add a memory; an existing path is refused.", Scope: auth.ScopeStoresWrite,
		Body:   obj([]string{"path", "summary", "content"}, object{"path": stringSchema, "summary": stringSchema, "content": stringSchema}),
		Status: 201, Data: stores.Memory{}, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores/{store}/memories", ID: "listMemories", Tag: "stores", Summary: "One level of a store, like a directory.", Scope: auth.ScopeStoresRead,
		Query: []Param{{"path_prefix", "string", "Whole path segments, e.g. /releases/."}, qLimit100, qCursor}, Status: 200, Data: stores.Listing{}, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores/{store}/memories/search", ID: "searchMemories", Tag: "stores", Summary: "Memories by content.", Scope: auth.ScopeStoresRead,
		Query: []Param{{"query", "string", "What to look for."}, qLimit100}, Status: 200, Data: stores.SearchResult{}, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores/{store}/memory", ID: "getMemoryByPath", Tag: "stores", Summary: "A memory by its path.", Scope: auth.ScopeStoresRead,
		Query: []Param{{"path", "string", "The memory's path."}}, Status: 200, Data: stores.Memory{}, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores/{store}/memories/{memory}", ID: "getMemory", Tag: "stores", Summary: "A memory by id.", Scope: auth.ScopeStoresRead,
		Status: 200, Data: stores.Memory{}, Errors: storeErrs},
	{Pattern: "POST /api/memory_stores/{store}/memories/{memory}", ID: "updateMemory", Tag: "stores", Summary: "Change a memory; content_sha256 guards a concurrent change.",
		Scope: auth.ScopeStoresWrite, Body: obj(nil, object{"path": stringSchema, "summary": stringSchema, "content": stringSchema, "content_sha256": stringSchema}),
		Status: 200, Data: stores.Memory{}, Errors: storeErrs},
	{Pattern: "DELETE /api/memory_stores/{store}/memories/{memory}", ID: "deleteMemory", Tag: "stores", Summary: "Remove a memory from every read path.", Scope: auth.ScopeStoresWrite,
		Status: 204, NoContent: true, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores/{store}/memory_versions", ID: "listVersions", Tag: "stores", Summary: "A store's history, newest first.", Scope: auth.ScopeStoresRead,
		Query: []Param{{"memory_id", "string", "Only this memory's."}, qLimit100, qCursor}, Status: 200, Data: stores.VersionPage{}, Errors: storeErrs},
	{Pattern: "GET /api/memory_stores/{store}/memory_versions/{version}", ID: "getVersion", Tag: "stores", Summary: "One version with its content unless redacted.",
		Scope: auth.ScopeStoresRead, Status: 200, Data: stores.VersionDetail{}, Errors: storeErrs},
	{Pattern: "POST /api/memory_stores/{store}/memory_versions/{version}/restore", ID: "restoreVersion", Tag: "stores", Summary: "Write a version's content back as a new version.",
		Scope: auth.ScopeStoresWrite, Status: 200, Data: stores.Memory{}, Errors: storeErrs},
	{Pattern: "POST /api/memory_stores/{store}/memory_versions/{version}/redact", ID: "redactVersion", Tag: "stores", Summary: "Remove a version's content for good.",
		Scope: auth.ScopeStoresWrite, Status: 204, NoContent: true, Errors: storeErrs},
	{Pattern: "GET /api/agents/{agent}/memory", ID: "getAgentMemory", Tag: "stores", Summary: "An agent's learned memory store.", Scope: auth.ScopeStoresRead, Status: 200, Data: stores.AgentMemory{}, Errors: storeErrs},
	{Pattern: "GET /api/agents/{agent}/memories", ID: "listAgentMemories", Tag: "stores", Summary: "An agent's learned memories.", Scope: auth.ScopeStoresRead,
		Query: []Param{qLimit100, qCursor}, Status: 200, Data: stores.AgentMemories{}, Errors: storeErrs},
	{Pattern: "GET /api/agents/{agent}/memory/activity", ID: "listAgentMemoryActivity", Tag: "stores", Summary: "Changes to an agent's learned memory.", Scope: auth.ScopeStoresRead,
		Query: []Param{qLimit100, qCursor}, Status: 200, Data: Raw{"type": "object"}, Errors: storeErrs},
	{Pattern: "GET /api/agents/{agent}/learning", ID: "getLearning", Tag: "stores", Summary: "An agent's learning settings.", Scope: auth.ScopeStoresRead, Status: 200, Data: stores.Learning{}, Errors: storeErrs},
	{Pattern: "PATCH /api/agents/{agent}/learning", ID: "setLearning", Tag: "stores", Summary: "Choose the memory model (or null).", Scope: auth.ScopeStoresWrite,
		Body: obj(nil, object{"memory_model_ref": object{"type": []any{"string", "null"}}}), Status: 200, Data: stores.Learning{}, Errors: storeErrs},
	{Pattern: "GET /api/agent_memory_summaries", ID: "listAgentMemorySummaries", Tag: "stores", Summary: "Every agent's learned memory at a glance.", Scope: auth.ScopeStoresRead,
		Status: 200, Data: obj([]string{"agents"}, object{"agents": object{"type": "array"}}), Errors: storeErrs},
	{Pattern: "GET /api/reflections", ID: "listReflections", Tag: "stores", Summary: "Learning runs, newest first.", Scope: auth.ScopeStoresRead,
		Query: []Param{qLimit100, qCursor, {"agent_id", "string", "Only this agent's."}}, Status: 200, Data: stores.ReflectionPage{}, Errors: storeErrs},
	{Pattern: "GET /api/reflections/{reflection}", ID: "getReflection", Tag: "stores", Summary: "One learning run.", Scope: auth.ScopeStoresRead, Status: 200, Data: stores.Reflection{}, Errors: storeErrs},

	{Pattern: "GET /api/voice/campaigns", ID: "listCampaigns", Tag: "campaigns", Summary: "Campaigns, newest first, each with its progress.", Scope: auth.ScopeVoice,
		Status: 200, Data: []campaigns.Campaign{}, Errors: campaignErrs},
	{Pattern: "POST /api/voice/campaigns", ID: "createCampaign", Tag: "campaigns", Summary: "Create a draft campaign: an agent, a trunk, calling windows, a cap on calls up at once and a retry policy.",
		Scope: auth.ScopeVoice, Body: campaigns.NewCampaign{}, Status: 201, Data: campaigns.Campaign{}, Errors: campaignErrs,
		Example: map[string]any{"name": "Renewals", "agent": "receptionist", "maxConcurrent": 20,
			"windows": []map[string]any{{"days": []string{"mon", "tue", "wed", "thu", "fri"}, "start": "09:00", "end": "18:00"}},
			"retry":   map[string]any{"busy": map[string]any{"attempts": 2, "delay": "10m"}, "noAnswer": map[string]any{"attempts": 2, "delay": "1h"}}}},
	{Pattern: "GET /api/voice/campaigns/{id}", ID: "getCampaign", Tag: "campaigns", Summary: "One campaign with its progress (contacts by state and by outcome).", Scope: auth.ScopeVoice,
		Status: 200, Data: campaigns.Campaign{}, Errors: campaignErrs},
	{Pattern: "DELETE /api/voice/campaigns/{id}", ID: "deleteCampaign", Tag: "campaigns", Summary: "Delete a campaign that is not running, with its contacts (its calls stay).", Scope: auth.ScopeVoice,
		Status: 204, NoContent: true, Errors: campaignErrs},
	{Pattern: "POST /api/voice/campaigns/{id}/contacts", ID: "addCampaignContacts", Tag: "campaigns",
		Summary: "Add contacts, all or none: JSON ({contacts: [...]}) or text/csv with a header (number, zone, identity.NAME, and variable columns); bad lines are named.",
		Scope:   auth.ScopeVoice, Body: struct {
			Contacts []campaigns.ContactInput `json:"contacts"`
		}{}, Status: 201, Data: obj([]string{"added"}, object{"added": object{"type": "integer"}}), Errors: campaignErrs},
	{Pattern: "GET /api/voice/campaigns/{id}/contacts", ID: "listCampaignContacts", Tag: "campaigns", Summary: "A campaign's contacts in upload order.", Scope: auth.ScopeVoice,
		Query: []Param{{"state", "string", "Only contacts in this state: waiting, queued, calling, done, failed or cancelled."},
			{"after", "integer", "Only contacts after this seq (the last of the previous page)."}, {"limit", "integer", "Page size, 1 to 1000 (default 100)."}},
		Status: 200, Data: []campaigns.Contact{}, Errors: campaignErrs},
	{Pattern: "POST /api/voice/campaigns/{id}/start", ID: "startCampaign", Tag: "campaigns", Summary: "Start a draft campaign that has contacts.", Scope: auth.ScopeVoice,
		Status: 200, Data: campaigns.Campaign{}, Errors: campaignErrs},
	{Pattern: "POST /api/voice/campaigns/{id}/pause", ID: "pauseCampaign", Tag: "campaigns", Summary: "Stop new attempts (calls up go on).", Scope: auth.ScopeVoice,
		Status: 200, Data: campaigns.Campaign{}, Errors: campaignErrs},
	{Pattern: "POST /api/voice/campaigns/{id}/resume", ID: "resumeCampaign", Tag: "campaigns", Summary: "Run a paused campaign again.", Scope: auth.ScopeVoice,
		Status: 200, Data: campaigns.Campaign{}, Errors: campaignErrs},
	{Pattern: "POST /api/voice/campaigns/{id}/cancel", ID: "cancelCampaign", Tag: "campaigns", Summary: "End a campaign: waiting contacts are cancelled; calls up go on without retries.", Scope: auth.ScopeVoice,
		Status: 200, Data: campaigns.Campaign{}, Errors: campaignErrs},

	{Pattern: "GET /api/webhooks", ID: "listWebhooks", Tag: "webhooks", Summary: "Webhook subscriptions, newest first (without secrets).", Scope: auth.ScopeConfigRead,
		Status: 200, Data: []webhooks.Subscription{}, Errors: webhookErrs},
	{Pattern: "POST /api/webhooks", ID: "createWebhook", Tag: "webhooks", Summary: "Subscribe a URL to event types; the answer holds the signing secret, shown once.",
		Scope: auth.ScopeConfigWrite, Body: webhooks.NewSubscription{}, Status: 201, Data: webhooks.Subscription{}, Errors: webhookErrs},
	{Pattern: "GET /api/webhooks/event-types", ID: "listWebhookEventTypes", Tag: "webhooks", Summary: "The event types a subscription may ask for.", Scope: auth.ScopeConfigRead,
		Status: 200, Data: []string{}},
	{Pattern: "GET /api/webhooks/{id}", ID: "getWebhook", Tag: "webhooks", Summary: "One subscription (without its secret).", Scope: auth.ScopeConfigRead,
		Status: 200, Data: webhooks.Subscription{}, Errors: webhookErrs},
	{Pattern: "DELETE /api/webhooks/{id}", ID: "deleteWebhook", Tag: "webhooks", Summary: "Delete a subscription, its deliveries and their log.", Scope: auth.ScopeConfigWrite,
		Status: 200, Data: obj([]string{"id", "deleted"}, object{"id": stringSchema, "deleted": object{"type": "boolean"}}), Errors: webhookErrs},
	{Pattern: "GET /api/webhooks/{id}/deliveries", ID: "listWebhookDeliveries", Tag: "webhooks", Summary: "A subscription's deliveries, newest first, each with its attempts.",
		Scope: auth.ScopeConfigRead, Query: []Param{qLimit200, {"status", "string", "Only deliveries in this status: pending, retrying, delivered or failed."}, {"type", "string", "Only events of this type."}},
		Status: 200, Data: []webhooks.Delivery{}, Errors: webhookErrs},
	{Pattern: "GET /api/webhooks/{id}/deliveries/{delivery}", ID: "getWebhookDelivery", Tag: "webhooks", Summary: "One delivery with its attempts.", Scope: auth.ScopeConfigRead,
		Status: 200, Data: webhooks.Delivery{}, Errors: webhookErrs},
	{Pattern: "POST /api/webhooks/{id}/deliveries/{delivery}/replay", ID: "replayWebhookDelivery", Tag: "webhooks", Summary: "Send a delivery again now, once, with the same event id.",
		Scope: auth.ScopeConfigWrite, Status: 202, Data: obj([]string{"id", "replayed"}, object{"id": stringSchema, "replayed": object{"type": "boolean"}}), Errors: webhookErrs},
}

var campaignErrs = []error{campaigns.ErrInvalidRequest, campaigns.ErrNotFound, campaigns.ErrConflict, campaigns.ErrUnavailable}

var webhookErrs = []error{webhooks.ErrInvalidRequest, webhooks.ErrNotFound, webhooks.ErrUnavailable}

var storeErrs = []error{stores.ErrInvalidRequest, stores.ErrNotFound, stores.ErrHashMismatch, stores.ErrPathExists, stores.ErrVersionCurrent,
	stores.ErrStoreFull, stores.ErrConflict, stores.ErrUnavailable}
