package congestion

import "time"

// The loss-tolerant controller's parameters (see LossTolerant).
const (
	// LossTolerantQueueDelay is the queueing delay, as a fraction of the minimum RTT, above which
	// a loss counts as congestion: smoothed RTT − min RTT > min RTT/8.
	LossTolerantQueueDelay = 0.125
	// LossTolerantMinQueueDelay is the floor of that threshold, for paths of a few ms or less.
	LossTolerantMinQueueDelay = time.Millisecond
	// LossTolerantNativeQueueDelay is the queueing delay, as a fraction of the minimum RTT, above
	// which the queue is deep and every loss report goes to the native algorithm (smoothed
	// RTT − min RTT > min RTT/2), whose decreases are then floored (LossTolerantFloor,
	// LossTolerantCompetingFloor).
	LossTolerantNativeQueueDelay = 0.5
	// LossTolerantLossRate is the loss rate above which a loss counts as congestion whatever
	// the delay: 2 %, BBRv2's loss threshold.
	LossTolerantLossRate = 0.02
	// LossTolerantMinSample and LossTolerantMaxSample bound the span of sequence numbers over
	// which the loss rate is measured: two RTTs of packets at the receive rate, at least 2000 and
	// at most 5000 packets.
	LossTolerantMinSample = 2000
	LossTolerantMaxSample = 5000
	// LossTolerantWindowGain multiplies the rate term of the native window after slow start:
	// cwnd = 6·RecvRate·(RTT+SYN) + 16 packets.
	LossTolerantWindowGain = 6
	// LossTolerantMinDeepQueue is the floor of the deep-queue threshold (min RTT/2), for paths
	// of a few ms or less: 4 ms, four times LossTolerantMinQueueDelay.
	LossTolerantMinDeepQueue = 4 * time.Millisecond
	// LossTolerantDelayCut is the rate, as a fraction of the receive rate, to which a queue above
	// the delay threshold cuts the sending rate without any loss: 0.95, which drains a queue at
	// the threshold (min RTT/8) in about two RTTs.
	LossTolerantDelayCut = 0.95
	// LossTolerantFloor is the least rate, as a fraction of the receive rate, that a congestion
	// signal may cut the sending rate to while no other flows hold the queue: 0.85.
	LossTolerantFloor = 0.85
	// LossTolerantCompetingFloor is that least rate when the queue is held by other flows (deep
	// for a cutSpacing, or not falling after a delay cut): 0.7, CUBIC's multiplicative decrease
	// (RFC 9438 §4.6). The native algorithm, which may cut five times per congestion period to
	// 1.125^−5 ≈ 0.55 of the rate, still decides above it.
	LossTolerantCompetingFloor = 0.7
	// LossTolerantReturnGrowth is the increase, as a fraction of the rate per SYN (1 %, 2.7× per
	// second), while the rate is below LossTolerantDelayCut of the highest receive rate of the
	// last LossTolerantMaxRateAge and no queue is seen: back quickly to what the path delivered,
	// as CUBIC's concave region returns to the window of its last loss (RFC 9438 §4.2).
	LossTolerantReturnGrowth = 0.01
	// LossTolerantOwnExcess is the ratio of the sending rate to the target of a delay cut above
	// which a queue that has not fallen one cutSpacing after the cut is judged again one spacing
	// later instead of taken for other flows': 1.1, a sending rate 4.5 % above the receive rate,
	// whose own excess, in flight at the cut, still fills the queue.
	LossTolerantOwnExcess = 1.1
	// LossTolerantAppLimited is the multiple of the path's rate (the highest receive rate of the
	// last LossTolerantPathRateAge) above which the rate does not increase: 2.
	LossTolerantAppLimited = 2
	// LossTolerantPathRateAge is how long the highest receive rate counts as the path's rate,
	// on which the cap of the increase is based (LossTolerantMaxGrowth): 10 s, BBR's window
	// for its minimum RTT.
	LossTolerantPathRateAge = 10 * time.Second
	// LossTolerantMaxRateAge is how long a receive rate counts as recently delivered.
	LossTolerantMaxRateAge = 2 * time.Second
	// LossTolerantMinGrowth and LossTolerantMaxGrowth bound the increase while no queue is seen,
	// per SYN: at least 0.1 % of the flow's rate (10.5 % per second, compounded), at most 0.25 %
	// of the path's rate (the highest receive rate of the last LossTolerantPathRateAge; 25 % of
	// it per second, additive); the cap wins.
	LossTolerantMinGrowth = 0.001
	LossTolerantMaxGrowth = 0.0025
)

// ltRanges is the number of recent loss ranges kept for the loss rate: enough for 5 % loss in
// single-packet ranges over LossTolerantMaxSample packets, above LossTolerantLossRate.
const ltRanges = 256

// LossTolerant is UDT's native DAIMD (Native) that ignores random losses: a controller for long,
// fast, lossy paths (long-haul wireless, satellite, lossy WANs), where the native algorithm
// collapses. It is not UDT 4.11's algorithm and not the default; select it explicitly
// (NewLossTolerant, LossTolerantFactory, or ParseSpec("udt-lt")).
//
// # Why
//
// The native controller reads every NAK of a packet sent after its last decrease as a new
// congestion period and cuts the rate by 1/9, up to five times per period, and it does not
// increase in a SYN that saw a loss (spec §5.3). Under 1 % random loss at 100 Mbit/s and 100 ms
// RTT there are ~8 losses per RTT: it decreases every RTT, hardly ever increases, and keeps under
// 10 % of the path. Loss-based TCPs behave alike (Mathis et al., "The Macroscopic Behavior of the
// TCP Congestion Avoidance Algorithm", CCR 1997: rate ∝ MSS/(RTT·√p)); CUBIC gets under 2 %
// there. BBR (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016) and PCC
// (Dong et al., NSDI 2015) get 85–90 % because a loss alone is not their congestion signal.
//
// # What
//
// LossTolerant keeps the native algorithm (slow start, the DAIMD increase, the decrease and its
// randomised spacing) and changes which loss reports reach it. A NAK is a congestion signal,
// passed to the native decrease, when
//
//   - the loss rate is high: more than LossTolerantLossRate (2 %) of the sequence numbers of the
//     last two RTTs (RecvRate·2·RTT packets, 2000 to 5000) up to the NAK's newest loss were
//     reported lost. BBRv2 backs off above the same 2 % (Cardwell et al., "BBR v2", IETF 104
//     ICCRG, 2019). Counting over sequence numbers, not time, keeps the estimate true when the
//     rate changes; two RTTs are short enough to see the burst of drops of a drop-tail queue's
//     overflow (several % of a flow's packets in that RTT), and 2000 packets are enough that 1 %
//     random loss hardly ever passes 2 % (Poisson: over 500 packets P ≈ 1.4 %, over 1000
//     P ≈ 0.16 %, over 2000 P ≈ 0.003 %). The test runs at every NAK, so with 500 a path with
//     1 % loss saw a false signal about once a second (measured on the testbed at 20 ms RTT).
//     Every NAK then goes
//     to the native algorithm, with its several decreases per congestion period, so that at an
//     overflow LossTolerant backs off as much as a native flow does;
//   - or the queue has grown: the smoothed RTT exceeds the smallest seen by more than
//     max(min RTT·LossTolerantQueueDelay, LossTolerantMinQueueDelay), the NAK starts a new
//     congestion period (its first loss was sent after the last decrease) and the last decrease
//     for delay was at least two smoothed RTTs ago: a full queue drops, a random loss strikes at
//     any queue length. This is TCP Veno's test (Fu, Liew, "TCP Veno: TCP Enhancement for
//     Transmission over Wireless Access Networks", IEEE JSAC 21(2), 2003), which reads a
//     Vegas-style backlog to tell random from congestion losses. The spacing lets the smoothed
//     RTT show the effect of one decrease before the next: after a cut of 1/9 a queue at the
//     threshold drains in about one min RTT;
//   - or the queue has grown and the controller is in slow start, or the queue exceeds
//     max(min RTT·LossTolerantNativeQueueDelay, LossTolerantMinDeepQueue) (half the min RTT,
//     at least 4 ms: "deep"), without the spacing: every such NAK goes to the native algorithm.
//     Alone, the controller keeps its own queue near the threshold above (min RTT/8); a queue
//     four times deeper is usually held by other, loss-based flows, and to share with them
//     fairly it must react to loss as they do. Copa switches to a TCP-competitive mode on the
//     same evidence (Arun, Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
//     Internet", NSDI 2018).
//
// Any other NAK is a random loss: it is counted and otherwise ignored, so it neither decreases
// the rate nor blocks the next increase (the native "no increase in the SYN after a loss").
// conn still retransmits every lost packet. A retransmission timeout (EXP) always reaches the
// native algorithm.
//
// # Rate control around the queue
//
// The native increase is driven by the packet-pair capacity estimate (spec §6.2), which a
// token-bucket shaper (a policer, Linux tbf) inflates tenfold whenever its bucket holds tokens,
// and its decrease is blind to what the path delivers. LossTolerant therefore bounds both by the
// queueing delay q = smoothed RTT − min RTT (the RTT being the one the ACK carries, smoothed
// once, ACK.PeerRTT) and the receive rate R (spec §6.1, ACK.RecvRate):
//
//   - Increase. With no queue (q at most the threshold), the native increase is bounded per SYN
//     to at least LossTolerantMinGrowth of the flow's rate (10.5 % per second, compounded) and
//     at most LossTolerantMaxGrowth of the path's rate (the highest R of the last 10 s; 25 % of
//     it per second), a cap that is the same for every flow on the path, so that they converge
//     to a fair share as AIMD does (Chiu, Jain, "Analysis of the Increase and Decrease
//     Algorithms for Congestion Avoidance in Computer Networks", 1989). Above
//     LossTolerantAppLimited (2) times the path's rate the rate does not grow: the application
//     or the receiver holds the flow back (RFC 7661). And it
//     is LossTolerantReturnGrowth (1 % per SYN) while the rate is under 0.95 of the highest R of
//     the last LossTolerantMaxRateAge after a decrease of its own: back quickly to what the path
//     delivered, as CUBIC's concave region returns to its last maximum (RFC 9438 §4.2). With a
//     queue above the threshold the increase is the native floor, 0.01 packets per SYN; with a
//     queue deep for a cutSpacing or held by other flows (below), the native increase.
//   - Delay cut. In congestion avoidance, a queue above the threshold cuts the rate to
//     LossTolerantDelayCut·R (0.95 R) without waiting for a loss, at most once per cutSpacing
//     (two RTTs plus 8 SYNs, the time for a cut to show in the smoothed RTT). Anchored to R, the
//     cut does not compound while the queue drains.
//   - Competition. If the queue has not fallen one cutSpacing after a delay cut, other flows
//     hold it: the cut is undone, up to R/0.95 (as TCP undoes a spurious decrease, RFC 3522)
//     and, until the queue falls under the threshold again, the controller makes no delay cuts
//     and uses the native increase, as in a queue deep for a cutSpacing. When the cut was made
//     sending more than LossTolerantOwnExcess (1.1) times its target, its own excess was still
//     in flight: it judges once more, one spacing later.
//   - Floor. A congestion decrease leaves at least LossTolerantFloor·R (0.85 R), or
//     LossTolerantCompetingFloor·R (0.7 R, CUBIC's decrease) when other flows hold the queue
//     (competition, or deep for a cutSpacing); the 0.85 floor also after slow start ends on
//     congestion, until the queue has drained, for that overshoot is the controller's own. A
//     deep queue that lasts less than a cutSpacing is a spike (a router or host that stalled
//     and released a burst, an overshoot) and gets the 0.85 floor. The native algorithm cuts up
//     to five times per congestion period, to 0.55 of the rate, and for one spike in several
//     periods in a row.
//
// Two more changes make the native algorithm work under sustained random loss:
//
//   - The window. conn counts packets in flight from the oldest unacknowledged one (spec §4.3),
//     and under random loss there is always a hole: repaired about one RTT after the loss, but
//     only after the receiver's next periodic NAK (4·RTT + RTTVar + SYN later in conn, the
//     draft's interval, spec §4.1) if the retransmission is lost too. The native window, one
//     RTT+SYN of the arrival rate plus 16 packets, would stall the sender on every hole, so after
//     slow start its rate term is multiplied by LossTolerantWindowGain (6): enough to keep
//     sending through a lost retransmission's repair, about 5 RTTs. BBR likewise keeps a window
//     of a multiple of the BDP and lets the pacing rate set the rate; so does this controller.
//   - The catch-up. The native rate control runs on ACKs that advance the acknowledged number,
//     at most once per SYN, one increase per run. Under random loss ACKs stall behind holes and
//     the native rate grows a third as fast; LossTolerant applies one increase per SYN elapsed
//     since the previous run or the last congestion signal, whichever is later (at most two
//     RTTs' worth), so the growth per second is the one above, and a stall caused by congestion
//     earns nothing.
//
// Losses are counted once: only the part of a NAK beyond the largest loss already reported
// counts, so the receiver's periodic re-reports (spec §4.4) do not inflate the loss rate. The
// minimum RTT is the smallest RTT of the connection's life (of each two consecutive samples the
// larger, so that one sample read far too low does not set it), never aged out (BBR ages its own
// over 10 s): if the path's RTT grows, losses look like congestion and the controller falls
// back to the native behaviour, the safe direction.
//
// # Behaviour and limits
//
//   - On a drop-tail bottleneck shared with other flows, losses come with a full queue and reach
//     the native algorithm, so LossTolerant flows share with each other and with native flows as
//     native flows do (the package README has the figures).
//   - Alone on a path, lossy or not, it raises its rate until its own queue passes the delay
//     threshold, then cuts to 0.95 of what the path delivers: it keeps a standing queue of up
//     to about min RTT/8 and seldom overflows the bottleneck.
//   - On a bottleneck whose buffer is shallower than that threshold, overflow hardly inflates the
//     RTT and only the loss-rate rule backs it off: it may keep up to ~2 % loss there, as BBRv2
//     does, where the native controller backs off at the first loss.
//   - Jitter that inflates the RTT without a queue (a busy host, a preempted vCPU) reads as a
//     queue: it cuts the rate to 0.95 R, and losses then count as congestion.
//
// Inputs and outputs are those of Native (ACK.RTT must be the smoothed RTT). A LossTolerant is
// not safe for concurrent use.
type LossTolerant struct {
	nat *Native // the native algorithm, which gets the congestion signals

	srtt      time.Duration // the latest smoothed RTT; 0 = none yet
	minRTT    time.Duration // the smallest smoothed RTT seen; 0 = none yet
	lastCut   time.Time     // the last decrease for delay
	cutQueue  time.Duration // the queueing delay at the last delay cut, until judged; 0 = none
	cutFrom   float64       // µs: STP before the last delay cut
	deepSince time.Time     // when the queue became deep; zero while it is not
	cutExcess float64       // the sending rate over the target at the last delay cut; 0 once re-judged
	competing bool          // the queue did not fall after a delay cut: other flows hold it
	overshoot bool          // slow start ended on congestion and the queue has not drained since
	maxRate   maxFilter     // the highest receive rate of the last LossTolerantMaxRateAge
	pathRate  maxFilter     // the highest receive rate of the last LossTolerantPathRateAge
	selfCut   bool          // the last decrease was this flow's own (not competing, not deep for long)
	maxLost   uint32        // the largest sequence number reported lost so far
	anyLost   bool          // maxLost is set
	ranges    [ltRanges]Range
	nranges   int // ranges recorded, ever (ranges[i%ltRanges])
	randomN   uint64
	congestN  uint64
	delayCuts uint64
}

// NewLossTolerant returns a loss-tolerant controller (see LossTolerant), ready for Init. The
// options are the native controller's (e.g. WithRandSource).
func NewLossTolerant(opts ...NativeOption) *LossTolerant {
	c := &LossTolerant{nat: NewNative(opts...)}
	c.Init(time.Time{}, Params{})
	return c
}

// LossTolerantFactory returns a Factory of loss-tolerant controllers with the given options;
// ParseSpec("udt-lt") returns LossTolerantFactory().
func LossTolerantFactory(opts ...NativeOption) Factory {
	return func() Controller { return NewLossTolerant(opts...) }
}

// Init resets the controller for a connection: the native algorithm's Init (Params as there)
// and the loss classifier.
func (c *LossTolerant) Init(now time.Time, p Params) {
	c.nat.Init(now, p)
	c.nat.catchUp = true
	*c = LossTolerant{nat: c.nat}
}

// OnLoss records the newly reported losses and passes the report to the native decrease if it is
// a congestion signal (see LossTolerant); otherwise it only counts it as random. A report without
// ranges is ignored.
func (c *LossTolerant) OnLoss(now time.Time, l Loss) {
	if len(l.Ranges) == 0 {
		return
	}
	for _, r := range l.Ranges {
		first, last := r.First&maxSeq, r.Last&maxSeq
		if seqAfter(first, last) {
			last = first // a reversed range: its first number only
		}
		if c.anyLost {
			if !seqAfter(last, c.maxLost) {
				continue // reported before
			}
			if !seqAfter(first, c.maxLost) {
				first = (c.maxLost + 1) & maxSeq
			}
		}
		c.ranges[c.nranges%ltRanges] = Range{first, last}
		c.nranges++
		c.maxLost, c.anyLost = last, true
	}
	if !c.congested(now, l.Ranges[0].First&maxSeq) {
		c.randomN++
		return
	}
	c.congestN++
	if c.nat.slowStart {
		c.overshoot = true
	}
	stp := c.nat.stp
	c.nat.OnLoss(now, l)
	if n := c.nat; n.recvRate > 0 {
		floor := LossTolerantCompetingFloor
		if c.selfCut = c.overshoot || !c.deepLong(now) && !c.competing; c.selfCut {
			floor = LossTolerantFloor
		}
		// The floor limits the decrease; it never speeds the sender up (a receive rate read
		// far above the sending rate would).
		n.stp = min(n.stp, max(stp, usPerSecond/(floor*float64(n.recvRate))))
	}
}

// congested reports whether a loss report whose first loss is first is a congestion signal.
func (c *LossTolerant) congested(now time.Time, first uint32) bool {
	if c.LossRate() > LossTolerantLossRate {
		return true
	}
	q := c.queue()
	if q == queueBelow {
		return false
	}
	if c.nat.slowStart || q == queueDeep {
		return true
	}
	if !seqAfter(first, c.nat.lastDecSeq) {
		return false // not a new congestion period
	}
	if d := now.Sub(c.lastCut); d >= 0 && d < 2*c.srtt {
		return false // the last decrease for delay has not shown in the RTT yet
	}
	c.lastCut = now
	return true
}

// LossRate returns the loss rate the classifier uses: the share of the last Sample() sequence
// numbers up to the newest reported loss that were reported lost (each loss counted once), 0
// before the first loss.
func (c *LossTolerant) LossRate() float64 {
	if !c.anyLost {
		return 0
	}
	n := c.Sample()
	var lost int64
	for i := 1; i <= min(c.nranges, ltRanges); i++ {
		r := c.ranges[(c.nranges-i)%ltRanges]
		// The part of r within the last LossTolerantLossSample numbers up to maxLost.
		from := seqOffset(r.First, c.maxLost) // ≥ 0: how far before maxLost r starts
		to := seqOffset(r.Last, c.maxLost)
		if to >= n || to < 0 {
			break // older ranges are further back still
		}
		lost += min(from, n-1) - to + 1
	}
	return float64(lost) / float64(n)
}

// Sample returns the span of the loss rate in packets: the packets of two smoothed RTTs at the
// receive rate, in [LossTolerantMinSample, LossTolerantMaxSample].
func (c *LossTolerant) Sample() int64 {
	n := float64(c.nat.recvRate) * 2 * c.srtt.Seconds()
	if !(n >= LossTolerantMinSample) { // also NaN
		return LossTolerantMinSample
	}
	return int64(min(n, LossTolerantMaxSample))
}

// OnTimeout runs the native timeout handling (spec §5.4).
func (c *LossTolerant) OnTimeout(now time.Time) { c.nat.OnTimeout(now) }

// OnPacketSent records the largest sequence number sent.
func (c *LossTolerant) OnPacketSent(now time.Time, seq uint32, size int) {
	c.nat.OnPacketSent(now, seq, size)
}

// OnPacketReceived does nothing, as Native's.
func (c *LossTolerant) OnPacketReceived(now time.Time, seq uint32, size int) {}

// State returns the native algorithm's state (Period = STP ≤ 1 s, ACKPeriod = SYN) with, after
// slow start, the window's rate term multiplied by LossTolerantWindowGain (16 to NoWindowLimit
// packets).
func (c *LossTolerant) State() State {
	s := c.nat.State()
	if !c.nat.SlowStart() {
		s.Window = min((s.Window-initialWindow)*LossTolerantWindowGain+initialWindow, NoWindowLimit)
	}
	return s
}

// SlowStart reports whether the controller is still in slow start.
func (c *LossTolerant) SlowStart() bool { return c.nat.SlowStart() }

// Losses returns the numbers of loss reports (NAKs) classified so far as random (ignored) and as
// congestion (passed to the native decrease).
func (c *LossTolerant) Losses() (random, congestion uint64) { return c.randomN, c.congestN }

// MinRTT returns the smallest smoothed RTT seen, 0 before the first.
func (c *LossTolerant) MinRTT() time.Duration { return c.minRTT }

// String returns "udt-lt", the name ParseSpec accepts for it.
func (c *LossTolerant) String() string { return "udt-lt" }
