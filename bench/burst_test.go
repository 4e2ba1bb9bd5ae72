package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// SIPp's statistics give the burst's counts even when the file's last line
// is one SIPp was still writing as it exited.
func TestBurstCountsReadSIPpStatistics(t *testing.T) {
	dir := t.TempDir()
	stats := "StartTime;LastResetTime;CurrentTime;SuccessfulCall(P);SuccessfulCall(C);FailedCall(P);FailedCall(C);\n" +
		"a;b;c;40;40;0;0;\n" +
		"a;b;c;460;498;1;2;\n" +
		"a;b;c;0;4"
	if err := os.WriteFile(filepath.Join(dir, "burst_123_.csv"), []byte(stats), 0o600); err != nil {
		t.Fatal(err)
	}
	ok, failed, err := burstCounts(dir)
	if err != nil || ok != 498 || failed != 2 {
		t.Fatalf("counts %d succeeded, %d failed, %v; want 498, 2", ok, failed, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "burst_123_.csv"), []byte("StartTime;SuccessfulCall(C);FailedCall(C);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := burstCounts(dir); err == nil {
		t.Fatal("statistics without a line of counts read as counts")
	}
}
