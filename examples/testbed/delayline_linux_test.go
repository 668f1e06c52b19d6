//go:build linux

package main

import (
	"strings"
	"testing"
)

func TestFIFOOrderAcrossGrowth(t *testing.T) {
	var q fifo
	next, want := 0, 0
	// Interleave pushes and pops so the ring wraps before it grows.
	for round := 0; round < 50; round++ {
		for i := 0; i < 3*round+1; i++ {
			q.push(heldPacket{due: int64(next)})
			next++
		}
		for i := 0; i < 2*round && q.size > 0; i++ {
			if got := q.pop().due; got != int64(want) {
				t.Fatalf("pop = %d, want %d", got, want)
			}
			want++
		}
	}
	for q.size > 0 {
		if got := q.pop().due; got != int64(want) {
			t.Fatalf("drain pop = %d, want %d", got, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("popped %d, pushed %d", want, next)
	}
}

func TestLateSummary(t *testing.T) {
	s := DelayLineStats{Late: [6]uint64{5, 0, 2, 0, 0, 1}}
	if got, want := s.LateSummary(), "early/on time 5, ≤1ms 2, >100ms 1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNftRules(t *testing.T) {
	r := Config{Loss: 1}.nftRules()
	for _, want := range []string{"table inet udttb", "hook forward", `iifname "dly0" counter`,
		`iifname "dly0" numgen random mod 100000 < 1000 counter drop`} {
		if !strings.Contains(r, want) {
			t.Errorf("rules lack %q:\n%s", want, r)
		}
	}
	if r := (Config{}).nftRules(); strings.Contains(r, "drop") {
		t.Errorf("0 %% loss must not drop:\n%s", r)
	}
}

func TestStallNote(t *testing.T) {
	if n := (DelayLineStats{Forwarded: 10000, Late: [6]uint64{9990, 0, 0, 0, 10, 0}}).StallNote(); n != "" {
		t.Errorf("0.1 %% late: note %q, want none", n)
	}
	if n := (DelayLineStats{Forwarded: 10000, Late: [6]uint64{9980, 0, 0, 0, 15, 5}}).StallNote(); !strings.Contains(n, "20 packets (0.20 %)") {
		t.Errorf("0.2 %% late: note %q", n)
	}
	if n := (DelayLineStats{}).StallNote(); n != "" {
		t.Errorf("idle line: note %q", n)
	}
}
