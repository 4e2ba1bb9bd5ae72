//go:build !bench

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// benchCmd, in a binary built without the load tools: they link the test
// toolkit, the scripted provider and the test room client, none of which
// belongs in the box a person runs.
func benchCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "bench",
		Short:              "Load tests (built with -tags bench: go run -tags bench ./cmd/stackbone bench ...)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("this binary has no load tools: run go run -tags bench ./cmd/stackbone bench ...")
		},
	}
}
