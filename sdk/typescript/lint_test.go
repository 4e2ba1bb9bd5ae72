package typescript_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The box's OpenAPI document passes the Redocly linter's recommended rules
// with no error (the SDK's types and any generated client start from it).
// The linter is a pinned dev dependency of the SDK, installed by npm ci.
func TestOpenAPILint(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the OpenAPI linter needs Node 20 (scripts/test installs it)")
	}
	cli, err := filepath.Abs(filepath.Join("node_modules", "@redocly", "cli", "bin", "cli.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatal("the OpenAPI linter is not installed: run `npm ci` in sdk/typescript (scripts/test does)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "lint", "--format=stylish", filepath.Join("..", "..", "api", "openapi.json"))
	// A test reports nothing home and asks no one for a newer version.
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "REDOCLY_SUPPRESS_NOTIFICATIONS=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redocly lint api/openapi.json: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
