package openapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
)

// Schema is a JSON Schema object of the document.
type Schema = map[string]any

// Raw is a schema written out by hand, for a shape no Go type declares
// (a body a handler reads field by field, a map built in the handler).
type Raw Schema

// schemas turns Go types into named component schemas, the way
// encoding/json writes them: a pointer is nullable, an omitempty field is
// optional, time.Time is a date-time string, an embedded struct's fields
// are the outer struct's.
type schemas struct {
	components map[string]Schema
	named      map[reflect.Type]string
}

func newSchemas() *schemas {
	return &schemas{components: map[string]Schema{}, named: map[reflect.Type]string{}}
}

// names are the components whose Go name would read poorly or collide.
var names = map[string]string{
	"memory.Fact": "Fact", "memory.Call": "MemoryCall", "memory.AddResult": "MemoryAddResult",
	"memory.RecallResult": "MemoryRecallResult", "memory.View": "MemorySettings", "memory.Overrides": "MemorySettingsOverrides",
	"memory.Value": "MemorySettingsValue", "memory.Origins": "MemorySettingsOrigins", "memory.Binding": "MemoryIdentityBinding",
	"rag.Hit": "RagHit", "rag.Collection": "RagCollection", "rag.Document": "RagDocument", "rag.Job": "RagJob",
	"rag.JobError": "RagJobError", "rag.Chunk": "RagChunk", "rag.IngestRequest": "RagIngestRequest",
	"rag.RetrieveRequest": "RagRetrieveRequest", "rag.CreateCollection": "RagCreateCollection",
	"rag.UploadResult": "RagUploadResult", "rag.ItemError": "RagItemError",
	"voice.CallRecord": "Call", "voice.Entry": "TranscriptEntry", "voice.MemoryReport": "CallMemoryReport",
	"rooms.View": "Room", "rooms.Join": "RoomJoin",
	"agent.SessionSummary": "Session", "agent.SessionDetail": "SessionDetail", "agent.SessionTurn": "SessionTurn",
	"agent.ToolCall": "HeldToolCall", "agent.TurnTakingView": "AgentTurnTaking", "agent.TurnOverrides": "AgentTurnTakingOverrides",
	"agent.TurnTaking": "AgentTurnTakingValue", "agent.TurnOrigins": "AgentTurnTakingOrigins", "agent.TurnTakingPatch": "AgentTurnTakingPatch",
	"auth.Key": "Key", "runs.Run": "Run",
	"campaigns.Campaign": "Campaign", "campaigns.NewCampaign": "NewCampaign", "campaigns.Window": "CampaignWindow",
	"campaigns.Retry": "CampaignRetry", "campaigns.Rule": "CampaignRetryRule", "campaigns.Progress": "CampaignProgress",
	"campaigns.ContactInput": "CampaignContactInput", "campaigns.Contact": "CampaignContact",
	"costs.Cost": "Cost", "costs.Usage": "Usage", "costs.Tokens": "Tokens", "costs.ModelUsage": "ModelUsage",
	"costs.AudioUsage": "AudioUsage", "costs.TextUsage": "TextUsage", "costs.LineUsage": "LineUsage",
	"costs.SessionCost": "SessionCost", "costs.Total": "CostTotal", "costs.Totals": "CostTotals",
	"costs.TotalsCost": "CostTotalCost", "costs.TotalsUsage": "CostTotalUsage",
	"stores.Store": "MemoryStore", "stores.Memory": "StoreMemory", "stores.Entry": "StoreEntry", "stores.Listing": "StoreListing",
	"stores.Hit": "StoreHit", "stores.SearchResult": "StoreSearchResult", "stores.Version": "StoreVersion",
	"stores.VersionDetail": "StoreVersionDetail", "stores.VersionPage": "StoreVersionPage", "stores.StorePage": "MemoryStorePage",
	"stores.Author": "StoreAuthor",
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	uuidType      = reflect.TypeFor[uuid.UUID]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	rawSchemaT    = reflect.TypeFor[Raw]()
)

// of is the schema of v: a Raw as written, a Go value by its type.
func (s *schemas) of(v any) Schema {
	if r, ok := v.(Raw); ok {
		return Schema(r)
	}
	return s.typ(reflect.TypeOf(v))
}

func (s *schemas) typ(t reflect.Type) Schema {
	switch {
	case t == nil:
		return Schema{}
	case t == timeType:
		return Schema{"type": "string", "format": "date-time"}
	case t == uuidType:
		return Schema{"type": "string", "format": "uuid"}
	case t == rawType:
		return Schema{}
	case t == rawSchemaT:
		return Schema{}
	}
	if inner, ok := fieldOf(t); ok {
		return s.typ(inner)
	}
	if t.Kind() != reflect.Struct && t.Kind() != reflect.Pointer {
		// A type that writes itself: text is a string, anything else is
		// what its MarshalJSON makes of it.
		if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
			return Schema{}
		}
		if t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
			return Schema{"type": "string"}
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(s.typ(t.Elem()))
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return Schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "number"}
	case reflect.Slice, reflect.Array:
		return Schema{"type": "array", "items": s.typ(t.Elem())}
	case reflect.Map:
		return Schema{"type": "object", "additionalProperties": s.typ(t.Elem())}
	case reflect.Interface:
		return Schema{}
	case reflect.Struct:
		return s.object(t)
	}
	return Schema{}
}

// fieldOf reports api.Field[T]'s T: a member that may be omitted.
func fieldOf(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct || !strings.HasPrefix(t.Name(), "Field[") || t.NumField() != 3 {
		return nil, false
	}
	return t.Field(2).Type, true
}

// nilSlices are the types whose slice and map members may be null (a nil
// slice: "nothing set" rather than "none").
var nilSlices = map[string]bool{"agent.ChainOverrides": true, "agent.Chains": true, "provider.CircuitView": true}

func key(t reflect.Type) string {
	return t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:] + "." + t.Name()
}

// object is a struct's schema: a $ref to its component when the type is
// named, inline when anonymous.
func (s *schemas) object(t reflect.Type) Schema {
	if t.Name() == "" {
		return s.build(t)
	}
	k := key(t)
	name, ok := s.named[t]
	if !ok {
		name = names[k]
		if name == "" {
			name = upper(strings.ReplaceAll(k, ".", ""))
		}
		s.named[t] = name
		s.components[name] = Schema{} // a recursive type refers to itself
		s.components[name] = s.build(t)
	}
	return Schema{"$ref": "#/components/schemas/" + name}
}

func (s *schemas) build(t reflect.Type) Schema {
	props := Schema{}
	var required []string
	s.fields(t, props, &required)
	out := Schema{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	// A type with its own MarshalJSON may write more members; say so.
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
		out["description"] = "May carry members beyond those listed."
	}
	return out
}

func (s *schemas) fields(t reflect.Type, props Schema, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			s.fields(f.Type, props, required)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = s.typ(f.Type)
		if nilSlices[key(t)] && (f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map) {
			props[name] = nullable(props[name].(Schema))
		}
		_, isField := fieldOf(f.Type)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && !isField {
			*required = append(*required, name)
		}
	}
}

func nullable(sc Schema) Schema {
	if ref, ok := sc["$ref"]; ok {
		return Schema{"oneOf": []any{Schema{"$ref": ref}, Schema{"type": "null"}}}
	}
	if typ, ok := sc["type"].(string); ok {
		out := Schema{}
		for k, v := range sc {
			out[k] = v
		}
		out["type"] = []any{typ, "null"}
		return out
	}
	return sc
}

func upper(s string) string {
	r := []rune(s)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}
