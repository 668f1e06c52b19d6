//go:build unix

package cputime

import "testing"

// CPU time grows while the process computes.
func TestProcessGrows(t *testing.T) {
	t0 := Process()
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	if d := Process() - t0; d <= 0 {
		t.Fatalf("CPU time grew by %v over 50M multiplications (x=%d)", d, x)
	}
}
