package pacer

import (
	"runtime"
	"testing"
)

// TestRawSlotLeavesAP: at most GOMAXPROCS − 1 raw (P-holding) sleeps at once, none with one P.
func TestRawSlotLeavesAP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		got := 0
		for range procs + 2 {
			if rawSlot() {
				got++
			}
		}
		rawSleepers.Add(int32(-got))
		if got != procs-1 {
			t.Errorf("GOMAXPROCS %d: %d raw slots, want %d", procs, got, procs-1)
		}
	}
}
