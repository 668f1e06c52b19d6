package congestion_test

// Two flows on one bottleneck (issue 10 item 4): two flows of the controller under test, the
// second joining 5 s late; the controller against the loss-based reference (refCubic), in both
// orders; and RTT unfairness, a 100 ms flow joining a 20 ms one. Each scenario runs several
// times (the goroutine order in a bubble varies a run) and the worst run is compared with issue
// 10's targets: Jain's index ≥ 0.95, each side 25–75 % against CUBIC with a 1-BDP buffer, the
// long flow ≥ 25 %. Shares are of what the two flows delivered together, measured over the 10 s
// that start 30 s after the late flow joined; the table also gives the link's utilisation.
//
// Full runs (go test without -short) assert for controllers outside the baseline; -short runs
// one scenario of each kind, once and for 12 s, and only reports. UDT_SIM_CC and UDT_SIM_RUNS
// apply as for TestSimGrid.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// pairScenario is one two-flow scenario.
type pairScenario struct {
	Name   string
	Kind   string // "same", "cubic", "rtt"
	RTT    time.Duration
	RTT2   time.Duration // the second flow's RTT (0: RTT)
	Buffer time.Duration // drop-tail queue, in time at the rate (BDP at that RTT)
	Short  bool          // also in -short runs
	// Ours says which flows run the controller under test (the others run refCubic).
	Ours [2]bool
	// KnownMiss, when set, says why the default controller is known to miss the asserted floor
	// here (an open defect of issue 10): the scenario's floors are then reported in the log and
	// the table, loudly, and only the link's utilisation is asserted.
	KnownMiss string
}

const (
	pairRate  = 100e6
	pairJoin  = 5 * time.Second  // the second flow's start
	pairAfter = 30 * time.Second // measured from this long after the join …
	pairSpan  = 10 * time.Second // … for this long
)

var pairScenarios = []pairScenario{
	{Name: "same/20ms", Kind: "same", RTT: 20 * time.Millisecond, Buffer: 20 * time.Millisecond, Ours: [2]bool{true, true}, Short: true},
	{Name: "same/100ms", Kind: "same", RTT: 100 * time.Millisecond, Buffer: 100 * time.Millisecond, Ours: [2]bool{true, true}},
	{Name: "cubic-first/20ms", Kind: "cubic", RTT: 20 * time.Millisecond, Buffer: 20 * time.Millisecond, Ours: [2]bool{false, true}, Short: true},
	{Name: "cubic-first/100ms", Kind: "cubic", RTT: 100 * time.Millisecond, Buffer: 100 * time.Millisecond, Ours: [2]bool{false, true}},
	{Name: "cubic-second/20ms", Kind: "cubic", RTT: 20 * time.Millisecond, Buffer: 20 * time.Millisecond, Ours: [2]bool{true, false}},
	{Name: "cubic-second/100ms", Kind: "cubic", RTT: 100 * time.Millisecond, Buffer: 100 * time.Millisecond, Ours: [2]bool{true, false}},
	// The long flow joins the short one; the buffer is one BDP at the short RTT, then at the long.
	{Name: "rtt/20+100ms/buffer=20ms", Kind: "rtt", RTT: 20 * time.Millisecond, RTT2: 100 * time.Millisecond, Buffer: 20 * time.Millisecond, Ours: [2]bool{true, true}, Short: true},
	{Name: "rtt/20+100ms/buffer=100ms", Kind: "rtt", RTT: 20 * time.Millisecond, RTT2: 100 * time.Millisecond, Buffer: 100 * time.Millisecond, Ours: [2]bool{true, true}},
}

// pairResult is one run's (or the worst run's) figures.
type pairResult struct {
	Runs       int
	A, B       float64 // each flow's share of what both delivered
	Total      float64 // both flows' goodput / the rate
	Jain       float64
	MinA, MaxA float64 // over runs
}

func (a pairResult) worse(b pairResult) pairResult {
	if a.Runs == 0 {
		b.MinA, b.MaxA = b.A, b.A
		return b
	}
	w := a
	if b.Jain < a.Jain {
		w = b
	}
	w.Runs = a.Runs + b.Runs
	w.MinA, w.MaxA = min(a.MinA, b.A), max(a.MaxA, b.A)
	w.Total = min(a.Total, b.Total)
	return w
}

// check returns the targets the (worst) result misses.
func (ps pairScenario) check(tg simTargets, r pairResult) []string {
	var fails []string
	switch ps.Kind {
	case "same":
		if r.Jain < tg.Jain {
			fails = append(fails, fmt.Sprintf("Jain's index %.3f < %.2f", r.Jain, tg.Jain))
		}
	case "cubic":
		ours := "second"
		lo, hi := r.MinA, r.MaxA // flow A's extremes; ours is B: 1 − A
		if ps.Ours[0] {
			ours = "first"
		}
		if lo < tg.ShareLo || hi > tg.ShareHi {
			fails = append(fails, fmt.Sprintf("first flow's share %.1f–%.1f %% over runs (ours is the %s), want each side in %.0f–%.0f %%",
				100*lo, 100*hi, ours, 100*tg.ShareLo, 100*tg.ShareHi))
		}
	case "rtt":
		if long := 1 - r.MaxA; long < tg.LongShare {
			fails = append(fails, fmt.Sprintf("the %v flow's share %.1f %% < %.0f %%", ps.RTT2, 100*long, 100*tg.LongShare))
		}
	}
	return fails
}

// pairFrom is the first second measured in a run of dur: 30 s after the join, or the second
// half of a shorter run.
func pairFrom(dur time.Duration) int {
	if from := int((pairJoin + pairAfter) / time.Second); from < int(dur/time.Second) {
		return from
	}
	return int(dur/time.Second) / 2
}

func runPair(t *testing.T, ps pairScenario, ctl simController, seed uint64, dur time.Duration) pairResult {
	flows := make([]connFlow, 2)
	for i := range flows {
		if ps.Ours[i] {
			flows[i] = connFlow{Name: fmt.Sprintf("%s %d", ctl.Name, i+1), CC: ctl.Fac}
		} else {
			flows[i] = connFlow{Name: "cubic", CC: refCubicFactory()}
		}
	}
	flows[1].Start, flows[1].RTT = pairJoin, ps.RTT2
	queue := simnet.BDP(pairRate, ps.Buffer)
	longest := max(ps.RTT, ps.RTT2)
	sc := connScenario{Rate: pairRate, RTT: ps.RTT, QueueBytes: queue, Seed: seed, Flows: flows, Duration: dur,
		Window: gridWindowPaths*(simnet.BDP(pairRate, longest)+queue)/simMSS + 1024}
	start := time.Now()
	r := runConns(t, sc)
	logShares(t, ps.Name, sc, r)
	from := pairFrom(dur)
	a, b := mean(r.Share[0], from, len(r.Share[0])), mean(r.Share[1], from, len(r.Share[1]))
	res := pairResult{Runs: 1, Total: a + b, Jain: jain(a, b)}
	if a+b > 0 {
		res.A, res.B = a/(a+b), b/(a+b)
	}
	t.Logf("%s, seed %d: seconds %d–%d: %s %.1f %%, %s %.1f %% of the link (%.1f %% / %.1f %% of the pair), Jain %.3f; %v of wall clock",
		ps.Name, seed, from, len(r.Share[0]), flows[0].Name, 100*a, flows[1].Name, 100*b, 100*res.A, 100*res.B, res.Jain,
		time.Since(start).Round(time.Millisecond))
	return res
}

func TestSimTwoFlows(t *testing.T) {
	runs, dur := envInt("UDT_SIM_RUNS", 3), pairJoin+pairAfter+pairSpan
	if testing.Short() {
		runs, dur = 1, 12*time.Second
	}
	for _, ctl := range simControllersUnderTest(t) {
		var mu sync.Mutex
		results := map[string]pairResult{}
		t.Run(ctl.Name, func(t *testing.T) {
			for _, ps := range pairScenarios {
				if testing.Short() && !ps.Short {
					continue
				}
				t.Run(ps.Name, func(t *testing.T) {
					t.Parallel()
					var worst pairResult
					for run := range runs {
						worst = worst.worse(runPair(t, ps, ctl, uint64(run+1), dur))
					}
					mu.Lock()
					results[ps.Name] = worst
					mu.Unlock()
					if fails := ps.check(issue10Targets, worst); len(fails) > 0 {
						t.Logf("below issue 10's targets (reported in the table): %s", strings.Join(fails, "; "))
					}
					fails := ps.check(issue10Floors, worst)
					switch {
					case len(fails) == 0 || !ctl.asserted() || testing.Short():
					case ps.KnownMiss != "" && ctl.Spec == simDefaultSpec:
						t.Logf("KNOWN MISS of the asserted floors (issue 10, open): %s; why: %s", strings.Join(fails, "; "), ps.KnownMiss)
						if worst.Total < issue10Floors.Util {
							t.Errorf("%s: utilisation %.1f %% < %.0f %%", ctl.label(), 100*worst.Total, 100*issue10Floors.Util)
						}
					default:
						t.Errorf("%s below the asserted floors (issue10Floors): %s", ctl.label(), strings.Join(fails, "; "))
					}
				})
			}
		})
		var b strings.Builder
		fmt.Fprintf(&b, "### two flows, %s: 100 Mbit/s, the second joins at %v; shares over %v–%v of what both delivered; worst of %d run(s)\n\n",
			ctl.label(), pairJoin, time.Duration(pairFrom(dur))*time.Second, dur, runs)
		b.WriteString("| scenario | first flow | second flow | first's share (min–max over runs) | Jain (worst) | utilisation (worst) | misses |\n|---|---|---|---|---|---|---|\n")
		for _, ps := range pairScenarios {
			r, ok := results[ps.Name]
			if !ok {
				continue
			}
			name := func(i int) string {
				rtt := ps.RTT
				if i == 1 && ps.RTT2 > 0 {
					rtt = ps.RTT2
				}
				if ps.Ours[i] {
					return fmt.Sprintf("%s, %v", ctl.label(), rtt)
				}
				return fmt.Sprintf("cubic (reference), %v", rtt)
			}
			fmt.Fprintf(&b, "| %s (buffer %v) | %s | %s | %s–%s %% | %.3f | %s %% | %s |\n", ps.Name, ps.Buffer, name(0), name(1),
				pct(r.MinA), pct(r.MaxA), r.Jain, pct(r.Total), strings.Join(append(ps.check(issue10Targets, r), knownMiss(ps, ctl, r)...), "; "))
		}
		t.Logf("\n%s", b.String())
	}
}

// The reference is a loss-based flow: alone it fills a clean 100 Mbit/s · 20 ms path with a
// 1-BDP buffer (≥ 90 % after its slow start) and collapses under 1 % random loss at 100 ms
// (≤ 10 %; kernel CUBIC got 1.8 % on such a path, design notes), so the competition tests
// compete with what they claim to.
func TestSimRefCubic(t *testing.T) {
	dur := simDuration(20*time.Second, 10*time.Second)
	for _, p := range []struct {
		rtt      time.Duration
		loss     float64
		min, max float64
	}{{20 * time.Millisecond, 0, 0.9, 1.01}, {100 * time.Millisecond, 0.01, 0, 0.1}} {
		t.Run(fmt.Sprintf("rtt=%v/loss=%s", p.rtt, lossName(p.loss)), func(t *testing.T) {
			t.Parallel()
			sc := connScenario{Rate: 100e6, RTT: p.rtt, Loss: p.loss, Seed: 1,
				Flows: []connFlow{{Name: "cubic", CC: refCubicFactory()}}, Duration: dur}
			r := runConns(t, sc)
			logShares(t, "reference CUBIC", sc, r)
			u := mean(r.Share[0], 3, len(r.Share[0]))
			t.Logf("share from 3 s: %.1f %%", 100*u)
			if u < p.min || u > p.max {
				t.Errorf("reference CUBIC's share %.3f, want %.2f–%.2f", u, p.min, p.max)
			}
		})
	}
}

// knownMiss marks, for the table, a scenario whose asserted floor the default is known to miss.
func knownMiss(ps pairScenario, ctl simController, r pairResult) []string {
	if ps.KnownMiss == "" || ctl.Spec != simDefaultSpec || len(ps.check(issue10Floors, r)) == 0 {
		return nil
	}
	return []string{"below the floor too (known, issue 10 open)"}
}
