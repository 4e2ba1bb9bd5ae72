package pgcluster

import (
	"slices"
	"testing"
)

func TestCompareVersionsSortsNumerically(t *testing.T) {
	v := []string{"15", "9.6", "10", "9.5", "17"}
	slices.SortFunc(v, compareVersions)
	if want := []string{"9.5", "9.6", "10", "15", "17"}; !slices.Equal(v, want) {
		t.Fatalf("sorted %q, want %q", v, want)
	}
}

func TestTail(t *testing.T) {
	if got := tail("a\nb\nc\n", 2); got != "b\nc" {
		t.Fatalf("tail = %q", got)
	}
	if got := tail("a", 5); got != "a" {
		t.Fatalf("tail = %q", got)
	}
}
