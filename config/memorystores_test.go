package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stackbone/box/config"
)

func TestMemoryStoreAttachments(t *testing.T) {
	t.Parallel()
	c, err := config.Parse([]byte(`
agents:
  release:
    model: openai/x
    memoryStores:
      - {memoryStoreId: release-policy, access: read_only, instructions: "Check release policy first."}
      - {memoryStoreId: 6e2a9c41-5b73-4d08-a1f6-9c3e7b5d2a80, access: read_write}
      - {memoryStoreId: team-notes}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Agents["release"].MemoryStores
	if len(got) != 3 || got[0].Instructions != "Check release policy first." || got[1].Access != config.AccessReadWrite || got[2].Access != "" {
		t.Fatalf("attachments: %+v", got)
	}
	eight := "agents:\n  a:\n    memoryStores:\n"
	for i := 0; i < 8; i++ {
		eight += "      - {memoryStoreId: s" + string(rune('0'+i)) + "}\n"
	}
	for name, y := range map[string]string{
		"eight curated stores": eight,
		"no store":             "agents:\n  a:\n    memoryStores:\n      - {access: read_only}\n",
		"bad access":           "agents:\n  a:\n    memoryStores:\n      - {memoryStoreId: s, access: write}\n",
		"attached twice":       "agents:\n  a:\n    memoryStores:\n      - {memoryStoreId: s}\n      - {memoryStoreId: s}\n",
		"long instructions":    "agents:\n  a:\n    memoryStores:\n      - {memoryStoreId: s, instructions: " + strings.Repeat("i", config.MaxAttachmentInstructions+1) + "}\n",
		"unknown key":          "agents:\n  a:\n    memoryStores:\n      - {memoryStoreId: s, mode: ro}\n",
	} {
		if _, err := config.Parse([]byte(y)); !errors.Is(err, config.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	ok := "agents:\n  a:\n    memoryStores:\n      - {memoryStoreId: s, instructions: " + strings.Repeat("i", config.MaxAttachmentInstructions) + "}\n"
	if _, err := config.Parse([]byte(ok)); err != nil {
		t.Errorf("4096 characters of instructions: %v", err)
	}
}
