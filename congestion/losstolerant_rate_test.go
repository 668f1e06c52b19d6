package congestion

import (
	"math"
	"testing"
	"time"
)

// near reports whether a and b agree to 1e-9 relative.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// rttACK is an ACK at ms(at) carrying only an RTT (queueing delay = rtt − 10 ms here).
func rttACK(c *LossTolerant, at float64, rtt time.Duration, seq int) {
	c.OnACK(ms(at), ACK{Seq: sq(seq), RTT: rtt, CurrSeq: sq(1000)})
}

// A queue above the threshold cuts the rate to 0.95 of the receive rate without a loss, once
// per cutSpacing; a queue that then falls leaves the controller as it is.
func TestLossTolerantDelayCut(t *testing.T) {
	c := ltAfterSlowStart(t) // STP 100 µs, receive rate 10 000 pkt/s, min RTT 10 ms
	rttACK(c, 20, 11300*time.Microsecond, 20)
	if want := 1e6 / 9500; !near(c.nat.stp, want) || c.DelayCuts() != 1 {
		t.Fatalf("after 1.3 ms of queue: STP %v (want %v = 1/(0.95·10 000)), %d delay cuts", c.nat.stp, want, c.DelayCuts())
	}
	if c.nat.lastDecSeq != sq(1000) {
		t.Fatalf("LastDecSeq %d, want CurrSeq: the cut starts a congestion period", c.nat.lastDecSeq)
	}
	// Within cutSpacing (2·11.3 + 80 = 102.6 ms) no second cut; the increase is 0.01 per SYN.
	stp := c.nat.stp
	rttACK(c, 30, 11300*time.Microsecond, 30)
	if want := stp * synUS / (stp*minIncrease + synUS); !near(c.nat.stp, want) || c.DelayCuts() != 1 {
		t.Fatalf("within the spacing: STP %v (want %v), %d delay cuts", c.nat.stp, want, c.DelayCuts())
	}
	// The queue falls: no competition.
	rttACK(c, 130, 10500*time.Microsecond, 40)
	if c.competing {
		t.Fatal("a queue that fell after the cut was taken for competition")
	}
}

// A queue that has not fallen one cutSpacing after a delay cut is held by other flows: the cut
// is undone and the controller competes as Native until the queue falls under the threshold.
func TestLossTolerantCompeting(t *testing.T) {
	c := ltAfterSlowStart(t)
	rttACK(c, 20, 11300*time.Microsecond, 20) // cut from ≈100 to 105.3 µs
	from := c.cutFrom
	rttACK(c, 130, 12*time.Millisecond, 30) // 2 ms ≥ 1.3 ms, 110 ms ≥ 2·12 + 80 ms later
	if !c.competing || c.nat.stp > from {
		t.Fatalf("queue grew after the cut: competing %v, STP %v (want ≤ %v, the cut undone)", c.competing, c.nat.stp, from)
	}
	rttACK(c, 250, 12*time.Millisecond, 40)
	if c.DelayCuts() != 1 {
		t.Fatalf("%d delay cuts while competing, want 1", c.DelayCuts())
	}
	if c.nat.incMax != 0 {
		t.Fatalf("increase bounded while competing (incMax %v): want the native one", c.nat.incMax)
	}
	rttACK(c, 260, 10500*time.Microsecond, 50)
	if c.competing {
		t.Fatal("competition outlived the queue")
	}
}

// A congestion decrease leaves at least 0.85 of the receive rate, 0.7 when other flows hold the
// queue.
func TestLossTolerantFloor(t *testing.T) {
	c := ltAfterSlowStart(t)
	rttACK(c, 20, 11300*time.Microsecond, 20) // delay cut: STP 105.26, LastDecSeq = ISN+1000
	// A new-period loss two RTTs later is congestion (Veno's rule): ⌈105.26·1.125⌉ = 119 µs,
	// floored at 1/(0.85·10 000) = 117.65 µs.
	c.OnLoss(ms(44), Loss{Ranges: []Range{{sq(1001), sq(1001)}}, CurrSeq: sq(1100)})
	if want := 1e6 / 8500; !near(c.nat.stp, want) {
		t.Fatalf("STP %v after a congestion loss, want the floor %v", c.nat.stp, want)
	}
	// A deep queue (5.1 ms > 10 ms/2): every NAK goes to the native algorithm (five decreases
	// in a period with DecRandom 1), floored at 0.85 of the receive rate while the queue is a
	// spike, at 0.7 (CUBIC's decrease) once it has been deep for a cutSpacing.
	for _, x := range []struct {
		name  string
		since time.Time
		floor float64
	}{{"spike", time.Time{}, 0.85}, {"held", t0.Add(-time.Second), 0.7}} {
		d := ltAfterSlowStart(t)
		d.nat.stp = 112 // the native decreases would reach ⌈…⌈112·1.125⌉…⌉ = 203
		d.deepSince = x.since
		rttACK(d, 20, 15100*time.Microsecond, 20)
		for i := range 5 {
			d.OnLoss(ms(21+float64(i)), lossAt(600+i, 600+i))
		}
		if want := 1e6 / (x.floor * 10000); !near(d.nat.stp, want) {
			t.Errorf("deep queue, %s: STP %v, want the floor %v", x.name, d.nat.stp, want)
		}
	}
}

// Slow start that ends on congestion is the controller's own overshoot: the floor holds even in
// a deep queue, until the queue has drained.
func TestLossTolerantOvershoot(t *testing.T) {
	c := NewLossTolerant(WithRandSource(half))
	c.Init(t0, Params{MSS: 1500, FlowWindow: 100000, ISN: isn})
	c.OnACK(ms(10), ACK{Seq: sq(16), RTT: 10 * time.Millisecond, RecvRate: 8000, CurrSeq: sq(100)})
	c.OnACK(ms(20), ACK{Seq: sq(40), RTT: 20 * time.Millisecond, RecvRate: 8000, CurrSeq: sq(300)}) // 10 ms of queue: deep
	c.OnLoss(ms(21), Loss{Ranges: []Range{{sq(200), sq(200)}}, CurrSeq: sq(300)})
	if c.SlowStart() || !c.overshoot {
		t.Fatalf("slow start %v, overshoot %v after a deep-queue loss", c.SlowStart(), c.overshoot)
	}
	stp := c.nat.stp   // 1/RecvRate
	for i := range 5 { // the rest of the overshoot's losses
		c.OnLoss(ms(22+float64(i)), Loss{Ranges: []Range{{sq(301 + i), sq(301 + i)}}, CurrSeq: sq(400 + 100*i)})
	}
	if floor := 1e6 / (0.85 * float64(c.nat.recvRate)); c.nat.stp > floor+1e-9 {
		t.Fatalf("STP %v after the overshoot's losses (from %v), want at most the floor %v", c.nat.stp, stp, floor)
	}
}

// With no queue the native increase is bounded to 0.1–0.25 % of the rate per SYN; above the
// threshold it is 0.01 packets per SYN; in a queue deep for a cutSpacing it is the native one.
func TestLossTolerantGrowthBounds(t *testing.T) {
	for _, x := range []struct {
		name string
		bw   int64
		rtt  time.Duration
		want func(n *Native) float64
	}{
		{"no queue, spare 11.9 Gbit/s", 1000000, 10 * time.Millisecond, func(*Native) float64 { return 0.25 }},
		{"no queue, spare 1 pkt/s", 10001, 10 * time.Millisecond, func(*Native) float64 { return 0.1 }},
		{"queue above the threshold", 1000000, 11300 * time.Microsecond, func(*Native) float64 { return minIncrease }},
		{"deep queue, briefly", 1000000, 15100 * time.Microsecond, func(*Native) float64 { return minIncrease }},
		{"deep queue for a cutSpacing", 1000000, 15100 * time.Microsecond, func(n *Native) float64 { return n.increase() }},
	} {
		c := ltAfterSlowStart(t)
		if x.name == "deep queue for a cutSpacing" {
			c.deepSince = t0.Add(-time.Second) // deep for a while: held by other flows
		}
		c.nat.bw = x.bw
		c.nat.lastDecPeriod = 1e9 // no bw/9 cap
		c.nat.recvRate = 0        // no delay cut
		inc := x.want(c.nat)
		c.OnACK(ms(20), ACK{Seq: sq(20), RTT: x.rtt, Bandwidth: int(x.bw), CurrSeq: sq(1000)})
		if want := 100 * synUS / (100*inc + synUS); !near(c.nat.stp, want) {
			t.Errorf("%s: STP %v, want %v (an increase of %v)", x.name, c.nat.stp, want, inc)
		}
	}
}

// After a decrease of its own the rate returns at 1 % per SYN to 0.95 of the highest receive
// rate of the last 2 s, then grows at the bounded rate.
func TestLossTolerantReturnGrowth(t *testing.T) {
	c := ltAfterSlowStart(t)
	rttACK(c, 20, 11300*time.Microsecond, 20)
	c.OnLoss(ms(44), Loss{Ranges: []Range{{sq(1001), sq(1001)}}, CurrSeq: sq(1100)}) // floored: 8500 pkt/s
	c.OnACK(ms(60), ACK{Seq: sq(60), RTT: 10 * time.Millisecond, CurrSeq: sq(1100)}) // the SYN after a loss: none
	stp := c.nat.stp
	c.OnACK(ms(70), ACK{Seq: sq(70), RTT: 10 * time.Millisecond, CurrSeq: sq(1100)})
	perSYN := synUS / stp
	if want := stp * synUS / (stp*LossTolerantReturnGrowth*perSYN + synUS); !near(c.nat.stp, want) {
		t.Fatalf("STP %v, want %v (1 %% of the rate)", c.nat.stp, want)
	}
	// 2 s later the maximum has aged out: the bounded growth again (4 SYNs caught up: two RTTs).
	c.nat.lastDecPeriod = 1e9
	stp = c.nat.stp
	inc := boundedInc(c.nat, 10000)
	c.OnACK(ms(2100), ACK{Seq: sq(100), RTT: 10 * time.Millisecond, CurrSeq: sq(1100)})
	if want := stp * synUS / (stp*inc*4 + synUS); !near(c.nat.stp, want) {
		t.Fatalf("after 2 s: STP %v, want %v (an increase of %v)", c.nat.stp, want, inc)
	}
}

// A queue that has not fallen after a delay cut made while sending well above the receive rate
// is judged again one spacing later, not taken for other flows': the excess was in flight.
func TestLossTolerantOwnExcess(t *testing.T) {
	c := ltAfterSlowStart(t)
	c.nat.stp = 80 // 12 500 pkt/s against a receive rate of 10 000: a cut to 105.26 µs, ratio 1.32
	rttACK(c, 20, 11300*time.Microsecond, 20)
	if c.cutExcess < 1.3 {
		t.Fatalf("cutExcess %v, want ≈ 1.32", c.cutExcess)
	}
	rttACK(c, 130, 12*time.Millisecond, 30) // higher one spacing later: judged again
	if c.competing || c.cutQueue != 2*time.Millisecond {
		t.Fatalf("competing %v, cutQueue %v: want a second judgement from 2 ms", c.competing, c.cutQueue)
	}
	rttACK(c, 250, 11500*time.Microsecond, 40) // fallen by then: ours, and still above: cut again
	if c.competing || c.DelayCuts() != 2 {
		t.Fatalf("competing %v, %d delay cuts after the queue fell, want false, 2", c.competing, c.DelayCuts())
	}
}

// The cap of the increase is a share of the path's rate, so two flows at unequal rates on one
// path grow by the same number of packets per SYN (additive increase), not in proportion.
func TestLossTolerantCapIsAdditive(t *testing.T) {
	for _, stp := range []float64{100, 200, 400} {
		c := ltAfterSlowStart(t) // path rate: the receive rate of 10 000 pkt/s seen so far
		c.nat.stp, c.nat.bw, c.nat.lastDecPeriod = stp, 1000000, 1e9
		c.OnACK(ms(20), ACK{Seq: sq(20), RTT: 10 * time.Millisecond, Bandwidth: 1000000, CurrSeq: sq(1000)})
		if want := stp * synUS / (stp*0.25 + synUS); !near(c.nat.stp, want) {
			t.Errorf("STP %v: after one increase %v, want %v (0.25 packets per SYN)", stp, c.nat.stp, want)
		}
	}
}

// A flow held back by its application or receiver (sending above twice anything the path has
// delivered) does not grow its rate unused; below that it grows.
func TestLossTolerantAppLimited(t *testing.T) {
	for _, x := range []struct {
		stp  float64 // µs
		grow bool
	}{{400, false}, {600, true}} { // 2500 and 1667 pkt/s against a path rate of 1000
		c := NewLossTolerant(WithRandSource(half))
		c.Init(t0, Params{MSS: 1500, FlowWindow: 16, ISN: isn})
		c.OnACK(ms(10), ACK{Seq: sq(16), RTT: 10 * time.Millisecond, RecvRate: 1000, Bandwidth: 20000, CurrSeq: sq(100)})
		c.nat.stp = x.stp
		c.OnACK(ms(20), ACK{Seq: sq(30), RTT: 10 * time.Millisecond, CurrSeq: sq(100)})
		if grew := c.nat.stp < x.stp; grew != x.grow {
			t.Errorf("STP %v µs: after an ACK %v, grew %v, want %v", x.stp, c.nat.stp, grew, x.grow)
		}
	}
}

// The floor limits a decrease; a receive rate read far above the sending rate does not turn a
// congestion signal into a speed-up.
func TestLossTolerantFloorNeverSpeedsUp(t *testing.T) {
	c := ltClassifier(t)
	c.nat.recvRate = 1 << 30
	c.OnLoss(ms(12), lossAt(600, 659)) // 60 losses in 2000: congestion
	if c.nat.stp < 100 {
		t.Fatalf("STP %v after a congestion signal, want ≥ 100 (no speed-up)", c.nat.stp)
	}
}

// Period never rounds to 0, which would mean unpaced.
func TestLossTolerantPeriodNeverZero(t *testing.T) {
	c := ltAfterSlowStart(t)
	c.nat.stp = 1e-6 // 1 ps
	if p := c.State().Period; p <= 0 {
		t.Fatalf("Period %v, want ≥ 1 ns", p)
	}
}

// One RTT sample read far too low does not become the minimum RTT; two in a row do.
func TestLossTolerantMinRTTNeedsTwoSamples(t *testing.T) {
	c := ltAfterSlowStart(t) // min RTT 10 ms
	c.OnACK(ms(20), ACK{Seq: sq(20), RTT: 10 * time.Millisecond, PeerRTT: time.Microsecond, CurrSeq: sq(1000)})
	if c.MinRTT() != 10*time.Millisecond {
		t.Fatalf("one 1 µs sample: MinRTT %v, want 10ms", c.MinRTT())
	}
	c.OnACK(ms(30), ACK{Seq: sq(30), RTT: 10 * time.Millisecond, PeerRTT: 8 * time.Millisecond, CurrSeq: sq(1000)})
	c.OnACK(ms(40), ACK{Seq: sq(40), RTT: 10 * time.Millisecond, PeerRTT: 8 * time.Millisecond, CurrSeq: sq(1000)})
	if c.MinRTT() != 8*time.Millisecond {
		t.Fatalf("two 8 ms samples: MinRTT %v, want 8ms", c.MinRTT())
	}
}
