package congestion

import "time"

// The rate control of LossTolerant around the queue (see "Rate control around the queue" in its
// documentation): the increase bounds, the delay cut and the competition test, run on each ACK.

// OnACK records the RTT and receive rate, judges the last delay cut, runs the native rate control
// with the increase bounded by the queue and, in congestion avoidance with a queue above the
// delay threshold, cuts the rate to LossTolerantDelayCut of the receive rate (see LossTolerant).
// ACK.PeerRTT, when set, is the RTT it uses (else ACK.RTT).
func (c *LossTolerant) OnACK(now time.Time, a ACK) {
	if r := a.RTT; r > 0 {
		if a.PeerRTT > 0 {
			r = a.PeerRTT // smoothed once, not twice: it shows a queue sooner
		}
		// The minimum takes the larger of the last two samples: one sample read far too low
		// (a forged or corrupt ACK) would otherwise make every later queue look deep for good.
		m := r
		if c.srtt > 0 {
			m = max(r, c.srtt)
		}
		c.srtt = r
		if c.minRTT == 0 || m < c.minRTT {
			c.minRTT = m
		}
	}
	q := c.queue()
	n := c.nat
	if q != queueDeep {
		c.deepSince = time.Time{}
	} else if c.deepSince.IsZero() {
		c.deepSince = now
	}
	if q == queueBelow {
		c.competing, c.cutQueue, c.overshoot = false, 0, false
	}
	if c.cutQueue > 0 && !(now.Sub(c.lastCut) < c.cutSpacing()) {
		switch qd := c.srtt - c.minRTT; {
		case qd < c.cutQueue: // fallen: the queue was ours
			c.cutQueue = 0
		case c.cutExcess > LossTolerantOwnExcess:
			// We were sending well above the receive rate: our own excess, in flight when the
			// cut was made, explains the growth. Judge again one spacing later, from here.
			c.cutExcess, c.cutQueue, c.cutFrom, c.lastCut = 0, qd, n.stp, now
		default:
			// One cutSpacing after a delay cut the queue should have fallen; if not, other
			// flows hold it: undo the cut (as TCP undoes a spurious decrease, RFC 3522), up to
			// 1/0.95 of the receive rate, and compete.
			c.competing, c.selfCut, c.cutQueue = true, false, 0
			n.stp = min(n.stp, max(c.cutFrom, LossTolerantDelayCut*usPerSecond/float64(max(n.recvRate, 1))))
		}
	}
	n.hold = false
	switch {
	case c.deepLong(now) || c.competing:
		n.incMin, n.incMax = 0, 0 // the native increase
	case q != queueBelow:
		n.incMin, n.incMax = minIncrease, minIncrease
	default:
		perSYN := synUS / n.stp // the rate in packets per SYN
		n.incMin = max(LossTolerantMinGrowth*perSYN, minIncrease)
		n.incMax = max(LossTolerantMaxGrowth*perSYN, minIncrease)
		if path := c.pathRate.max(now, LossTolerantPathRateAge); path > 0 {
			// The cap is a share of the path's rate, the same for every flow on it, so that
			// flows of unequal rates grow alike (additive increase: fairness, Chiu and Jain
			// 1989), not in proportion to their rates.
			n.incMax = max(LossTolerantMaxGrowth*path*SYN.Seconds(), minIncrease)
			n.incMin = min(n.incMin, n.incMax)
			// Sending well above anything the path has delivered: the application or the
			// receiver holds the flow back, and a rate that grew unused would leave as a burst
			// when they let go (RFC 7661 keeps TCP's window from growing unused likewise).
			n.hold = usPerSecond/n.stp > LossTolerantAppLimited*path
		}
		if c.selfCut && !n.slowStart && usPerSecond/n.stp < LossTolerantDelayCut*c.maxRate.max(now, LossTolerantMaxRateAge) {
			n.incMin = max(LossTolerantReturnGrowth*perSYN, minIncrease)
			n.incMax = n.incMin
		}
	}
	c.maxRate.add(now, a.RecvRate, LossTolerantMaxRateAge)
	c.pathRate.add(now, a.RecvRate, LossTolerantPathRateAge)
	n.OnACK(now, a)
	rate := float64(n.recvRate)
	if rate <= 0 {
		return
	}
	if q == queueAbove && !c.competing && !n.slowStart && !(now.Sub(c.lastCut) < c.cutSpacing()) {
		c.lastCut = now
		if target := usPerSecond / (LossTolerantDelayCut * rate); n.stp < target {
			c.cutFrom = n.stp
			c.selfCut = true
			n.stp = target
			n.lastDecSeq = n.currSeq
			n.clamp()
			c.delayCuts++
			c.cutQueue = c.srtt - c.minRTT
			c.cutExcess = target / c.cutFrom // the sending rate over the cut's, 1/0.95 at R
		}
	}
}

// rateSample is the highest receive rate of a span of time and when the span began.
type rateSample struct {
	since time.Time
	rate  int
}

// maxFilter is a windowed maximum of receive rates over about age: two spans of age/2, the
// older dropped when a new one begins (a cheap form of the max filter of BBR, Cardwell et al.).
type maxFilter [2]rateSample

// add folds in a receive rate (packets/s, ≤ 0: none) at now.
func (f *maxFilter) add(now time.Time, rate int, age time.Duration) {
	if rate <= 0 {
		return
	}
	if now.Sub(f[1].since) >= age/2 || now.Before(f[1].since) {
		f[0], f[1] = f[1], rateSample{since: now}
	}
	f[1].rate = max(f[1].rate, rate)
}

// max returns the highest rate of the last age or so (between half of it and all of it), in
// packets/s; 0 if none.
func (f *maxFilter) max(now time.Time, age time.Duration) float64 {
	r := 0
	for _, m := range f {
		if now.Sub(m.since) < age {
			r = max(r, m.rate)
		}
	}
	return float64(r)
}

// cutSpacing is the least time between delay cuts, and from a cut to judging whether the queue
// fell: two smoothed RTTs for the cut to reach the queue and the queue to show in the RTT, plus
// 8 SYNs for the RTT smoothing to follow (the receiver's 7/8 filter, one sample per ACK, §4.2).
func (c *LossTolerant) cutSpacing() time.Duration { return 2*c.srtt + 8*SYN }

// deepLong reports whether the queue has been deep for a cutSpacing or more: held by other flows,
// not a spike (a burst released by a stalled router or host, the controller's own overshoot),
// which drains within an RTT or so.
func (c *LossTolerant) deepLong(now time.Time) bool {
	return !c.deepSince.IsZero() && !(now.Sub(c.deepSince) < c.cutSpacing())
}

// Queue states (LossTolerant.queue).
const (
	queueBelow = iota // no RTT yet, or a queue up to the delay threshold
	queueAbove        // above the delay threshold, up to the deep-queue threshold
	queueDeep         // above the deep-queue threshold: the controller is Native
)

// queue classifies the queueing delay, smoothed RTT − min RTT.
func (c *LossTolerant) queue() int {
	if c.minRTT == 0 {
		return queueBelow
	}
	q := c.srtt - c.minRTT
	switch {
	case q > max(time.Duration(float64(c.minRTT)*LossTolerantNativeQueueDelay), LossTolerantMinDeepQueue):
		return queueDeep
	case q > max(time.Duration(float64(c.minRTT)*LossTolerantQueueDelay), LossTolerantMinQueueDelay):
		return queueAbove
	}
	return queueBelow
}

// DelayCuts returns the number of delay cuts made so far (see LossTolerant).
func (c *LossTolerant) DelayCuts() uint64 { return c.delayCuts }
