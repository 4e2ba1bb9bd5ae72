package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stackbone/box/config"
)

func TestRetrievalToolsAndObjectStore(t *testing.T) {
	t.Parallel()
	c, err := config.Parse([]byte(`
rag: {hybrid: true}
objectStore: {kind: s3, endpoint: 127.0.0.1:9000, bucket: originals, insecure: true}
agents:
  support:
    model: openai/gpt-4o-mini
    tools:
      - name: search_docs
        kind: retrieval
        collection: help-center
        topK: 3
        description: Search the help center before answering a question about policies.
        filter: {lang: en}
      - {name: search_all, kind: retrieval}
`))
	if err != nil {
		t.Fatal(err)
	}
	tools := c.Agents["support"].Tools
	if len(tools) != 2 || tools[0].Collection != "help-center" || tools[0].TopK != 3 || tools[0].Filter["lang"] != "en" ||
		tools[1].Collection != "" || !c.RAG.Hybrid || c.ObjectStore.Bucket != "originals" {
		t.Fatalf("parsed: %+v %+v %+v", tools, c.RAG, c.ObjectStore)
	}
	for name, y := range map[string]string{
		"tool kind":          "agents:\n  a:\n    tools: [{name: s, kind: web}]\n",
		"tool name":          "agents:\n  a:\n    tools: [{name: 'search docs', kind: retrieval}]\n",
		"reserved tool name": "agents:\n  a:\n    tools: [{name: memory_read, kind: retrieval}]\n",
		"duplicate tool":     "agents:\n  a:\n    tools: [{name: s, kind: retrieval}, {name: s, kind: retrieval}]\n",
		"collection name":    "agents:\n  a:\n    tools: [{name: s, kind: retrieval, collection: 'Help Center'}]\n",
		"topK":               "agents:\n  a:\n    tools: [{name: s, kind: retrieval, topK: 51}]\n",
		"unknown tool key":   "agents:\n  a:\n    tools: [{name: s, kind: retrieval, colection: x}]\n",
		"long description":   "agents:\n  a:\n    tools: [{name: s, kind: retrieval, description: " + strings.Repeat("d", 1025) + "}]\n",
		"store kind":         "objectStore: {kind: ftp}\n",
		"s3 without bucket":  "objectStore: {kind: s3, endpoint: x}\n",
		"fs with bucket":     "objectStore: {bucket: x}\n",
	} {
		if _, err := config.Parse([]byte(y)); !errors.Is(err, config.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
