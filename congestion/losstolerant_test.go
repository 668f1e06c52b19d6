package congestion

import (
	"math"
	"testing"
	"time"
)

// ltAfterSlowStart returns a loss-tolerant controller just past slow start, with STP pinned to
// 100 µs (10 000 pkt/s), Bandwidth 20 000 pkt/s, smoothed and minimum RTT 10 ms, CurrSeq ISN+1000.
func ltAfterSlowStart(t *testing.T) *LossTolerant {
	t.Helper()
	c := NewLossTolerant(WithRandSource(half))
	c.Init(t0, Params{MSS: 1500, FlowWindow: 16, ISN: isn})
	c.OnACK(ms(10), ACK{Seq: sq(16), RTT: 10 * time.Millisecond, RecvRate: 10000, Bandwidth: 20000, CurrSeq: sq(1000)})
	if c.SlowStart() {
		t.Fatal("still in slow start")
	}
	c.nat.stp = 100
	c.nat.lastDecSeq = sq(500)
	return c
}

// ltClassifier is ltAfterSlowStart with no receive rate: no delay cut and no floor, so that a
// test sees the loss classification and the native decrease alone.
func ltClassifier(t *testing.T) *LossTolerant {
	t.Helper()
	c := ltAfterSlowStart(t)
	c.nat.recvRate = 0
	return c
}

// boundedInc is the increase LossTolerant applies with no queue and path rate path (packets/s):
// the native one bounded to at least 0.1 % of the rate per SYN, at most 0.25 % of the path's.
func boundedInc(n *Native, path float64) float64 {
	lo := LossTolerantMinGrowth * synUS / n.stp
	return min(max(n.increase(), lo), max(LossTolerantMaxGrowth*path*SYN.Seconds(), lo))
}

func lossAt(first, last int) Loss {
	return Loss{Ranges: []Range{{sq(first), sq(last)}}, CurrSeq: sq(1000)}
}

func TestLossTolerantIgnoresRandomLoss(t *testing.T) {
	c := ltAfterSlowStart(t)
	// Three isolated losses, RTT at its minimum, loss rate 3 in 500 (0.6 %): random.
	for i, s := range []int{600, 700, 800} {
		c.OnLoss(ms(12+float64(i)), lossAt(s, s))
	}
	if c.nat.stp != 100 || c.nat.loss {
		t.Fatalf("random losses reached the native algorithm: STP %v, loss flag %v", c.nat.stp, c.nat.loss)
	}
	if r, k := c.Losses(); r != 3 || k != 0 {
		t.Fatalf("Losses() = %d random, %d congestion; want 3, 0", r, k)
	}
	// The next SYN increases, which the native controller would not after a loss.
	c.OnACK(ms(20), ACK{Seq: sq(900), RTT: 10 * time.Millisecond, RecvRate: 10000, Bandwidth: 20000, CurrSeq: sq(1000)})
	if c.nat.stp >= 100 {
		t.Fatalf("no increase after random losses: STP %v", c.nat.stp)
	}
}

func TestLossTolerantQueueDelaySignal(t *testing.T) {
	c := ltClassifier(t)
	// Threshold: max(10 ms/8, 1 ms) = 1.25 ms. 11.2 ms is under it, 11.3 ms over.
	c.OnACK(ms(11), ACK{Seq: sq(20), RTT: 11200 * time.Microsecond, CurrSeq: sq(1000)})
	c.OnLoss(ms(12), lossAt(600, 600))
	if c.nat.stp != 100 {
		t.Fatalf("a loss at 1.2 ms of queueing delay decreased: STP %v", c.nat.stp)
	}
	c.OnACK(ms(13), ACK{Seq: sq(21), RTT: 11300 * time.Microsecond, CurrSeq: sq(1000)})
	c.OnLoss(ms(14), lossAt(601, 601))
	if c.nat.stp != 113 || c.nat.lastDecSeq != sq(1000) {
		t.Fatalf("a new-period loss at 1.3 ms of queueing delay: STP %v (want 113), LastDecSeq %d", c.nat.stp, c.nat.lastDecSeq)
	}
	// The same period (first loss before LastDecSeq = ISN+1000): no second decrease.
	c.OnLoss(ms(15), lossAt(700, 700))
	// A new period, but less than 2 smoothed RTTs (22.6 ms) after the decrease: none either.
	c.OnLoss(ms(14+22), Loss{Ranges: []Range{{sq(1001), sq(1001)}}, CurrSeq: sq(1100)})
	if c.nat.stp != 113 {
		t.Fatalf("decreased again within the spacing: STP %v", c.nat.stp)
	}
	// Two smoothed RTTs later, a new period decreases again.
	c.OnLoss(ms(14+23), Loss{Ranges: []Range{{sq(1002), sq(1002)}}, CurrSeq: sq(1200)})
	if c.nat.stp != 128 { // ⌈113·1.125⌉
		t.Fatalf("no decrease two RTTs later: STP %v, want 128", c.nat.stp)
	}
	if r, k := c.Losses(); r != 3 || k != 2 {
		t.Fatalf("Losses() = %d random, %d congestion; want 3, 2", r, k)
	}
}

func TestLossTolerantLossRateSignal(t *testing.T) {
	c := ltClassifier(t)
	// Sample: 2 RTTs at 10 000 pkt/s = 200, raised to the minimum 2000. 40 losses in 2000 is
	// 2 %: not above the threshold.
	if n := c.Sample(); n != LossTolerantMinSample {
		t.Fatalf("Sample() = %d, want %d", n, LossTolerantMinSample)
	}
	c.OnLoss(ms(12), lossAt(600, 639))
	if got := c.LossRate(); got != 0.02 || c.nat.stp != 100 {
		t.Fatalf("40 losses: LossRate %v (want 0.02), STP %v (want 100)", got, c.nat.stp)
	}
	// One more: 41 in 2000 > 2 %, a congestion signal even at the minimum RTT.
	c.OnLoss(ms(13), lossAt(660, 660))
	if got := c.LossRate(); got != 0.0205 || c.nat.stp != 113 {
		t.Fatalf("41 losses: LossRate %v (want 0.0205), STP %v (want 113)", got, c.nat.stp)
	}
	// While the rate stays high every NAK reaches the native algorithm, in-period ones too
	// (DecRandom is 1 in the first periods: each decreases).
	c.OnLoss(ms(14), lossAt(670, 670))
	if c.nat.stp != 128 {
		t.Fatalf("in-period NAK at a high loss rate: STP %v, want 128", c.nat.stp)
	}
	// Losses far ahead leave the old ones out of the sample: back to random.
	c.OnLoss(ms(15), Loss{Ranges: []Range{{sq(5000), sq(5000)}}, CurrSeq: sq(6000)})
	if got := c.LossRate(); got != 1.0/2000 {
		t.Fatalf("LossRate %v after a loss 4000 packets later, want 1/2000", got)
	}
	if r, k := c.Losses(); r != 2 || k != 2 {
		t.Fatalf("Losses() = %d random, %d congestion; want 2, 2", r, k)
	}
}

func TestLossTolerantLossRateCountsOnce(t *testing.T) {
	c := ltAfterSlowStart(t)
	c.OnLoss(ms(12), lossAt(600, 603))
	// The receiver's periodic re-report and an overlapping range add only the new numbers.
	c.OnLoss(ms(13), Loss{Ranges: []Range{{sq(600), sq(603)}, {sq(601), sq(605)}, {sq(610), sq(609)}}, CurrSeq: sq(1000)})
	if got, want := c.LossRate(), 7.0/2000; got != want { // 600–605 and 610 (a reversed range: its first)
		t.Fatalf("LossRate %v, want %v", got, want)
	}
}

func TestLossTolerantSample(t *testing.T) {
	c := ltAfterSlowStart(t)
	for _, x := range []struct {
		rate int
		rtt  time.Duration
		want int64
	}{
		{10000, 10 * time.Millisecond, 2000},
		{8333, 100 * time.Millisecond, 2000},
		{15000, 100 * time.Millisecond, 3000},
		{100000, 100 * time.Millisecond, 5000},
	} {
		c.OnACK(ms(100), ACK{Seq: sq(30), RTT: x.rtt, RecvRate: x.rate, CurrSeq: sq(1000)})
		if got := c.Sample(); got != x.want {
			t.Errorf("rate %d, RTT %v: Sample() = %d, want %d", x.rate, x.rtt, got, x.want)
		}
	}
}

func TestLossTolerantSlowStart(t *testing.T) {
	c := NewLossTolerant(WithRandSource(half))
	c.Init(t0, Params{MSS: 1500, FlowWindow: 1000, ISN: isn})
	// No RTT yet and a low loss rate: random, slow start goes on.
	c.OnLoss(ms(5), lossAt(3, 3))
	if !c.SlowStart() {
		t.Fatal("a loss before any RTT ended slow start")
	}
	c.OnACK(ms(10), ACK{Seq: sq(16), RTT: 10 * time.Millisecond, RecvRate: 2000, CurrSeq: sq(40)})
	c.OnLoss(ms(12), lossAt(30, 30))
	if !c.SlowStart() {
		t.Fatal("a random loss ended slow start")
	}
	if w := c.State().Window; w != 34 { // 16 + 18 (the inclusive count from ISN−1), no gain in slow start
		t.Fatalf("slow-start window %v, want 34", w)
	}
	// The queue grows: the next loss ends slow start, with STP = 1/RecvRate.
	c.OnACK(ms(20), ACK{Seq: sq(30), RTT: 12 * time.Millisecond, RecvRate: 2000, CurrSeq: sq(60)})
	c.OnLoss(ms(21), lossAt(50, 50))
	if c.SlowStart() || c.State().Period != 500*time.Microsecond {
		t.Fatalf("after a congestion loss: slow start %v, Period %v (want 500µs)", c.SlowStart(), c.State().Period)
	}
	// The window's rate term is multiplied by 6 after slow start: 2000 pkt/s · (12+10) ms = 44
	// → 264+16.
	c.OnACK(ms(40), ACK{Seq: sq(40), RTT: 12 * time.Millisecond, RecvRate: 2000, CurrSeq: sq(60)})
	if w := c.State().Window; w < 279.99 || w > 280.01 {
		t.Fatalf("window %v, want 280", w)
	}
}

// The increase catches up the SYNs an ACK gap skipped, up to two RTTs' worth; the native one
// increases once.
func TestLossTolerantIncreaseCatchUp(t *testing.T) {
	for _, c := range []struct {
		gap   float64 // ms since the last rate control
		steps float64 // increases applied
	}{
		{10, 1}, {15, 1}, {30, 3}, {40.5, 4}, {50, 4}, {1000, 4}, // RTT 10 ms: at most ⌈2·(10+10)/10⌉ = 4
	} {
		lt := ltAfterSlowStart(t)
		lt.nat.bw = 1000000              // spare capacity 990 000 pkt/s ≈ 11.9 Gbit/s: inc = 100 packets per SYN
		lt.nat.lastDecPeriod = 1e9       // no bw/9 cap on the spare capacity
		inc := boundedInc(lt.nat, 10000) // the native 100 packets per SYN, bounded to 0.25 % of 100
		lt.OnACK(ms(10+c.gap), ACK{Seq: sq(100), RTT: 10 * time.Millisecond, RecvRate: 10000, Bandwidth: 1000000, CurrSeq: sq(1000)})
		want := 100 * synUS / (100*inc*c.steps + synUS)
		if d := lt.nat.stp - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("gap %v ms: STP %v, want %v (%v increases of %v)", c.gap, lt.nat.stp, want, c.steps, inc)
		}
	}
	n := afterSlowStart(t)
	inc := n.increase()
	n.OnACK(ms(10+50), ACK{Seq: sq(100), RTT: 10 * time.Millisecond, RecvRate: 10000, Bandwidth: 20000, CurrSeq: sq(1000)})
	if want := 100 * synUS / (100*inc + synUS); n.stp != want {
		t.Errorf("native after a 50 ms gap: STP %v, want one increase: %v", n.stp, want)
	}
}

func TestLossTolerantInitResets(t *testing.T) {
	c := ltAfterSlowStart(t)
	c.OnLoss(ms(12), lossAt(600, 700))
	c.Init(ms(100), Params{ISN: 5})
	if c.MinRTT() != 0 || c.LossRate() != 0 || !c.SlowStart() || c.State().Window != 16 {
		t.Fatalf("after Init: MinRTT %v LossRate %v slow start %v window %v", c.MinRTT(), c.LossRate(), c.SlowStart(), c.State().Window)
	}
	if r, k := c.Losses(); r != 0 || k != 0 {
		t.Fatalf("after Init: Losses %d %d", r, k)
	}
	if !c.nat.catchUp {
		t.Fatal("Init cleared the catch-up increase")
	}
}

// Above half the min RTT of queueing delay every NAK goes to the native algorithm, in-period
// ones and ones inside the spacing too: the controller is then Native.
func TestLossTolerantDeepQueueIsNative(t *testing.T) {
	c := ltClassifier(t)
	c.OnACK(ms(11), ACK{Seq: sq(20), RTT: 15 * time.Millisecond, CurrSeq: sq(1000)}) // 5 ms: not above min RTT/2
	c.OnLoss(ms(12), lossAt(600, 600))
	c.OnLoss(ms(13), lossAt(700, 700)) // same period: ignored
	if c.nat.stp != 113 {
		t.Fatalf("at 5 ms of queue: STP %v, want one decrease (113)", c.nat.stp)
	}
	c.OnACK(ms(14), ACK{Seq: sq(21), RTT: 15100 * time.Microsecond, CurrSeq: sq(1000)}) // 5.1 ms
	c.OnLoss(ms(15), lossAt(710, 710))                                                  // same period, within the spacing: native decides
	if c.nat.stp != 128 || c.nat.decCount != 2 {
		t.Fatalf("at 5.1 ms of queue: STP %v (want 128), DecCount %d (want 2)", c.nat.stp, c.nat.decCount)
	}
	if r, k := c.Losses(); r != 1 || k != 2 {
		t.Fatalf("Losses() = %d random, %d congestion; want 1, 2", r, k)
	}
}

// A congestion signal restarts the catch-up count: only the SYNs after it count.
func TestLossTolerantCatchUpAfterCongestion(t *testing.T) {
	lt := ltClassifier(t)
	lt.nat.bw = 1000000
	lt.nat.lastDecPeriod = 1e9
	lt.OnACK(ms(11), ACK{Seq: sq(20), RTT: 15100 * time.Microsecond, CurrSeq: sq(1000)}) // deep queue: native
	lt.OnLoss(ms(12), lossAt(600, 600))                                                  // a congestion signal: STP 113
	// The next rate control (≥ SYN after ms(10)) applies none: the SYN after a loss.
	lt.OnACK(ms(20), ACK{Seq: sq(30), RTT: 10 * time.Millisecond, CurrSeq: sq(1000)})
	if lt.nat.stp != 113 {
		t.Fatalf("STP %v after the SYN with a loss, want 113", lt.nat.stp)
	}
	lt.OnLoss(ms(25), Loss{Ranges: []Range{{sq(1001), sq(1001)}}, CurrSeq: sq(1100)}) // queue 0: random, not counted
	// 40 ms later: 4 SYNs since the last rate control; the last congestion signal (ms 12) is older.
	inc := boundedInc(lt.nat, 10000)
	lt.OnACK(ms(60), ACK{Seq: sq(40), RTT: 10 * time.Millisecond, CurrSeq: sq(1100)})
	if want := 113 * synUS / (113*inc*4 + synUS); math.Abs(lt.nat.stp-want) > 1e-9 {
		t.Fatalf("STP %v, want %v (4 increases)", lt.nat.stp, want)
	}
	// A congestion signal 15 ms before the next run leaves one SYN to catch up.
	lt.OnACK(ms(61), ACK{Seq: sq(41), RTT: 16 * time.Millisecond, CurrSeq: sq(1100)})
	lt.OnLoss(ms(85), Loss{Ranges: []Range{{sq(1101), sq(1101)}}, CurrSeq: sq(1200)})
	lt.nat.loss = false // look at the catch-up count alone
	stp := lt.nat.stp
	lt.deepSince = ms(-1000) // 6 ms of queue, deep for longer than a cutSpacing:
	inc = lt.nat.increase()  // the native increase
	lt.OnACK(ms(100), ACK{Seq: sq(50), RTT: 16 * time.Millisecond, CurrSeq: sq(1200)})
	if want := stp * synUS / (stp*inc + synUS); math.Abs(lt.nat.stp-want) > 1e-9 {
		t.Fatalf("STP %v, want %v (1 increase)", lt.nat.stp, want)
	}
}
