package congestion_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// nativeSeeded returns a Factory of native controllers whose randomised decrease spacing is
// drawn from a fresh PCG seeded with seed, so that runs are reproducible.
func nativeSeeded(seed uint64) congestion.Factory {
	return func() congestion.Controller {
		return congestion.NewNative(congestion.WithRandSource(rand.NewPCG(seed, seed)))
	}
}

// simControllers are the controllers every connection-level scenario runs.
var simControllers = []struct {
	name string
	fac  func(seed uint64) congestion.Factory
}{
	{"native", nativeSeeded},
}

// simDuration returns full, or short under -short.
func simDuration(full, short time.Duration) time.Duration {
	if testing.Short() {
		return short
	}
	return full
}

// One flow on a 100 Mbit/s bottleneck with 20 ms RTT and a one-BDP drop-tail queue reaches
// ≥ 90 % of it within 10 s of virtual time (issue 4 item 5).
func TestConnOneFlow(t *testing.T) {
	for _, c := range simControllers {
		t.Run(c.name, func(t *testing.T) {
			sc := connScenario{Rate: 100e6, RTT: 20 * time.Millisecond, Seed: 1,
				Flows: []connFlow{{Name: c.name, CC: c.fac(1)}}, Duration: 10 * time.Second}
			if testing.Short() { // stop once the goal is met: the run is the same up to there
				sc.Until = func(share [][]float64) bool { return share[0][len(share[0])-1] >= 0.9 }
			}
			r := runConns(t, sc)
			logShares(t, "100 Mbit/s, 20 ms", sc, r)
			first := -1
			for s, x := range r.Share[0] {
				if x >= 0.9 {
					first = s + 1
					break
				}
			}
			last := r.Share[0][len(r.Share[0])-1]
			t.Logf("first second at ≥ 90 %%: %d; last second (%d) %.1f %%", first, len(r.Share[0]), 100*last)
			if first < 0 || last < 0.9 {
				t.Errorf("utilisation %.3f in the last second (first second ≥ 90 %%: %d), want ≥ 0.9 within 10 s", last, first)
			}
		})
	}
}

// Two flows share the bottleneck, the second starting 2 s later: Jain's fairness index over
// seconds 20–30 is ≥ 0.95 and together they fill ≥ 85 % of it, in the median of five runs (seeds
// 2–6), and in every run the queue drops stay under 2 % of the packets offered. The median,
// because one 10 s window of one run is a noisy estimate: the simulation does not repeat exactly
// (goroutine order), and 2 of 22 single runs read 0.92–0.94 where the rest read 0.97–1.00
// (2026-12-02); a single-run assertion failed CI about one time in ten.
func TestConnTwoFlows(t *testing.T) {
	dur := simDuration(30*time.Second, 6*time.Second)
	from := max(int(dur/time.Second)-10, 3)
	for _, c := range []struct {
		name   string
		a, b   func(uint64) congestion.Factory
		na, nb string
	}{
		{"native", nativeSeeded, nativeSeeded, "native 1", "native 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			seeds := []uint64{2, 3, 4, 5, 6}
			if testing.Short() {
				seeds = seeds[:1]
			}
			var jains, totals []float64
			for _, seed := range seeds {
				sc := connScenario{Rate: 100e6, RTT: 20 * time.Millisecond, Seed: seed,
					Flows:    []connFlow{{Name: c.na, CC: c.a(1)}, {Name: c.nb, CC: c.b(2), Start: 2 * time.Second}},
					Duration: dur}
				r := runConns(t, sc)
				logShares(t, "2 flows, 100 Mbit/s, 20 ms", sc, r)
				to := min(from+10, len(r.Share[0]))
				a, b := mean(r.Share[0], from, to), mean(r.Share[1], from, to)
				j := jain(a, b)
				jains, totals = append(jains, j), append(totals, a+b)
				drops := float64(r.Forward.DroppedQueue) / float64(r.Forward.Sent)
				t.Logf("seed %d: seconds %d–%d: shares %.1f %% + %.1f %% = %.1f %%, Jain's index %.4f; queue drops %d (%.3f %% of %d offered)",
					seed, from, to, 100*a, 100*b, 100*(a+b), j, r.Forward.DroppedQueue, 100*drops, r.Forward.Sent)
				// Drops count from the start: two slow-start overshoots (~300–500 each) are most of
				// them, so a 6 s -short run, which offers a fifth of the packets, gets a looser bound.
				limit := 0.02
				if testing.Short() {
					limit = 0.04
				}
				if drops > limit {
					t.Errorf("seed %d: queue drops %.2f %% of the packets offered, want ≤ %.0f %%", seed, 100*drops, 100*limit)
				}
			}
			if testing.Short() {
				return // the flows have not converged in 6 s; the full run asserts
			}
			// Issue 4 asks ≥ 0.95 of native flows.
			const want = 0.95
			j, total := medianOf(jains), medianOf(totals)
			if j < want || total < 0.85 {
				t.Errorf("median of %d runs: Jain's index %.4f (want ≥ %.2f), total %.3f (want ≥ 0.85); runs %.4f", len(seeds), j, want, total, jains)
			}
		})
	}
}

// medianOf returns the median of xs (the upper one of an even count); xs is not changed.
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Two flows through a shallow drop-tail queue (1/10 BDP: 2 ms at 20 ms RTT): report the
// drop rate and shares; assert that drops stay under 5 % of the packets offered.
func TestConnShallowQueue(t *testing.T) {
	dur := simDuration(20*time.Second, 4*time.Second)
	from := int(dur/time.Second) / 2
	for _, c := range simControllers {
		t.Run(c.name, func(t *testing.T) {
			sc := connScenario{Rate: 100e6, RTT: 20 * time.Millisecond, QueueBDP: 0.1, Seed: 4,
				Flows:    []connFlow{{Name: c.name + " 1", CC: c.fac(1)}, {Name: c.name + " 2", CC: c.fac(2), Start: time.Second}},
				Duration: dur}
			r := runConns(t, sc)
			logShares(t, "2 flows, 100 Mbit/s, 20 ms, queue 0.1 BDP", sc, r)
			a, b := mean(r.Share[0], from, len(r.Share[0])), mean(r.Share[1], from, len(r.Share[1]))
			drops := float64(r.Forward.DroppedQueue) / float64(r.Forward.Sent)
			t.Logf("seconds %d–%d: shares %.1f %% + %.1f %% = %.1f %%, Jain's index %.4f; queue drops %.3f %% of %d offered",
				from, len(r.Share[0]), 100*a, 100*b, 100*(a+b), jain(a, b), 100*drops, r.Forward.Sent)
			if drops > 0.05 {
				t.Errorf("queue drops %.2f %% of the packets offered, want ≤ 5 %%", 100*drops)
			}
		})
	}
}

// One flow at 100 ms RTT through a 100 Mbit/s bottleneck with random loss: the share it gets.
// The goal is ≥ 85 % at 1 % loss (BBR reaches 87 %, CUBIC < 2 %); the native controller cannot
// (every random loss of a packet sent after the last decrease starts a congestion period, spec
// §5.3), so only a floor is asserted for it: the flow keeps moving (-short runs 6 s).
func TestConnLossy(t *testing.T) {
	dur := simDuration(30*time.Second, 6*time.Second)
	from := min(10, int(dur/time.Second)/2)
	for _, c := range simControllers {
		for _, loss := range []float64{0.001, 0.01} {
			t.Run(fmt.Sprintf("%s/loss=%g%%", c.name, 100*loss), func(t *testing.T) {
				sc := connScenario{Rate: 100e6, RTT: 100 * time.Millisecond, Loss: loss, Seed: 3,
					Flows: []connFlow{{Name: c.name, CC: c.fac(1)}}, Duration: dur}
				r := runConns(t, sc)
				title := fmt.Sprintf("100 Mbit/s, 100 ms, %g %% loss", 100*loss)
				logShares(t, title, sc, r)
				u := mean(r.Share[0], from, len(r.Share[0]))
				t.Logf("%s, %s: share in seconds %d–%d %.1f %%", title, c.name, from, len(r.Share[0]), 100*u)
				if u < 0.02 {
					t.Errorf("share %.3f: the flow stalls", u)
				}
			})
		}
	}
}

// The testbed's path (examples/testbed): a 100 Mbit/s token-bucket shaper with a 1 ms bucket,
// 0 % and 1 % loss at 20 and 100 ms RTT. Back-to-back packet pairs pass the bucket at wire speed
// whenever it holds tokens, so the capacity estimate (spec §6.2) swings far above the rate.
// Report each controller's share over the whole run (slow start included, as the testbed's
// goodput counts it). The native controller only has to keep moving.
func TestConnShaper(t *testing.T) {
	dur := simDuration(10*time.Second, 4*time.Second)
	for _, c := range simControllers {
		for _, p := range []struct {
			rtt  time.Duration
			loss float64
		}{{20 * time.Millisecond, 0}, {100 * time.Millisecond, 0}, {100 * time.Millisecond, 0.01}} {
			t.Run(fmt.Sprintf("%s/rtt=%v/loss=%g%%", c.name, p.rtt, 100*p.loss), func(t *testing.T) {
				sc := connScenario{Rate: 100e6, RTT: p.rtt, Loss: p.loss, Bucket: time.Millisecond, Seed: 5,
					Flows: []connFlow{{Name: c.name, CC: c.fac(1)}}, Duration: dur}
				r := runConns(t, sc)
				title := fmt.Sprintf("shaper 100 Mbit/s, %v, %g %% loss", p.rtt, 100*p.loss)
				logShares(t, title, sc, r)
				u := mean(r.Share[0], 0, len(r.Share[0]))
				t.Logf("%s, %s: share over the run %.1f %%", title, c.name, 100*u)
				if u < 0.02 {
					t.Errorf("share %.3f: the flow stalls", u)
				}
			})
		}
	}
}
