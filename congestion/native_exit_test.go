package congestion

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// slowStarter returns a controller in slow start with cwnd 16 and, if rate > 0, a known receive
// rate (from an ACK less than SYN after Init, which only records measurements).
func slowStarter(t *testing.T, rate int, rtt time.Duration) *Native {
	t.Helper()
	n := NewNative(WithRandSource(half))
	n.Init(t0, Params{MSS: 1500, FlowWindow: 8192, ISN: isn})
	n.OnACK(ms(1), ACK{Seq: sq(0), RTT: rtt, RecvRate: rate, CurrSeq: sq(15)})
	if !n.SlowStart() || n.State().Window != 16 {
		t.Fatalf("setup: slow start %v, window %v", n.SlowStart(), n.State().Window)
	}
	return n
}

// TestNativeLeaveSlowStart covers the three ways out of slow start (spec §5.2 step 2, §5.3 step 1,
// §5.4), with and without a known receive rate. Without one the period is (RTT+SYN)/cwnd: the
// correction of the reference's inverted cwnd/(RTT+SYN) in onLoss and onTimeout (spec §9.6.1).
func TestNativeLeaveSlowStart(t *testing.T) {
	const rtt = 30 * time.Millisecond // RTT+SYN = 40 000 µs; with cwnd 16: 2500 µs
	for _, c := range []struct {
		name     string
		rate     int
		event    func(n *Native)
		period   time.Duration
		loss     bool // the SYN-after-loss flag
		decrease bool // a new congestion period started
	}{
		{"loss with rate: STP = 1e6/rate, nothing else", 4000,
			func(n *Native) { n.OnLoss(ms(2), Loss{Ranges: []Range{{sq(3), sq(5)}}, CurrSeq: sq(15)}) },
			250 * time.Microsecond, false, false},
		{"loss without rate: (RTT+SYN)/cwnd, then a new period", 0,
			func(n *Native) { n.OnLoss(ms(2), Loss{Ranges: []Range{{sq(3), sq(5)}}, CurrSeq: sq(15)}) },
			2813 * time.Microsecond, true, true}, // ⌈2500·1.125⌉
		{"timeout with rate", 4000, func(n *Native) { n.OnTimeout(ms(2)) }, 250 * time.Microsecond, false, false},
		{"timeout without rate: (RTT+SYN)/cwnd", 0, func(n *Native) { n.OnTimeout(ms(2)) }, 2500 * time.Microsecond, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := slowStarter(t, c.rate, rtt)
			c.event(n)
			if n.SlowStart() {
				t.Fatal("still in slow start")
			}
			s := n.State()
			if s.Period != c.period || s.Window != 16 {
				t.Errorf("State = %+v, want Period %v, Window 16", s, c.period)
			}
			if n.loss != c.loss {
				t.Errorf("loss flag = %v, want %v", n.loss, c.loss)
			}
			if got := n.decCount == 1; got != c.decrease {
				t.Errorf("new congestion period = %v, want %v", got, c.decrease)
			}
		})
	}
}

func TestNativeLeaveSlowStartByACKWithoutRate(t *testing.T) {
	n := NewNative()
	n.Init(t0, Params{MSS: 1500, FlowWindow: 20, ISN: isn})
	n.OnACK(ms(10), ACK{Seq: sq(16), RTT: 40 * time.Millisecond, CurrSeq: sq(15)})
	// cwnd = 16 + 18 = 34 > 20; STP = (40 000 + 10 000)/34 µs, then the floor increase 0.01
	// (Bandwidth unknown: no spare capacity).
	stp := 50000.0 / 34
	stp = stp * 10000 / (stp*0.01 + 10000)
	checkState(t, "exit", n.State(), periodUS(stp), 34)
}

func TestNativeTimeoutAfterSlowStartIsNoOp(t *testing.T) {
	n := afterSlowStart(t)
	before := *n
	n.OnTimeout(ms(15))
	n.OnPacketReceived(ms(15), sq(3), 1500)
	if *n != before {
		t.Errorf("OnTimeout/OnPacketReceived changed the state:\n%+v\n%+v", before, *n)
	}
}

func TestNativeSlowStartIgnoresStaleACK(t *testing.T) {
	n := NewNative()
	n.Init(t0, Params{FlowWindow: 8192, ISN: isn})
	n.OnACK(ms(10), ACK{Seq: sq(16), CurrSeq: sq(15)})
	// An ACK number before LastAck (stale or hostile) adds nothing; the reference's seqlen would
	// add ≈ 2^31.
	n.OnACK(ms(20), ACK{Seq: sq(10), CurrSeq: sq(15)})
	if w := n.State().Window; w != 34 {
		t.Errorf("Window = %v after a stale ACK, want 34", w)
	}
	// A repeated ACK number is the inclusive count of one.
	n.OnACK(ms(30), ACK{Seq: sq(16), CurrSeq: sq(15)})
	if w := n.State().Window; w != 35 {
		t.Errorf("Window = %v after a repeated ACK, want 35", w)
	}
}

func TestNativeEmptyLossIgnored(t *testing.T) {
	n := slowStarter(t, 0, 0)
	before := *n
	n.OnLoss(ms(3), Loss{CurrSeq: sq(15)})
	if *n != before {
		t.Error("a loss report without ranges changed the state")
	}
}

func TestNativeOnPacketSentTracksCurrSeq(t *testing.T) {
	n := afterSlowStart(t) // CurrSeq ISN+1000
	n.OnPacketSent(ms(11), sq(1001), 1500)
	n.OnPacketSent(ms(11), sq(990), 1500) // a retransmission: not the largest
	if n.currSeq != sq(1001) {
		t.Fatalf("CurrSeq = %d, want %d", n.currSeq, sq(1001))
	}
	n.OnLoss(ms(12), Loss{Ranges: []Range{{sq(999), sq(999)}}, CurrSeq: sq(1001)})
	if n.lastDecSeq != sq(1001) {
		t.Errorf("LastDecSeq = %d, want %d", n.lastDecSeq, sq(1001))
	}
}

// TestNativeDeterministicWithSeed runs the same random event sequence through two controllers with
// the same seed and checks they agree step by step; DecRandom takes every value in 1..AvgNAKNum.
func TestNativeDeterministicWithSeed(t *testing.T) {
	run := func() ([]State, map[int]int) {
		n := NewNative(WithRandSource(rand.NewPCG(7, 11)))
		n.Init(t0, Params{MSS: 1500, FlowWindow: 64, ISN: isn})
		ev := rand.New(rand.NewPCG(1, 2)) // the event generator
		var states []State
		seen := map[int]int{}
		cur := 16
		for i := range 4000 {
			now := ms(float64(i) * 2.5)
			cur += 3
			if ev.IntN(4) == 0 {
				first := cur - 1 - ev.IntN(60)
				n.OnLoss(now, Loss{Ranges: []Range{{sq(first), sq(first)}}, CurrSeq: sq(cur)})
				seen[n.decRandom]++
			} else {
				n.OnACK(now, ACK{Seq: sq(cur - 10), RTT: 20 * time.Millisecond, RecvRate: 8000, Bandwidth: 10000, CurrSeq: sq(cur)})
			}
			states = append(states, n.State())
		}
		return states, seen
	}
	a, seen := run()
	b, _ := run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("step %d: %+v vs %+v with the same seed", i, a[i], b[i])
		}
	}
	for k := 1; k <= 5; k++ {
		if seen[k] == 0 {
			t.Errorf("DecRandom never took the value %d: %v", k, seen)
		}
	}
	if len(seen) > 5 {
		t.Errorf("DecRandom outside 1..5: %v", seen)
	}
}

func TestNativeInitDefaults(t *testing.T) {
	n := NewNative()
	n.Init(t0, Params{})
	if n.mss != 1500 || n.maxCWnd != 8192 || n.rttUS != 100000 {
		t.Errorf("defaults: MSS %v, max cwnd %v, RTT %v µs", n.mss, n.maxCWnd, n.rttUS)
	}
	// Init resets a used controller.
	n.OnTimeout(ms(1))
	n.Init(ms(2), Params{MSS: 1000, FlowWindow: 100, ISN: 5})
	if !n.SlowStart() || n.State() != (State{Period: time.Microsecond, Window: 16, ACKPeriod: SYN}) || n.lastAck != 4 {
		t.Errorf("Init did not reset: %+v", n.State())
	}
	if n.String() != "udt" || math.IsNaN(n.State().Window) {
		t.Error("String")
	}
}

// TestNativeSpareCapacity checks B' of spec §5.2 step 6 through the increase it selects: link
// capacity − current rate, truncated to whole packets/s, capped at capacity/9 (integer division)
// while STP > LastDecPeriod.
func TestNativeSpareCapacity(t *testing.T) {
	for _, c := range []struct {
		name          string
		bw            int     // packets/s
		stp, lastDecP float64 // µs
		inc           float64 // packets per SYN
	}{
		{"uncapped: 65 000 pkt/s = 780 Mbit/s", 75000, 100, 100, 1},
		{"capped at 75 000/9 = 8333 pkt/s = 99.996 Mbit/s", 75000, 100, 50, 0.1},
		{"capped at 75 006/9 = 8334 pkt/s = 100.008 Mbit/s", 75006, 100, 50, 1},
		{"below the cap: 769 pkt/s", 20000, 52, 40, 0.01},
		{"sending above the capacity: floor", 20000, 40, 40, 0.01},
		{"capacity unknown: floor", 0, 100, 100, 0.01},
		{"truncation: 8333.9 → 8333 pkt/s", 18334, 99.999, 100, 0.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := afterSlowStart(t)
			n.stp, n.lastDecPeriod, n.bw = c.stp, c.lastDecP, int64(c.bw)
			n.OnACK(ms(20), ACK{Seq: sq(900), CurrSeq: sq(1000)})
			want := c.stp * 10000 / (c.stp*c.inc + 10000)
			if math.Abs(n.stp-want) > 1e-9 {
				t.Errorf("STP %v → %v, want %v (inc %v)", c.stp, n.stp, want, c.inc)
			}
		})
	}
}
