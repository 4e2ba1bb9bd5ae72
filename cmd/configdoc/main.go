// Command configdoc writes docs/configuration.md, the configuration
// reference, from the config package: every YAML key with its type and
// the doc comment of its field, where the constants a comment names (the
// defaults and limits the box applies, config's own or another package's
// such as voice.DefaultMinEndpointDelay) read as their values, and the
// defaults config fills in itself are added. The prose around the tables (commands, environment,
// introductions and links) is the template configuration.md.tmpl beside
// this file.
//
// Run it from the repository's root after changing a field of config:
//
//	go run ./cmd/configdoc
//
// (or go generate ./cmd/configdoc). Its test fails when the committed
// document is not what it writes, or when a field has no doc comment.
package main

//go:generate go run . -root ../..

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	doc, err := generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(*root, outPath), doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}
