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
		c.srtt = r
		if c.minRTT == 0 || r < c.minRTT {
			c.minRTT = r
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
	switch {
	case c.deepLong(now) || c.competing:
		n.incMin, n.incMax = 0, 0 // the native increase
	case q != queueBelow:
		n.incMin, n.incMax = minIncrease, minIncrease
	default:
		perSYN := synUS / n.stp // the rate in packets per SYN
		n.incMin = max(LossTolerantMinGrowth*perSYN, minIncrease)
		n.incMax = max(LossTolerantMaxGrowth*perSYN, minIncrease)
		if c.selfCut && !n.slowStart && usPerSecond/n.stp < LossTolerantDelayCut*c.recentMaxRate(now) {
			n.incMin = max(LossTolerantReturnGrowth*perSYN, minIncrease)
			n.incMax = n.incMin
		}
	}
	c.recordRate(now, a.RecvRate)
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

// recordRate folds a receive rate (packets/s, ≤ 0: none) into the windowed maximum: two spans
// of LossTolerantMaxRateAge/2, the older dropped when a new one begins.
func (c *LossTolerant) recordRate(now time.Time, rate int) {
	if rate <= 0 {
		return
	}
	if now.Sub(c.maxRate[1].since) >= LossTolerantMaxRateAge/2 || now.Before(c.maxRate[1].since) {
		c.maxRate[0], c.maxRate[1] = c.maxRate[1], rateSample{since: now}
	}
	c.maxRate[1].rate = max(c.maxRate[1].rate, rate)
}

// recentMaxRate returns the highest receive rate of the last LossTolerantMaxRateAge or so
// (between half of it and all of it), in packets/s; 0 if none.
func (c *LossTolerant) recentMaxRate(now time.Time) float64 {
	r := 0
	for _, m := range c.maxRate {
		if now.Sub(m.since) < LossTolerantMaxRateAge {
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
