package congestion_test

import (
	"math"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// The reference CUBIC as a timeline, across the 31-bit wrap: slow start doubles per window, a
// loss cuts to β = 0.7 once per window (re-reports and losses of the same window do not cut
// again), the window counts the packets a NAK shows past the hole, and congestion avoidance
// returns to W_max about K = ∛(W_max(1 − β)/C) seconds after the cut (RFC 9438 §4.2), below it
// before (concave) and above it after (convex), following W_cubic.
func TestRefCubicTimeline(t *testing.T) {
	const isn = 0x7FFFFFF0 // wraps after 16 packets
	c := refCubicFactory()().(*refCubic)
	c.Init(t0, congestion.Params{MSS: 1500, FlowWindow: 1 << 20, ISN: isn})
	seq := func(n int) uint32 { return uint32(isn+n) & 0x7FFFFFFF }
	rtt := 100 * time.Millisecond
	now := t0
	acked := 0
	ack := func(n int) {
		acked += n
		c.OnACK(now, congestion.ACK{Seq: seq(acked), RTT: rtt, CurrSeq: seq(acked + int(c.cwnd))})
	}
	ack(10)
	if c.cwnd != 20 {
		t.Fatalf("slow start: cwnd %g after 10 acknowledged, want 20", c.cwnd)
	}
	for c.cwnd < 100 {
		ack(10)
	}
	if got := c.State().Period; got != time.Duration(float64(rtt)/(2*c.cwnd)) {
		t.Errorf("slow-start pacing period %v, want sRTT/(2·cwnd)", got)
	}
	w := c.cwnd
	curr := seq(acked + int(w))
	c.OnLoss(now, congestion.Loss{Ranges: []congestion.Range{{First: seq(acked + 5), Last: seq(acked + 5)}}, CurrSeq: curr})
	if c.cwnd != 0.7*w {
		t.Fatalf("cwnd %g after a loss at %g, want %g", c.cwnd, w, 0.7*w)
	}
	if got, want := c.State().Window, 0.7*w+6; got != want {
		t.Errorf("window %g in recovery, want cwnd + the 6 packets up to the one after the hole", got)
	}
	c.OnLoss(now, congestion.Loss{Ranges: []congestion.Range{{First: seq(acked + 50), Last: seq(acked + 52)}}, CurrSeq: curr})
	c.OnLoss(now, congestion.Loss{Ranges: []congestion.Range{{First: seq(acked + 5), Last: seq(acked + 5)}}, CurrSeq: curr})
	if c.cwnd != 0.7*w {
		t.Fatalf("cwnd %g after more losses of the same window, want %g (one cut per window)", c.cwnd, 0.7*w)
	}
	ack(int(w) + 1) // the repaired window, through the recovery point: recovery ends, no growth
	if c.inRec || c.cwnd != 0.7*w {
		t.Fatalf("after recovery: inRec %v, cwnd %g, want false, %g", c.inRec, c.cwnd, 0.7*w)
	}
	if got := c.State().Period; got != time.Duration(float64(rtt)/(1.2*c.cwnd)) {
		t.Errorf("congestion-avoidance pacing period %v, want sRTT/(1.2·cwnd)", got)
	}
	k := math.Cbrt(w * 0.3 / 0.4)
	cut := now
	for now.Sub(cut).Seconds() < 2*k {
		now = now.Add(10 * time.Millisecond)
		ack(max(int(c.cwnd/10), 1)) // a window per RTT, in ACKs every 10 ms
		el := now.Sub(cut).Seconds()
		switch {
		case el < 0.7*k && c.cwnd >= w:
			t.Fatalf("at %.2f s (K = %.2f s) cwnd %.1f already at W_max %g: not concave", el, k, c.cwnd, w)
		case el > 1.5*k && c.cwnd <= 1.02*w:
			t.Fatalf("at %.2f s (K = %.2f s) cwnd %.1f not above W_max %g: not convex", el, k, c.cwnd, w)
		}
	}
	el := now.Sub(cut).Seconds() + rtt.Seconds()
	if want := 0.4*math.Pow(el-k, 3) + w; math.Abs(c.cwnd-want) > 0.1*want {
		t.Errorf("at 2K cwnd %.1f, want W_cubic(t + RTT) = %.1f ± 10 %%", c.cwnd, want)
	}
	c.OnTimeout(now)
	if c.cwnd != 1 || c.ssthresh < 2 {
		t.Errorf("after a timeout cwnd %g, ssthresh %g; want 1 and β·cwnd", c.cwnd, c.ssthresh)
	}
}
