package pacer_test

import (
	"encoding/binary"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/udtgo/udt/pacer"
)

// FuzzScheduler drives a Scheduler with an arbitrary sequence of releases, forced departures,
// rate changes and clock jumps, and checks after every step that it never releases more than
// asked or than the burst, that Next is after now whenever it held packets back, that
// departures never exceed the rate over any stretch of constant rate plus the burst, and that
// nothing panics or overflows.
func FuzzScheduler(f *testing.F) {
	le := binary.LittleEndian
	op := func(kind byte, a, b int64) []byte {
		buf := []byte{kind}
		buf = le.AppendUint64(buf, uint64(a))
		return le.AppendUint64(buf, uint64(b))
	}
	seed := func(interval int64, burst int16, strict bool, ops ...[]byte) {
		var all []byte
		for _, o := range ops {
			all = append(all, o...)
		}
		for _, tol := range []int32{-1, 0, 25_000} {
			f.Add(interval, burst, strict, tol, all)
		}
	}
	seed(10_000, 4, false, op(0, 0, 1), op(0, 35_000, 5), op(0, 1e9, 100), op(5, 1, 0), op(0, 10, 50))
	seed(10_000, 4, true, op(0, 0, 3), op(0, 25_000, 3), op(8, 0, 2), op(0, 13_000, 2))
	seed(0, 0, false, op(6, 700e6/8, 1472), op(0, 1, 9), op(0, 16_823, 9), op(7, 3, 0), op(0, 1e9, 9))
	seed(1, 1000, false, op(7, 4e9, 0), op(0, 0, 1e6), op(0, 1000, 1e6), op(9, math.MaxInt64, 0), op(0, 1, 5))
	seed(math.MaxInt64, -1, true, op(6, 1, math.MaxInt64), op(0, 0, 1), op(9, math.MinInt64, 0), op(0, 0, 1))

	f.Fuzz(func(t *testing.T, interval int64, burst int16, strict bool, tolNs int32, ops []byte) {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: time.Duration(interval), Burst: int(burst), Strict: strict,
			Tolerance: time.Duration(tolNs)})
		tol := int64(s.Tolerance())
		if tolNs < 0 && tol != 0 || tolNs == 0 && tol != int64(pacer.DefaultTolerance) || tolNs > 0 && tol != int64(tolNs) {
			t.Fatalf("tolerance %d → %d", tolNs, tol)
		}
		checkBurst := func() int64 {
			B := int64(s.Burst())
			if burst > 0 && B != int64(burst) || burst <= 0 && (B < pacer.MinBurst || B > pacer.MaxBurst) {
				t.Fatalf("burst %d → %d", burst, B)
			}
			return B
		}
		B := checkBurst()
		// period is the exact interval in ns (nil = unlimited), mirrored from the calls made.
		var period *big.Rat
		setPeriod := func(num, den int64) {
			if num <= 0 || den <= 0 {
				period = nil
				return
			}
			period = new(big.Rat).SetFrac(big.NewInt(num), big.NewInt(den))
		}
		setPeriod(interval, 1)

		var (
			cur      int64 // now, in ns from schedT0 (saturating)
			epoch    int64 // the scheduler's epoch: the first now it saw
			seen     bool
			segStart int64 // first departure of the current stretch of constant rate
			segCount int64 // Release departures in it; -1 = no stretch yet
		)
		segCount = -1
		resetSeg := func() { segCount = -1 }
		sane := func() bool { // the scheduler's view of time has not saturated
			return cur-epoch > -1<<62 && cur-epoch < 1<<62
		}
		for len(ops) >= 17 {
			kind, a, b := ops[0]%10, int64(le.Uint64(ops[1:])), int64(le.Uint64(ops[9:]))
			ops = ops[17:]
			switch kind {
			case 5:
				s.SetInterval(time.Duration(a))
				setPeriod(a, 1)
				resetSeg()
				continue
			case 6:
				s.SetRate(a, b)
				if a > 0 && b > 0 { // packetSize·1e9/rate
					period = new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(b), big.NewInt(1e9)), big.NewInt(a))
				} else {
					period = nil
				}
				resetSeg()
				continue
			case 7:
				s.SetPacketRate(a)
				setPeriod(1e9, a)
				resetSeg()
				continue
			case 9: // arbitrary clock jump, possibly backwards
				if a < 0 {
					resetSeg()
				}
				cur = addSatTest(cur, a)
				continue
			}
			cur = addSatTest(cur, a&(1<<40-1)) // mostly forward steps up to ~18 min
			now := schedT0.Add(time.Duration(cur))
			// The scheduler's epoch is the first time it reads: a Force of n ≤ 0 reads none.
			if !seen && (kind != 8 || b%1000 > 0) {
				seen, epoch = true, cur
			}
			if kind == 8 {
				s.Force(now, int(b%1000))
				resetSeg()
				continue
			}
			want := int(b % 5000)
			B = checkBurst() // the default burst follows the rate
			n := s.Release(now, want)
			if n < 0 || n > max(want, 0) || int64(n) > B {
				t.Fatalf("Release(want %d, burst %d) = %d", want, B, n)
			}
			if period != nil && strict && n > 1 {
				t.Fatalf("strict released %d", n)
			}
			if want <= 0 || !sane() {
				continue
			}
			next := s.Next()
			if next.IsZero() {
				t.Fatalf("Next is zero after a Release")
			}
			limit := min(want, int(B))
			heldBack := n < limit
			if period != nil && strict {
				heldBack = n == 0
			}
			// (A Next that saturated in the scheduler's own ns since its epoch is never due.)
			if horizon := now.Add(time.Duration(tol)); period != nil && heldBack && !next.After(horizon) &&
				next.Sub(schedT0.Add(time.Duration(epoch))) < math.MaxInt64/2 {
				t.Fatalf("released %d of %d (burst %d) at %v but Next %v is not after now + tolerance %d", n, want, B, cur,
					next.Sub(schedT0), tol)
			}
			if period == nil || n == 0 {
				continue
			}
			if segCount < 0 {
				segStart, segCount = cur, 0
			}
			segCount += int64(n)
			// count ≤ ⌊(now − first + 1 ns + tolerance)/period⌋ + burst + 1 (strict: + 1); the
			// 1 ns is the rounding of departures to whole nanoseconds.
			span := cur - segStart + 1 + tol
			allowed := new(big.Rat).SetInt64(span)
			allowed.Quo(allowed, period)
			lim := new(big.Int).Quo(allowed.Num(), allowed.Denom())
			extra := B + 1
			if strict {
				extra = 1
			}
			lim.Add(lim, big.NewInt(extra))
			if big.NewInt(segCount).Cmp(lim) > 0 {
				t.Fatalf("%d departures in %d ns at period %s ns (burst %d, strict %v): more than %s",
					segCount, cur-segStart, period.FloatString(3), B, strict, lim)
			}
		}
	})
}

func addSatTest(a, b int64) int64 {
	c := a + b
	if b > 0 && c < a {
		return math.MaxInt64
	}
	if b < 0 && c > a {
		return math.MinInt64
	}
	return c
}
