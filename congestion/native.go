package congestion

import (
	"math"
	"math/rand/v2"
	"time"
)

// SYN is UDT's synchronisation interval, 10 ms: the native controller changes its rate at most
// once per SYN, and it is the longest full-ACK period (spec §4.1, §5).
const SYN = 10 * time.Millisecond

// The native algorithm's constants (spec §5.1–§5.3), in the reference's units: µs and packets.
const (
	synUS            = 10000.0 // SYN in µs
	initialWindow    = 16      // cwnd at start, and the constant term of cwnd after slow start
	initialPeriodUS  = 1.0     // STP at start: effectively unpaced during slow start
	initialRTTUS     = 100000  // RTT before the first ACK: 10·SYN (spec §4.2)
	defaultMSS       = 1500    // UDT_MSS default, bytes including IP and UDP headers (spec §7.1)
	defaultMaxWindow = 8192    // the flow window UDT 4.11 negotiates by default: min(UDT_FC, receive buffer)
	decreaseFactor   = 1.125   // STP multiplier on a decrease (rate × 1/1.125 ≈ −11.1 %)
	maxDecreases     = 5       // decreases per congestion period (1.125^−5 ≈ 0.555)
	minIncrease      = 0.01    // UDT 4.11's floor of the increase, packets per SYN (1/MSS before 4.11)
	increaseBeta     = 1.5e-6  // β of the increase formula (spec §5.2 step 7)
	maxPeriodUS      = 1e6     // cap on STP: 1 packet/s (not in the reference; see Native)
	avgNAKOld        = 0.875   // AvgNAKNum smoothing weights (spec §5.3 step 3.2)
	avgNAKNew        = 0.125   //
	usPerSecond      = 1e6     //
	nanosPerMicrosec = 1e3     //
)

// Native is UDT 4.11's native congestion controller, CUDTCC, also called DAIMD: AIMD with
// decreasing increases (Gu, Hong, Grossman, "An Analysis of AIMD Algorithms with Decreasing
// Increases", Gridnets 2004; spec §5). It controls a packet send period STP and a congestion
// window cwnd:
//
//   - Slow start (§5.2 step 2): STP = 1 µs (unpaced) and cwnd starts at 16 packets. At most once
//     per SYN an ACK adds the packets it acknowledges to cwnd (the reference's inclusive count,
//     seqlen(LastAck, ack): one more than the newly acknowledged packets). When cwnd exceeds the
//     flow window (Params.FlowWindow) slow start ends and STP = 10^6/RecvRate µs, or
//     (RTT+SYN)/cwnd when no receive rate is known yet: one window per RTT+SYN.
//   - Congestion avoidance (§5.2 steps 3–8), at most once per SYN: cwnd = RecvRate·(RTT+SYN) + 16
//     packets, then, unless a loss arrived since the last rate-control step, the increase
//     inc = max(10^⌈log10(B'·MSS·8)⌉ · 1.5·10^−6 / MSS, 0.01) packets per SYN, where B' is the
//     spare capacity in packets/s (link capacity − current rate, capped at capacity/9 while the
//     rate is below the rate of the last decrease), and STP = STP·SYN / (STP·inc + SYN).
//   - Loss (NAK, §5.3): a loss beyond the last decrease starts a new congestion period:
//     STP = ⌈STP·1.125⌉ µs, AvgNAKNum = ⌈0.875·AvgNAKNum + 0.125·NAKCount⌉ and a random spacing
//     DecRandom uniform in 1..AvgNAKNum. Within the period, every DecRandom-th NAK decreases
//     again, up to 5 decreases in all. The next rate-control step after any loss does not increase.
//   - Timeout (§5.4): ends slow start as a loss does; otherwise nothing (the reference's "STP×2"
//     is commented out; conn still retransmits everything unacknowledged, §4.5).
//
// The state reported: Period = STP, Window = cwnd (16 to NoWindowLimit packets), ACKPeriod = SYN.
//
// Inputs: ACK.RTT is the sender's smoothed RTT and ACK.RecvRate, ACK.Bandwidth the 7/8-smoothed
// receiver estimates of spec §6.3. A zero (or negative) value means "no new value" and keeps the
// previous one. Before the first ACK the RTT is 100 ms (10·SYN, §4.2) and the rates are unknown,
// exactly as in the reference CCC class; the C++ core pre-loads its smoothing with 16 and 1
// packets/s, which conn may imitate by passing those values.
//
// Kept from the reference on purpose, although they look odd:
//   - decreases round STP up to whole µs (⌈STP·1.125⌉), so above ≈ 1.5 Gbit/s (STP < 8 µs) one
//     decrease cuts the rate by more than 1/9;
//   - NAKCount stops counting once a period has had 5 decrease opportunities (the reference's
//     short-circuit "DecCount++ < 5 && ++NAKCount % DecRandom == 0"), so AvgNAKNum is an average
//     of min(NAKs per period, 5) and, rounded up, never falls back once it has risen;
//   - in slow start cwnd grows by the inclusive count (one extra packet per rate-control step).
//
// Departures from the reference, each with its reason:
//   - Leaving slow start on a loss or timeout with no known receive rate sets STP = (RTT+SYN)/cwnd,
//     as 4.11 already does in onACK; the reference's onLoss and onTimeout compute the inverted
//     cwnd/(RTT+SYN), a packets-per-µs rate used as a period, i.e. an unpaced burst (spec §9.6.1).
//   - The random decrease spacing comes from a per-controller source (WithRandSource; by default
//     math/rand/v2's randomly seeded generator). The reference calls srand(LastDecSeq) then rand(),
//     reseeding the process-wide generator under every connection's feet; the distribution of
//     DecRandom (uniform on 1..AvgNAKNum) is the same.
//   - STP is capped at 1 s (1 packet/s) so that Period always fits a time.Duration; the reference
//     lets repeated decreases grow it without bound. The reported Window is capped at
//     NoWindowLimit (2^30 packets), the most 31-bit sequence numbers can order.
//   - Hostile or stale inputs cannot corrupt the state: an ACK number before the last one adds
//     nothing to cwnd (the reference's seqlen would add ≈ 2^31), a loss report without
//     ranges is ignored (the reference reads past the list), and RTT is used with ns resolution
//     instead of integer µs.
//
// A Native is not safe for concurrent use; conn calls it from one goroutine at a time.
type Native struct {
	rnd rand.Source // nil: math/rand/v2's global generator

	// Connection parameters (Init).
	mss      float64 // bytes, IP and UDP headers included
	maxCWnd  float64 // packets: the flow window from the handshake
	rttUS    float64 // µs, the sender's smoothed RTT
	recvRate int64   // packets/s, the smoothed receiver arrival speed; 0 = unknown
	bw       int64   // packets/s, the smoothed link capacity; 0 = unknown
	currSeq  uint32  // SndCurrSeqNo: the largest sequence number sent

	// Algorithm state, named as in the reference (spec §5.1).
	stp           float64   // µs: the packet send period
	cwnd          float64   // packets
	slowStart     bool      //
	lastAck       uint32    // ACK number at the last slow-start step
	lastRCTime    time.Time // the last rate-control step
	loss          bool      // a loss arrived since the last rate-control step
	lastDecSeq    uint32    // SndCurrSeqNo at the last decrease
	lastDecPeriod float64   // µs: STP just before the last new-period decrease
	avgNAKNum     int       // smoothed NAKs per congestion period
	nakCount      int       // NAKs in this period
	decRandom     int       // decrease on every decRandom-th NAK of the period
	decCount      int       // decrease opportunities used in this period
}

// NativeOption configures a Native controller.
type NativeOption func(*Native)

// WithRandSource makes the controller draw its randomised decrease spacing (spec §5.3 step 3.4)
// from src, e.g. rand.NewPCG(1, 2) for reproducible tests. src is used by this controller only,
// from the goroutine that calls it. A nil src selects the default, math/rand/v2's global
// generator (randomly seeded, safe for concurrent use).
func WithRandSource(src rand.Source) NativeOption {
	return func(n *Native) { n.rnd = src }
}

// NewNative returns UDT 4.11's native controller (DAIMD), ready for Init. See Native.
func NewNative(opts ...NativeOption) *Native {
	n := &Native{}
	for _, o := range opts {
		o(n)
	}
	n.Init(time.Time{}, Params{})
	return n
}

// NativeFactory returns a Factory of native controllers (UDT 4.11's DAIMD, for compatibility
// experiments) with the given options. The default controller of a connection is BBR's
// (BBRFactory()).
func NativeFactory(opts ...NativeOption) Factory {
	return func() Controller { return NewNative(opts...) }
}

// Init resets the controller for a connection (spec §5.1). MSS ≤ 0 selects 1500 bytes; a
// FlowWindow ≤ 0 selects 8192 packets, what UDT 4.11 negotiates by default.
func (n *Native) Init(now time.Time, p Params) {
	n.mss = defaultMSS
	if p.MSS > 0 {
		n.mss = float64(p.MSS)
	}
	n.maxCWnd = defaultMaxWindow
	if p.FlowWindow > 0 {
		n.maxCWnd = float64(p.FlowWindow)
	}
	n.rttUS = initialRTTUS
	n.recvRate, n.bw = 0, 0
	n.currSeq = seqDec(p.ISN) // SndCurrSeqNo = ISN − 1 before the first packet

	n.stp = initialPeriodUS
	n.cwnd = initialWindow
	n.slowStart = true
	n.lastAck = n.currSeq
	n.lastRCTime = now
	n.loss = false
	n.lastDecSeq = seqDec(n.lastAck)
	n.lastDecPeriod = 1
	n.avgNAKNum = 0
	n.nakCount = 0
	n.decRandom = 1
	n.decCount = 0
}

// observe takes the measurements an ACK carries; non-positive values keep the previous ones.
func (n *Native) observe(a ACK) {
	if a.RTT > 0 {
		n.rttUS = float64(a.RTT) / nanosPerMicrosec
	}
	if a.RecvRate > 0 {
		n.recvRate = int64(a.RecvRate)
	}
	if a.Bandwidth > 0 {
		n.bw = int64(a.Bandwidth)
	}
	n.currSeq = a.CurrSeq & maxSeq
}

// OnACK runs the rate control of spec §5.2: slow start, or the window update and the increase.
// It acts at most once per SYN: an ACK less than SYN after the previous step only records the
// measurements it carries.
func (n *Native) OnACK(now time.Time, a ACK) {
	n.observe(a)
	if now.Sub(n.lastRCTime) < SYN {
		return
	}
	n.lastRCTime = now

	if n.slowStart {
		if d := seqOffset(n.lastAck, a.Seq); d >= 0 {
			n.cwnd += float64(d + 1) // seqlen(LastAck, ack), inclusive
			n.lastAck = a.Seq & maxSeq
		}
		if n.cwnd > n.maxCWnd {
			n.leaveSlowStart()
		}
	} else {
		n.cwnd = float64(n.recvRate)/usPerSecond*(n.rttUS+synUS) + initialWindow
	}
	if n.slowStart {
		return // no rate increase during slow start
	}
	if n.loss {
		n.loss = false // no increase in the SYN after a loss
		return
	}
	inc := n.increase()
	// float64() rounds the product before the sum: no fused multiply-add on any GOARCH, so STP is
	// bit-for-bit the reference formula's on every platform.
	n.stp = n.stp * synUS / (float64(n.stp*inc) + synUS)
	n.clamp()
}

// increase returns inc, the rate increase in packets per SYN (spec §5.2 steps 6–7).
func (n *Native) increase() float64 {
	bw := float64(n.bw)
	spare := math.Trunc(bw - usPerSecond/n.stp) // B', packets/s, truncated like the int64 cast
	if n.stp > n.lastDecPeriod && float64(n.bw/9) < spare {
		spare = float64(n.bw / 9)
	}
	return Increase(spare, int(n.mss))
}

// Increase is the native algorithm's rate increase (spec §5.2 step 7) for a spare capacity of
// spare packets/s and packets of mss bytes (IP and UDP headers included): the number of packets
// per SYN by which the sending rate grows, max(10^⌈log10(spare·mss·8)⌉ · 1.5·10^−6 / mss, 0.01).
// A spare capacity ≤ 0 gives the floor, 0.01. For mss = 1500 and a spare capacity of up to
// 10 Mbit/s, 100 Mbit/s, 1 Gbit/s, 10 Gbit/s it gives 0.01, 0.1, 1, 10 packets per SYN.
func Increase(spare float64, mss int) float64 {
	if !(spare > 0) || mss <= 0 {
		return minIncrease
	}
	m := float64(mss)
	inc := ceilPow10(spare*m*8) * increaseBeta / m
	if !(inc >= minIncrease) { // also catches NaN
		return minIncrease
	}
	return inc
}

// ceilPow10 returns 10^⌈log10(x)⌉ for x > 0, exact at powers of ten whatever the rounding of
// math.Log10.
func ceilPow10(x float64) float64 {
	k := int(math.Ceil(math.Log10(x)))
	if k > -300 && k < 300 {
		if math.Pow10(k-1) >= x {
			k--
		} else if math.Pow10(k) < x {
			k++
		}
	}
	return math.Pow10(k)
}

// leaveSlowStart ends slow start and sets STP from the receive rate, or from the window when no
// receive rate is known (the corrected formula, see Native).
func (n *Native) leaveSlowStart() {
	n.slowStart = false
	if n.recvRate > 0 {
		n.stp = usPerSecond / float64(n.recvRate)
	} else {
		n.stp = (n.rttUS + synUS) / n.cwnd
	}
	n.clamp()
}

// OnLoss runs the decrease of spec §5.3 for one NAK. Only the first range's first sequence number
// (the NAK's first loss) and l.CurrSeq are used; a report without ranges is ignored.
func (n *Native) OnLoss(now time.Time, l Loss) {
	if len(l.Ranges) == 0 {
		return
	}
	n.currSeq = l.CurrSeq & maxSeq
	if n.slowStart {
		n.leaveSlowStart()
		if n.recvRate > 0 {
			return // the sending rate is set to the receive rate; no decrease
		}
	}
	n.loss = true

	if seqAfter(l.Ranges[0].First, n.lastDecSeq) {
		// A new congestion period.
		n.lastDecPeriod = n.stp
		n.decrease()
		n.avgNAKNum = int(math.Ceil(avgNAKOld*float64(n.avgNAKNum) + avgNAKNew*float64(n.nakCount)))
		n.nakCount = 1
		n.decCount = 1
		n.decRandom = int(math.Ceil(float64(n.avgNAKNum) * n.uniform()))
		if n.decRandom < 1 {
			n.decRandom = 1
		}
		return
	}
	// The same period: the reference's (DecCount++ < 5) && (++NAKCount % DecRandom == 0). DecCount
	// saturates at 5 here, which is indistinguishable.
	if n.decCount >= maxDecreases {
		return
	}
	n.decCount++
	n.nakCount++
	if n.nakCount%n.decRandom == 0 {
		n.decrease()
	}
}

// decrease multiplies STP by 1.125, rounded up to whole µs as in the reference, and records the
// decrease's position.
func (n *Native) decrease() {
	n.stp = math.Ceil(n.stp * decreaseFactor)
	n.lastDecSeq = n.currSeq
	n.clamp()
}

// uniform returns a number in [0, 1).
func (n *Native) uniform() float64 {
	if n.rnd == nil {
		return rand.Float64()
	}
	return float64(n.rnd.Uint64()>>11) / (1 << 53)
}

// clamp keeps STP in (0, 1 s].
func (n *Native) clamp() {
	if !(n.stp <= maxPeriodUS) { // also catches NaN
		n.stp = maxPeriodUS
	}
	if !(n.stp > 0) {
		n.stp = initialPeriodUS
	}
}

// OnTimeout handles the EXP timer (spec §5.4): in slow start it leaves slow start, setting STP from
// the receive rate or the window; otherwise it does nothing.
func (n *Native) OnTimeout(now time.Time) {
	if n.slowStart {
		n.leaveSlowStart()
	}
}

// OnPacketSent records the largest sequence number sent; the rate does not change.
func (n *Native) OnPacketSent(now time.Time, seq uint32, size int) {
	if seqAfter(seq, n.currSeq) {
		n.currSeq = seq & maxSeq
	}
}

// OnPacketReceived does nothing: the native algorithm is driven by the sender's events.
func (n *Native) OnPacketReceived(now time.Time, seq uint32, size int) {}

// State returns Period = STP (≤ 1 s), Window = cwnd (16 to NoWindowLimit packets) and
// ACKPeriod = SYN.
func (n *Native) State() State {
	return State{
		Period:    max(time.Duration(math.Round(n.stp*nanosPerMicrosec)), 1), // ≥ 1 ns: 0 would mean unpaced
		Window:    math.Min(n.cwnd, NoWindowLimit),
		ACKPeriod: SYN,
	}
}

// SlowStart reports whether the controller is still in slow start.
func (n *Native) SlowStart() bool { return n.slowStart }

// String returns "udt", the name ParseSpec accepts for it.
func (n *Native) String() string { return "udt" }
