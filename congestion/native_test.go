package congestion

import (
	"math"
	"testing"
	"time"
)

// constSource is a rand.Source that always returns the same value: 1<<63 gives a uniform draw
// of exactly 0.5.
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

const half = constSource(1 << 63)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(x float64) time.Time { return t0.Add(time.Duration(x * float64(time.Millisecond))) }

// isn near the wrap, so that the timelines cross 2^31 − 1 → 0.
const isn = 0x7FFFFFF8

func sq(n int) uint32 { return uint32(int64(isn)+int64(n)) & maxSeq }

func periodUS(us float64) time.Duration { return time.Duration(math.Round(us * 1000)) }

func checkState(t *testing.T, step string, got State, wantPeriod time.Duration, wantWindow float64) {
	t.Helper()
	if d := got.Period - wantPeriod; d < -1 || d > 1 {
		t.Errorf("%s: Period = %v, want %v", step, got.Period, wantPeriod)
	}
	if math.Abs(got.Window-wantWindow) > 1e-9*math.Max(1, wantWindow) {
		t.Errorf("%s: Window = %v, want %v", step, got.Window, wantWindow)
	}
}

func TestIncreaseTable(t *testing.T) {
	// spec §5.2's table, MSS 1500: spare capacity in bit/s → packets per SYN.
	const mss = 1500
	bitsPerPkt := float64(mss * 8)
	for _, c := range []struct {
		spareBits float64
		want      float64
	}{
		{-1e6, 0.01},
		{0, 0.01},
		{12000, 0.01},      // 1 packet/s: 10^5·1.5e-6/1500 = 1e-4, below the 4.11 floor
		{9.996e6, 0.01},    // ≤ 10 Mbit/s
		{10.008e6, 0.1},    // just above 10 Mbit/s: 10^8
		{99.996e6, 0.1},    // ≤ 100 Mbit/s
		{100.008e6, 1},     // 10^9
		{999.996e6, 1},     // ≤ 1 Gbit/s
		{1000.008e6, 10},   // 10^10
		{9999.996e6, 10},   // ≤ 10 Gbit/s
		{10000.008e6, 100}, // 10^11
	} {
		spare := c.spareBits / bitsPerPkt // packets/s
		got := Increase(spare, mss)
		if math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("Increase(%v pkt/s = %v bit/s) = %v, want %v", spare, c.spareBits, got, c.want)
		}
		// The spec's exact formula, evaluated independently.
		exact := 0.01
		if spare > 0 {
			exact = math.Max(math.Pow(10, math.Ceil(math.Log10(spare*mss*8)))*0.0000015/mss, 0.01)
		}
		if math.Abs(got-exact) > 1e-12*exact {
			t.Errorf("Increase(%v) = %v, spec §5.2 formula gives %v", spare, got, exact)
		}
	}
}

func TestIncreaseDependsOnMSS(t *testing.T) {
	// 12 500 pkt/s of 1000 bytes is exactly 10^8 bit/s: ⌈log10⌉ = 8, inc = 10^8·1.5e-6/1000.
	if got := Increase(12500, 1000); math.Abs(got-0.15) > 1e-12 {
		t.Errorf("Increase(12500, 1000) = %v, want 0.15", got)
	}
	// One more packet/s crosses to 10^9.
	if got := Increase(12501, 1000); math.Abs(got-1.5) > 1e-12 {
		t.Errorf("Increase(12501, 1000) = %v, want 1.5", got)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(-1), -5} {
		if got := Increase(bad, 1500); got != 0.01 {
			t.Errorf("Increase(%v) = %v, want the floor 0.01", bad, got)
		}
	}
	if got := Increase(math.Inf(1), 1500); math.IsNaN(got) || got < 0.01 {
		t.Errorf("Increase(+Inf) = %v", got)
	}
}

func TestNativeInitialState(t *testing.T) {
	n := NewNative()
	n.Init(t0, Params{MSS: 1500, FlowWindow: 8192, ISN: isn})
	s := n.State()
	want := State{Period: time.Microsecond, Window: 16, ACKPeriod: SYN}
	if s != want {
		t.Fatalf("initial State = %+v, want %+v", s, want)
	}
	if !n.SlowStart() {
		t.Fatal("not in slow start after Init")
	}
	if n.lastAck != sq(-1) || n.lastDecSeq != sq(-2) {
		t.Errorf("LastAck = %d, LastDecSeq = %d, want ISN−1 = %d, ISN−2 = %d", n.lastAck, n.lastDecSeq, sq(-1), sq(-2))
	}
}

// TestNativeTimeline drives the controller through slow start, its exit, increases, a congestion
// period with a second decrease, the SYN without increase after a loss, an ignored timeout and a
// new period. The expectations come from an independent model of spec §5 (not this code).
func TestNativeTimeline(t *testing.T) {
	n := NewNative(WithRandSource(half))
	n.Init(t0, Params{MSS: 1500, FlowWindow: 64, ISN: isn})
	ack := func(seq, cur int, rttMS float64, rate, bw int) ACK {
		return ACK{Seq: sq(seq), RTT: time.Duration(rttMS * float64(time.Millisecond)), RecvRate: rate, Bandwidth: bw, CurrSeq: sq(cur)}
	}
	loss := func(first, last, cur int) Loss {
		return Loss{Ranges: []Range{{sq(first), sq(last)}}, CurrSeq: sq(cur)}
	}
	steps := []struct {
		name   string
		do     func()
		period time.Duration
		window float64
		slow   bool
	}{
		{"ack <SYN after Init is ignored", func() { n.OnACK(ms(5), ack(16, 15, 20, 0, 0)) }, periodUS(1), 16, true},
		{"first slow-start step: +seqlen(ISN−1, ISN+16) = 18", func() { n.OnACK(ms(10), ack(16, 15, 20, 0, 0)) }, periodUS(1), 34, true},
		{"second step +25", func() { n.OnACK(ms(20), ack(40, 50, 20, 4000, 8000)) }, periodUS(1), 59, true},
		{"ack 5 ms later: no step", func() { n.OnACK(ms(25), ack(60, 70, 20, 4000, 8000)) }, periodUS(1), 59, true},
		{"cwnd 90 > 64: leave slow start, STP = 1e6/5000, then one increase", func() { n.OnACK(ms(30), ack(70, 90, 20, 5000, 8333)) }, 199601, 90, false},
		{"congestion avoidance: cwnd = 5000·30 ms + 16", func() { n.OnACK(ms(40), ack(110, 140, 20, 5000, 8333)) }, 199203, 166, false},
		{"NAK: new period, STP = ⌈STP·1.125⌉", func() { n.OnLoss(ms(45), loss(100, 101, 150)) }, 225000, 166, false},
		{"NAK in the same period, DecRandom 1: decrease", func() { n.OnLoss(ms(47), loss(120, 120, 160)) }, 254000, 166, false},
		{"SYN after a loss: window only", func() { n.OnACK(ms(50), ack(130, 160, 22, 4800, 8333)) }, 254000, 169.6, false},
		{"ack 5 ms later: nothing", func() { n.OnACK(ms(55), ack(140, 160, 22, 4800, 8333)) }, 254000, 169.6, false},
		{"increase again (capped spare capacity)", func() { n.OnACK(ms(60), ack(170, 190, 22, 4800, 8333)) }, 253356, 169.6, false},
		{"timeout outside slow start: nothing", func() { n.OnTimeout(ms(65)) }, 253356, 169.6, false},
		{"NAK past LastDecSeq: new period", func() { n.OnLoss(ms(66), loss(170, 175, 200)) }, 286000, 169.6, false},
		{"no increase after it", func() { n.OnACK(ms(70), ack(190, 200, 22, 4800, 8333)) }, 286000, 169.6, false},
		{"increase", func() { n.OnACK(ms(80), ack(200, 210, 22, 4800, 8333)) }, 285184, 169.6, false},
	}
	for i, s := range steps {
		s.do()
		checkState(t, s.name, n.State(), s.period, s.window)
		if n.SlowStart() != s.slow {
			t.Errorf("step %d %s: SlowStart = %v, want %v", i, s.name, n.SlowStart(), s.slow)
		}
	}
	if n.avgNAKNum != 1 || n.decRandom != 1 || n.lastDecSeq != sq(200) {
		t.Errorf("AvgNAKNum %d DecRandom %d LastDecSeq %d, want 1 1 %d", n.avgNAKNum, n.decRandom, n.lastDecSeq, sq(200))
	}
}

func TestNativeRateControlOncePerSYN(t *testing.T) {
	n := afterSlowStart(t)
	base := n.State()
	last := n.lastRCTime
	// Every ACK in the next SYN (exclusive) changes nothing, whatever it carries.
	for _, d := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, SYN - time.Nanosecond} {
		n.OnACK(last.Add(d), ACK{Seq: sq(5000), RTT: 5 * time.Millisecond, RecvRate: 90000, Bandwidth: 100000, CurrSeq: sq(6000)})
		if s := n.State(); s != base {
			t.Fatalf("ACK %v after the last step changed the state: %+v → %+v", d, base, s)
		}
	}
	// At exactly SYN it acts, with the measurements remembered from the ignored ACKs.
	n.OnACK(last.Add(SYN), ACK{Seq: sq(5001), CurrSeq: sq(6000)})
	s := n.State()
	if want := 90000/1e6*(5000+10000) + 16.0; math.Abs(s.Window-want) > 1e-9 {
		t.Errorf("Window = %v, want %v", s.Window, want)
	}
	if s.Period >= base.Period {
		t.Errorf("Period %v did not decrease from %v", s.Period, base.Period)
	}
}

// afterSlowStart returns a controller just past slow start with STP = 100 µs (10 000 pkt/s),
// Bandwidth 20 000 pkt/s, RTT 10 ms, CurrSeq = ISN+1000.
func afterSlowStart(t *testing.T) *Native {
	t.Helper()
	n := NewNative(WithRandSource(half))
	n.Init(t0, Params{MSS: 1500, FlowWindow: 16, ISN: isn})
	n.OnACK(ms(10), ACK{Seq: sq(16), RTT: 10 * time.Millisecond, RecvRate: 10000, Bandwidth: 20000, CurrSeq: sq(1000)})
	if n.SlowStart() {
		t.Fatal("still in slow start")
	}
	n.stp = 100 // pin the period for the decrease tables
	return n
}

func TestNativeNoIncreaseInSYNAfterLoss(t *testing.T) {
	for _, c := range []struct {
		name      string
		lossFirst int // first lost sequence number, relative to ISN
	}{
		{"new period", 1000},
		{"same period", 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := afterSlowStart(t)
			n.lastDecSeq = sq(500)
			n.OnLoss(ms(12), Loss{Ranges: []Range{{sq(c.lossFirst), sq(c.lossFirst)}}, CurrSeq: sq(1000)})
			p := n.State().Period
			n.OnACK(ms(20), ACK{Seq: sq(900), RTT: 10 * time.Millisecond, RecvRate: 10000, Bandwidth: 20000, CurrSeq: sq(1000)})
			if got := n.State().Period; got != p {
				t.Errorf("Period changed in the SYN after a loss: %v → %v", p, got)
			}
			if n.loss {
				t.Error("loss flag not cleared")
			}
			n.OnACK(ms(30), ACK{Seq: sq(950), RTT: 10 * time.Millisecond, RecvRate: 10000, Bandwidth: 20000, CurrSeq: sq(1000)})
			if got := n.State().Period; got >= p {
				t.Errorf("no increase in the second SYN: %v → %v", p, got)
			}
		})
	}
}

func TestNativeNewPeriodDecrease(t *testing.T) {
	for _, c := range []struct {
		stp, want float64 // µs
	}{
		{100, 113}, // ⌈112.5⌉
		{8, 9},
		{1.8, 3}, // the reference's whole-µs rounding: a cut of 40 %
		{0.5, 1},
		{1000, 1125},
		{900000, 1e6}, // capped at 1 s
	} {
		n := afterSlowStart(t)
		n.stp = c.stp
		n.OnLoss(ms(12), Loss{Ranges: []Range{{sq(999), sq(999)}}, CurrSeq: sq(1200)})
		if n.stp != c.want || n.lastDecPeriod != c.stp || n.lastDecSeq != sq(1200) || !n.loss {
			t.Errorf("STP %v: after a new-period NAK STP = %v (want %v), LastDecPeriod = %v, LastDecSeq = %d, loss = %v",
				c.stp, n.stp, c.want, n.lastDecPeriod, n.lastDecSeq, n.loss)
		}
		if n.nakCount != 1 || n.decCount != 1 {
			t.Errorf("NAKCount %d DecCount %d, want 1 1", n.nakCount, n.decCount)
		}
	}
}

// TestNativeDecreasesPerPeriod checks the spacing and the limit of decreases within one congestion
// period (spec §5.3 step 4): the period's first NAK decreases, then every DecRandom-th NAK does,
// while DecCount < 5; NAKCount stops counting with it.
func TestNativeDecreasesPerPeriod(t *testing.T) {
	for _, c := range []struct {
		priorAvg, priorNAK int    // AvgNAKNum and NAKCount before the period starts
		u                  uint64 // the random draw (as a Source output)
		wantAvg, wantRand  int    // AvgNAKNum and DecRandom of the new period
		naks               int    // NAKs in the period, the first included
		wantDec            []int  // which NAKs (1-based) decrease
		wantNAKCount       int    // NAKCount at the end
		note               string
	}{
		{0, 0, 1 << 63, 0, 1, 10, []int{1, 2, 3, 4, 5}, 5, "DecRandom 1: at most 5 decreases"},
		{0, 5, 1 << 63, 1, 1, 3, []int{1, 2, 3}, 3, "first periods: AvgNAKNum ⌈0.625⌉ = 1"},
		{5, 5, 1 << 63, 5, 3, 10, []int{1, 3}, 5, "AvgNAKNum 5, u 0.5: DecRandom ⌈2.5⌉ = 3"},
		{5, 5, 0, 5, 1, 10, []int{1, 2, 3, 4, 5}, 5, "u 0: DecRandom at least 1"},
		{5, 5, math.MaxUint64, 5, 5, 10, []int{1, 5}, 5, "u ≈ 1: DecRandom 5"},
		{2, 5, 1 << 62, 3, 1, 4, []int{1, 2, 3, 4}, 4, "u 0.25: ⌈0.75⌉ = 1"},
		{2, 5, 1 << 63, 3, 2, 10, []int{1, 2, 4}, 5, "u 0.5: DecRandom 2"},
		{5, 1, 1 << 63, 5, 3, 2, []int{1}, 2, "⌈4.375+0.125⌉ = 5: AvgNAKNum never falls back"},
	} {
		t.Run(c.note, func(t *testing.T) {
			n := afterSlowStart(t)
			n.rnd = constSource(c.u)
			n.avgNAKNum, n.nakCount = c.priorAvg, c.priorNAK
			n.lastDecSeq = sq(500)
			var dec []int
			for i := 1; i <= c.naks; i++ {
				before := n.stp
				// The first loss is after LastDecSeq (ISN+500): a new period, which sets LastDecSeq
				// to CurrSeq (ISN+1000), so the later ones stay in it.
				n.OnLoss(ms(12+float64(i)), Loss{Ranges: []Range{{sq(600 + i), sq(600 + i)}}, CurrSeq: sq(1000)})
				if i == 1 {
					if n.avgNAKNum != c.wantAvg || n.decRandom != c.wantRand {
						t.Errorf("AvgNAKNum %d DecRandom %d, want %d %d", n.avgNAKNum, n.decRandom, c.wantAvg, c.wantRand)
					}
				}
				if n.stp != before {
					if want := math.Ceil(before * 1.125); n.stp != want {
						t.Errorf("NAK %d: STP %v → %v, want %v", i, before, n.stp, want)
					}
					dec = append(dec, i)
				}
			}
			if !equalInts(dec, c.wantDec) {
				t.Errorf("decreasing NAKs = %v, want %v", dec, c.wantDec)
			}
			if n.nakCount != c.wantNAKCount {
				t.Errorf("NAKCount = %d, want %d", n.nakCount, c.wantNAKCount)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCeilPow10(t *testing.T) {
	for k := -20; k <= 30; k++ {
		x := math.Pow10(k)
		if got := ceilPow10(x); got != x {
			t.Errorf("ceilPow10(1e%d) = %v", k, got)
		}
		if got := ceilPow10(x * 1.0000001); got != math.Pow10(k+1) {
			t.Errorf("ceilPow10(1e%d·(1+1e-7)) = %v", k, got)
		}
		if got := ceilPow10(x * 0.9999999); got != x {
			t.Errorf("ceilPow10(1e%d·(1−1e-7)) = %v", k, got)
		}
	}
}
