package pgtest

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// Logger returns a logger that writes every record (debug and up) through
// t.Log, so it shows with the test that produced it (go test -v, or on
// failure). Records logged after the test has finished, by a goroutine the
// test leaked, go to stderr marked with the test's name instead of panicking
// inside the testing package.
func Logger(t testing.TB) *slog.Logger {
	w := &tbWriter{t: t}
	// Registered now, so it runs after the cleanups the test registers later:
	// what they close may still log.
	t.Cleanup(w.finish)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tbWriter receives one Write per record from slog's TextHandler.
type tbWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := strings.TrimSuffix(string(p), "\n")
	if w.done {
		fmt.Fprintf(os.Stderr, "%s (logged after the test ended): %s\n", w.t.Name(), line)
		return len(p), nil
	}
	w.t.Log(line)
	return len(p), nil
}

func (w *tbWriter) finish() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
