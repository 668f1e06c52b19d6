package pacer

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestFlowHeapRandomOps checks the heap invariant and the handles' indexes after every one of
// a random sequence of push, pop, remove and fix, against a sorted model.
func TestFlowHeapRandomOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1e6, 0)
	var hp flowHeap
	var all []*Handle
	for range 64 {
		all = append(all, &Handle{idx: -1, at: base})
	}
	check := func(step int) {
		for i, h := range hp {
			if h.idx != i {
				t.Fatalf("step %d: handle at %d has idx %d", step, i, h.idx)
			}
			if i > 0 && hp.less(i, (i-1)/2) {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
		for _, h := range all {
			if h.idx >= len(hp) || (h.idx >= 0 && hp[h.idx] != h) {
				t.Fatalf("step %d: stale idx %d", step, h.idx)
			}
		}
	}
	for step := range 20000 {
		h := all[rng.IntN(len(all))]
		at := base.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
		switch op := rng.IntN(4); {
		case op == 0 && len(hp) > 0:
			min := hp[0].at
			got := hp.pop()
			if !got.at.Equal(min) || got.idx != -1 {
				t.Fatalf("step %d: pop", step)
			}
			for _, o := range hp {
				if o.at.Before(got.at) {
					t.Fatalf("step %d: popped %v but %v queued", step, got.at, o.at)
				}
			}
		case op == 1 && h.idx >= 0:
			hp.remove(h.idx)
		case h.idx >= 0:
			h.at = at
			hp.fix(h.idx)
		default:
			h.at = at
			hp.push(h)
		}
		check(step)
	}
}

// TestHistogramQuantiles compares the log-linear histogram's quantiles with exact ones.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, gen := range []func() uint64{
		func() uint64 { return uint64(rng.IntN(20)) },                     // small integers: exact
		func() uint64 { return uint64(rng.ExpFloat64() * 30_000) },        // ns lateness
		func() uint64 { return uint64(math.Exp(rng.Float64() * 40)) },     // wide range
		func() uint64 { return math.MaxUint64 - uint64(rng.IntN(1<<20)) }, // top bucket
	} {
		var h histogram
		var xs []uint64
		for range 10000 {
			v := gen()
			xs = append(xs, v)
			h.record(v)
		}
		slices.Sort(xs)
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
			exact := float64(xs[int(q*float64(len(xs)-1))])
			got := h.quantile(q)
			if exact < 16 && got != exact || math.Abs(got-exact) > exact/16+0.5 {
				t.Fatalf("q%.3f = %v, exact %v", q, got, exact)
			}
		}
		d := h.distribution(1)
		if d.Count != 10000 || d.Min != float64(xs[0]) || d.Max != float64(xs[len(xs)-1]) {
			t.Fatalf("distribution %+v", d)
		}
	}
	var empty histogram
	if empty.distribution(1) != (Distribution{}) || empty.quantile(0.5) != 0 {
		t.Fatal("empty distribution not zero")
	}
	for i := range histBuckets {
		low, width := histBounds(i)
		if histIndex(low) != i || histIndex(low+width-1) != i {
			t.Fatalf("bucket %d: [%d, +%d) maps to %d..%d", i, low, width, histIndex(low), histIndex(low+width-1))
		}
	}
}

// BenchmarkHistogramRecord: the per-Release statistics cost.
func BenchmarkHistogramRecord(b *testing.B) {
	var h histogram
	v := uint64(1)
	for b.Loop() {
		h.record(v)
		v = v*6364136223846793005 + 1442695040888963407
		v >>= 40
	}
}
