package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the config package")

// The committed configuration reference is what the generator writes from
// the config structs, and every field has a doc comment to write.
func TestConfigurationReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := generate(root)
	if err != nil {
		t.Fatalf("fields without a doc comment, or a template problem:\n%v", err)
	}
	path := filepath.Join(root, outPath)
	if *update {
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, doc) {
		t.Fatal("docs/configuration.md is stale: run go run ./cmd/configdoc (or go test ./cmd/configdoc -update)")
	}
}

// A field without a doc comment fails the generation, named.
func TestFieldWithoutDocIsNamed(t *testing.T) {
	dir := t.TempDir()
	src := "package config\n\n// Config is the file.\ntype Config struct {\n\t// HTTP is documented.\n\tHTTP HTTP `yaml:\"http\"`\n}\n\n// HTTP holds a key.\ntype HTTP struct {\n\tAddr string `yaml:\"addr\"`\n}\n"
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config", "config.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	parsed, err := parseConfig(filepath.Join(dir, "config"))
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := emptyConfig()
	if err != nil {
		t.Fatal(err)
	}
	r := &renderer{root: dir, types: parsed.types, defaults: defaults, done: map[string]bool{}}
	if _, err := r.section("http"); err != nil {
		t.Fatal(err)
	}
	if len(r.problems) != 1 || r.problems[0] != "config.HTTP.Addr (http.addr) has no doc comment" {
		t.Fatalf("problems: %q", r.problems)
	}
}

// A comment's constant of another package reads as its value, and a name
// the package does not declare is a problem, named.
func TestConstantsOfOtherPackages(t *testing.T) {
	r := &renderer{root: filepath.Join("..", ".."), pkgConsts: map[string]map[string]string{}}
	if got := r.qualified("voice.DefaultMinEndpointDelay"); !strings.HasSuffix(got, "ms`") {
		t.Fatalf("voice.DefaultMinEndpointDelay reads %s", got)
	}
	if got := r.qualified("voice.NoSuchDefault"); got != "voice.NoSuchDefault" || len(r.problems) != 1 {
		t.Fatalf("a stale name reads %s, problems %q", got, r.problems)
	}
}
