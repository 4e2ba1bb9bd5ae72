package config

import (
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
)

// RAG holds box-wide retrieval settings.
type RAG struct {
	// Hybrid fuses PostgreSQL full-text ranking with vector similarity in
	// every retrieval that does not say otherwise (a request's "hybrid"
	// wins). Off by default: vector similarity alone.
	Hybrid bool `yaml:"hybrid"`
}

// Kinds of object store.
const (
	ObjectStoreFS = "fs"
	ObjectStoreS3 = "s3"
)

// ObjectStore is where the box keeps uploaded originals: a directory on the
// local filesystem by default, or a bucket of an S3-compatible store.
type ObjectStore struct {
	// Kind is "fs" (the default) or "s3".
	Kind string `yaml:"kind"`
	// Dir is the directory of an fs store; empty means "objects" under the
	// box's data directory.
	Dir string `yaml:"dir"`
	// Endpoint is the S3 endpoint as host[:port], such as
	// s3.eu-central-1.amazonaws.com or 127.0.0.1:9000.
	Endpoint string `yaml:"endpoint"`
	// Bucket must exist; the box does not create it.
	Bucket string `yaml:"bucket"`
	// Region of the bucket; empty lets the client discover it.
	Region string `yaml:"region"`
	// Prefix is prepended to every key, such as "stackbone/".
	Prefix string `yaml:"prefix"`
	// Insecure talks plain HTTP to the endpoint (a store on loopback).
	Insecure bool `yaml:"insecure"`
	// AccessKeyEnv names the environment variable holding the access key
	// (default AWS_ACCESS_KEY_ID).
	AccessKeyEnv string `yaml:"accessKeyEnv"`
	// SecretKeyEnv names the environment variable holding the secret key
	// (default AWS_SECRET_ACCESS_KEY).
	SecretKeyEnv string `yaml:"secretKeyEnv"`
}

func (o ObjectStore) validate() []string {
	var problems []string
	switch o.Kind {
	case "", ObjectStoreFS:
		if o.Endpoint != "" || o.Bucket != "" {
			problems = append(problems, "objectStore: endpoint and bucket need kind: s3")
		}
	case ObjectStoreS3:
		if o.Endpoint == "" || o.Bucket == "" {
			problems = append(problems, "objectStore: kind s3 needs endpoint and bucket")
		}
		if o.Dir != "" {
			problems = append(problems, "objectStore: dir is for kind fs")
		}
	default:
		problems = append(problems, fmt.Sprintf("objectStore.kind %q is not fs or s3", truncate(o.Kind, 20)))
	}
	return problems
}

// ToolKindRetrieval is a tool that searches one collection.
const ToolKindRetrieval = "retrieval"

// Limits of a declared retrieval tool.
const (
	MaxToolTopK        = 50
	MaxToolDescription = 1024
	DefaultToolTopK    = 3
)

// AgentTool is a server tool an agent declares:
//
//	tools:
//	  - name: search_docs
//	    kind: retrieval
//	    collection: help-center
//	    topK: 3
//	    description: Search the help center before answering a question about policies.
type AgentTool struct {
	// Name is what the model calls (letters, digits, _ and -, 1 to 64).
	Name string `yaml:"name"`
	// Kind is "retrieval", "http" (one HTTP endpoint) or "mcp" (the tools
	// of an MCP server); see config/tools.go and package tools.
	Kind string `yaml:"kind"`
	// Collection is the one collection the tool searches ("default" when
	// empty). The model can never choose another.
	Collection string `yaml:"collection"`
	// TopK is how many hits the tool hands the model (default
	// DefaultToolTopK, at most MaxToolTopK).
	TopK int `yaml:"topK"`
	// Description tells the model when to use the tool.
	Description string `yaml:"description"`
	// Filter is a fixed JSON metadata filter every search of the tool
	// applies (containment, like the API's filter).
	Filter map[string]any `yaml:"filter"`
	// Hybrid overrides rag.hybrid for this tool.
	Hybrid *bool `yaml:"hybrid"`

	// URL is, for kind http, the request URL with {argument} placeholders
	// in its path or query, each escaped; for kind mcp, the server's
	// streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Method of kind http: GET (the default), POST, PUT, PATCH or DELETE.
	Method string `yaml:"method"`
	// Parameters of kind http is the JSON Schema of the arguments the model
	// fills (an object). Arguments not used in the URL go in the JSON body
	// (POST, PUT, PATCH) or the query (GET, DELETE).
	Parameters map[string]any `yaml:"parameters"`
	// Headers of kind http; ${NAME} in a value is read from the
	// environment at start. Credentials (Authorization, Cookie, names with
	// key, token or secret) must come from the environment this way.
	Headers map[string]string `yaml:"headers"`
	// Timeout bounds one call of a kind http or mcp tool (default
	// DefaultToolTimeout, at most MaxToolTimeout).
	Timeout time.Duration `yaml:"timeout"`
	// MaxResponseBytes caps the response a kind http tool hands the model
	// (default DefaultMaxResponseBytes, at most MaxResponseBytesLimit, 1
	// MiB); a longer one is cut and said to be.
	MaxResponseBytes int `yaml:"maxResponseBytes"`
	// FailStatuses are the HTTP statuses that count as a failure of a kind
	// http tool; empty: every status from 400.
	FailStatuses []int `yaml:"failStatuses"`
	// Command of kind mcp starts a server over stdio instead of url
	// ([npx, -y, some-mcp-server]).
	Command []string `yaml:"command"`
	// TokenEnv of kind mcp names the environment variable holding a bearer
	// token for the url.
	TokenEnv string `yaml:"tokenEnv"`
	// Allow of kind mcp lists the server's tools offered to the model;
	// empty: all of them. They are named NAME__TOOL.
	Allow []string `yaml:"allow"`
	// Filler is what a caller hears while the tool runs longer than the
	// agent's voice.fillerAfter ("One moment, I'm checking that."); empty
	// uses the agent's voice.filler.
	Filler string `yaml:"filler"`
}

var collectionNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// ValidCollectionName reports whether name can name a collection: 1 to 64
// lower-case letters, digits, '_', '.' or '-', starting with a letter or
// digit.
func ValidCollectionName(name string) bool { return collectionNameRe.MatchString(name) }

// reservedToolNames are the built-in memory tools.
var reservedToolNames = map[string]bool{"memory_read": true, "memory_save": true}

func validateTools(agent string, tools []AgentTool) []string {
	var problems []string
	seen := map[string]bool{}
	for i, t := range tools {
		where := fmt.Sprintf("agent %s: tools[%d]", agent, i)
		switch {
		case !toolNameRe.MatchString(t.Name):
			problems = append(problems, fmt.Sprintf("%s: name %q must be 1 to 64 letters, digits, _ or -", where, truncate(t.Name, 64)))
		case reservedToolNames[t.Name]:
			problems = append(problems, fmt.Sprintf("%s: name %q is a built-in memory tool", where, t.Name))
		case seen[t.Name]:
			problems = append(problems, fmt.Sprintf("%s: name %q is declared twice", where, t.Name))
		}
		seen[t.Name] = true
		switch t.Kind {
		case ToolKindRetrieval:
		case ToolKindHTTP:
			problems = append(problems, t.validateHTTP(where)...)
		case ToolKindMCP:
			problems = append(problems, t.validateMCP(where)...)
		default:
			problems = append(problems, fmt.Sprintf("%s: kind %q is not %s, %s or %s", where, truncate(t.Kind, 20), ToolKindRetrieval, ToolKindHTTP, ToolKindMCP))
		}
		if utf8.RuneCountInString(t.Filler) > MaxFiller {
			problems = append(problems, fmt.Sprintf("%s: filler is longer than %d characters", where, MaxFiller))
		}
		if t.Collection != "" && !ValidCollectionName(t.Collection) {
			problems = append(problems, fmt.Sprintf("%s: collection %q must match %s", where, truncate(t.Collection, 80), collectionNameRe))
		}
		if t.TopK < 0 || t.TopK > MaxToolTopK {
			problems = append(problems, fmt.Sprintf("%s: topK must be 1 to %d", where, MaxToolTopK))
		}
		if utf8.RuneCountInString(t.Description) > MaxToolDescription {
			problems = append(problems, fmt.Sprintf("%s: description is longer than %d characters", where, MaxToolDescription))
		}
	}
	return problems
}
