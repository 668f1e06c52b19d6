package congestion

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

type simScenario struct {
	rate     float64       // bottleneck bit/s
	rtt      time.Duration // propagation
	queue    int           // packets; 0: one bandwidth-delay product
	loss     float64
	flows    []Factory
	starts   []time.Duration
	duration time.Duration
}

// runSim returns each flow's delivered packets per second of model time.
func runSim(t *testing.T, sc simScenario) [][]float64 {
	t.Helper()
	s := &sim{rate: sc.rate, lossProb: sc.loss, oneWay: int64(sc.rtt / 2), rng: rand.New(rand.NewPCG(5, 6))}
	s.queueMax = sc.queue
	if s.queueMax == 0 {
		s.queueMax = max(int(sc.rate*sc.rtt.Seconds()/(simMSS*8)), 16)
	}
	var flows []*simFlow
	for i, fac := range sc.flows {
		var start time.Duration
		if i < len(sc.starts) {
			start = sc.starts[i]
		}
		flows = append(flows, newSimFlow(s, fac(), uint32(0x7FFFF000+i*7919), int64(start)))
	}
	secs := int(sc.duration / time.Second)
	out := make([][]float64, len(flows))
	prev := make([]int64, len(flows))
	for sec := 1; sec <= secs; sec++ {
		s.run(int64(sec) * int64(time.Second))
		for i, f := range flows {
			out[i] = append(out[i], float64(f.delivered-prev[i]))
			prev[i] = f.delivered
		}
	}
	return out
}

// utilisation is the share of the bottleneck's packets/s the flow delivered over seconds [from, to).
func utilisation(perSec []float64, rate float64, from, to int) float64 {
	var sum float64
	for _, x := range perSec[from:to] {
		sum += x
	}
	return sum / float64(to-from) / (rate / (simMSS * 8))
}

func logSeries(t *testing.T, name string, perSec []float64, rate float64) {
	var b strings.Builder
	for _, x := range perSec {
		fmt.Fprintf(&b, " %.0f", 100*x/(rate/(simMSS*8)))
	}
	t.Logf("%s utilisation %% per second:%s", name, b.String())
}

func jain(xs ...float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// The model's runs are deterministic (seeded), so their thresholds are properties of the
// controllers in the model, not timing assertions.

func TestSimNativeOneFlow(t *testing.T) {
	const rate = 100e6
	r := runSim(t, simScenario{rate: rate, rtt: 20 * time.Millisecond, flows: []Factory{NativeFactory(WithRandSource(rand.NewPCG(1, 1)))}, duration: 10 * time.Second})
	logSeries(t, "native, 100 Mbit/s, 20 ms RTT", r[0], rate)
	u := utilisation(r[0], rate, 9, 10)
	t.Logf("utilisation in the 10th second: %.3f", u)
	if u < 0.9 {
		t.Errorf("utilisation in the 10th second %.3f < 0.9", u)
	}
}

func TestSimNativeTwoFlows(t *testing.T) {
	const rate = 100e6
	r := runSim(t, simScenario{rate: rate, rtt: 20 * time.Millisecond,
		flows:  []Factory{NativeFactory(WithRandSource(rand.NewPCG(1, 1))), NativeFactory(WithRandSource(rand.NewPCG(2, 2)))},
		starts: []time.Duration{0, 2 * time.Second}, duration: 30 * time.Second})
	logSeries(t, "flow 1", r[0], rate)
	logSeries(t, "flow 2 (starts at 2 s)", r[1], rate)
	a, b := utilisation(r[0], rate, 20, 30), utilisation(r[1], rate, 20, 30)
	j := jain(a, b)
	t.Logf("seconds 20–30: shares %.3f %.3f, total %.3f, Jain's index %.4f", a, b, a+b, j)
	if j < 0.95 || a+b < 0.85 {
		t.Errorf("Jain's index %.4f (want ≥ 0.95), total %.3f (want ≥ 0.85)", j, a+b)
	}
}

// TestSimNativeLossy measures the native controller under random loss at 100 ms RTT. DAIMD reads
// every loss of a packet sent after the last decrease as a new congestion period (spec §5.3), so
// random loss keeps cutting the rate: expect a small share. The test only checks that the flow
// keeps going; the figures are in the log.
func TestSimNativeLossy(t *testing.T) {
	const rate = 100e6
	for _, loss := range []float64{0.001, 0.01} {
		r := runSim(t, simScenario{rate: rate, rtt: 100 * time.Millisecond, loss: loss,
			flows: []Factory{NativeFactory(WithRandSource(rand.NewPCG(1, 1)))}, duration: 30 * time.Second})
		name := fmt.Sprintf("native, 100 ms RTT, %g %% loss", 100*loss)
		logSeries(t, name, r[0], rate)
		u := utilisation(r[0], rate, 10, 30)
		t.Logf("%s: share in seconds 10–30 %.3f", name, u)
		if u < 0.02 {
			t.Errorf("%s: share %.3f, the flow stalls", name, u)
		}
	}
}

func TestSimFixedAndMaxBandwidth(t *testing.T) {
	const rate = 100e6
	for _, c := range []struct {
		name string
		fac  Factory
		want float64
	}{
		{"fixed 50 Mbit/s", FixedFactory(50e6), 0.5},
		{"fixed 20 Mbit/s", FixedFactory(20e6), 0.2},
		{"native capped at 3.125 MB/s", func() Controller { return WithMaxBandwidth(NewNative(), 3_125_000) }, 0.25},
	} {
		r := runSim(t, simScenario{rate: rate, rtt: 20 * time.Millisecond, flows: []Factory{c.fac}, duration: 4 * time.Second})
		logSeries(t, c.name, r[0], rate)
		if u := utilisation(r[0], rate, 1, 4); u < c.want*0.99 || u > c.want*1.01 {
			t.Errorf("%s: utilisation %.4f, want %.2f ± 1 %%", c.name, u, c.want)
		}
	}
}
