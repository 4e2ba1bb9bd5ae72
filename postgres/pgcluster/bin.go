package pgcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// FindBinDir returns the directory holding initdb, pg_ctl and postgres: the
// one of pg_ctl on PATH (symlinks resolved, since Debian-style setups link
// single binaries into /usr/local/bin), else the newest
// /usr/lib/postgresql/*/bin that has all three. It returns ErrNoBinaries if
// there is none.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if d := filepath.Dir(p); hasBinaries(d) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		return -compareVersions(filepath.Base(filepath.Dir(a)), filepath.Base(filepath.Dir(b)))
	})
	for _, d := range dirs {
		if hasBinaries(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

// hasBinaries reports whether dir holds executable initdb, pg_ctl and postgres.
func hasBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// compareVersions orders directory names like "9.6", "10", "15" numerically.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// binMajor returns the major version of the binaries in dir in PG_VERSION
// form: "15" for 15.4, "9.6" for 9.6.24.
func binMajor(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "pg_ctl"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("pgcluster: pg_ctl --version: %w", err)
	}
	// "pg_ctl (PostgreSQL) 15.4 (Debian 15.4-1)"
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return "", fmt.Errorf("pgcluster: pg_ctl --version: unexpected %q", out)
	}
	parts := strings.FieldsFunc(fields[2], func(r rune) bool { return r == '.' || r < '0' || r > '9' })
	if len(parts) == 0 {
		return "", fmt.Errorf("pgcluster: pg_ctl --version: unexpected %q", out)
	}
	if n, _ := strconv.Atoi(parts[0]); n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1], nil
	}
	return parts[0], nil
}
