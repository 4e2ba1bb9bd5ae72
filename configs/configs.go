// Package configs embeds the box's shipped configuration files, so
// `stackbone dev` runs from any directory.
package configs

import _ "embed"

// Dev is configs/dev.yaml, the configuration of `stackbone dev`.
//
//go:embed dev.yaml
var Dev []byte
