package main

import (
	"testing"
	"time"

	"github.com/udtgo/udt/pacer"
)

// -pacing-tolerance maps to conn.Config.PacingTolerance: default → 0, exact and 0 → pacer.Exact.
func TestToleranceFlag(t *testing.T) {
	for in, want := range map[string]time.Duration{"default": 0, "exact": pacer.Exact, "0": pacer.Exact, "150µs": 150 * time.Microsecond} {
		var f toleranceFlag
		if err := f.Set(in); err != nil || time.Duration(f) != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, time.Duration(f), err, want)
		}
		if in != "0" && f.String() != in {
			t.Errorf("String after Set(%q) = %q", in, f.String())
		}
	}
	for _, bad := range []string{"", "-5us", "fast", "5"} {
		var f toleranceFlag
		if f.Set(bad) == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	if c := udtConfig(&transportFlags{tolerance: toleranceFlag(pacer.Exact)}); c.PacingTolerance != pacer.Exact {
		t.Errorf("udtConfig PacingTolerance %v", c.PacingTolerance)
	}
}
