package congestion

import "time"

// The loss-tolerant controller's thresholds (see LossTolerant).
const (
	// LossTolerantQueueDelay is the queueing delay, as a fraction of the minimum RTT, above which
	// a loss counts as congestion: smoothed RTT − min RTT > min RTT/8.
	LossTolerantQueueDelay = 0.125
	// LossTolerantMinQueueDelay is the floor of that threshold, for paths of a few ms or less.
	LossTolerantMinQueueDelay = time.Millisecond
	// LossTolerantLossRate is the loss rate above which a loss counts as congestion whatever
	// the delay (BBRv2's loss threshold, 2 %).
	LossTolerantLossRate = 0.02
	// LossTolerantLossSample is the number of packets sent over which the loss rate is measured:
	// the most recent rounds (of max(smoothed RTT, SYN) each) that together sent at least that
	// many, at most ltRounds of them.
	LossTolerantLossSample = 1000
	// LossTolerantMinLosses is the number of losses the loss-rate rule needs at least, so that
	// a loss or two in a short sample does not make a rate.
	LossTolerantMinLosses = 5
	// LossTolerantWindowGain multiplies the native window's rate term after slow start.
	LossTolerantWindowGain = 3
)

// LossTolerant is UDT's native DAIMD (Native) that ignores random losses: the controller for
// long, fast, lossy paths (satellite, long-haul wireless, lossy WANs), where the native
// algorithm collapses. It is not UDT 4.11's algorithm; select it explicitly
// (NewLossTolerant, LossTolerantFactory, or ParseSpec("udt-lt")).
//
// # Why
//
// The native controller reads every NAK of a packet sent after its last decrease as a new
// congestion period and cuts the rate by 1/9, up to five times per period, and it does not
// increase in a SYN that saw a loss (spec §5.3). Under 1 % random loss at 100 Mbit/s and 100 ms
// RTT there are ~8 losses per RTT, so it decreases every RTT and almost never increases: it keeps
// under 10 % of the path (the measured figures are in the package README). Loss-based TCPs
// behave alike (Mathis et al., "The Macroscopic Behavior of the TCP Congestion Avoidance
// Algorithm", CCR 1997: rate ∝ MSS/(RTT·√p)); CUBIC keeps under 2 % there. BBR (Cardwell et
// al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016) and PCC (Dong et al., NSDI
// 2015) reach 85–90 % because they do not treat a loss as a congestion signal by itself.
//
// # What
//
// LossTolerant keeps all of the native algorithm (slow start, the window, the DAIMD increase,
// the decrease and its randomised spacing) and changes only which loss reports reach it. A NAK
// is a congestion signal, passed to the native decrease, when any of these holds:
//
//   - the queue has grown: the smoothed RTT exceeds the minimum RTT seen on the connection by
//     more than max(min RTT·LossTolerantQueueDelay, LossTolerantMinQueueDelay). A drop-tail
//     bottleneck only drops when its queue is full, which shows as RTT inflation; a random loss
//     happens at any queue length. This is TCP Veno's rule (Fu, Liew, "TCP Veno: TCP
//     Enhancement for Transmission over Wireless Access Networks", IEEE JSAC 21(2), 2003), which
//     reads a Vegas-style backlog estimate to tell random from congestion losses;
//   - the loss rate is high: more than LossTolerantLossRate (2 %) of the packets sent in the
//     last two rounds (a round lasts max(smoothed RTT, SYN)) were reported lost, and at least
//     LossTolerantMinLosses of them. BBRv2 backs off above the same 2 % (Cardwell et al., "BBR
//     v2", IETF 104 ICCRG, 2019). This catches a shallow-buffered bottleneck, whose overflow
//     hardly inflates the RTT;
//   - nothing is known yet: no RTT has been measured.
//
// Any other NAK is a random loss: it is counted and otherwise ignored, so it neither decreases
// the rate nor blocks the next increase (the native "no increase in the SYN after a loss").
// conn still retransmits every lost packet. A retransmission timeout (EXP) always reaches the
// native algorithm.
//
// Losses are counted once: only the part of a NAK beyond the largest loss already reported
// counts, so the receiver's periodic NAK re-reports (spec §4.4) do not inflate the loss rate.
// The minimum RTT is the smallest smoothed RTT of the connection's life, never aged out (unlike
// BBR's 10-second window): if the path's RTT grows, losses look like congestion and the
// controller falls back to the native behaviour, which is the safe direction.
//
// # Behaviour and limits
//
//   - On a drop-tail bottleneck shared with other flows (native UDT, TCP), losses happen with
//     a full queue and pass to the native algorithm: two LossTolerant flows, or a LossTolerant
//     and a native flow, share as native flows do (the README's table has the figures).
//   - Alone on a lossy path, the controller raises its rate until its own queue passes the delay
//     threshold, then the random losses count and it backs off: the standing queue is about
//     min RTT/8.
//   - On a bottleneck whose buffer is shallower than min RTT/8 (and ≥ LossTolerantMinQueueDelay)
//     it may keep up to ~2 % loss, as BBRv2 does, where the native controller would back off
//     earlier.
//   - Jitter that inflates the RTT without a queue makes losses count as congestion: the
//     controller is then as cautious as the native one.
//
// Inputs and outputs are those of Native (ACK.RTT must be the smoothed RTT, ACK.RecvRate and
// Bandwidth the receiver's estimates). A LossTolerant is not safe for concurrent use.
type LossTolerant struct {
	nat *Native // the native algorithm that gets the congestion signals

	srtt    time.Duration // the latest smoothed RTT; 0 = none yet
	minRTT  time.Duration // the smallest smoothed RTT seen; 0 = none yet
	maxLost uint32        // the largest sequence number reported lost so far
	anyLost bool          // maxLost is set

	rounds              [ltRounds]ltRound // ring of the last rounds' counts; rounds[cur] is this one
	cur                 int
	roundStart          time.Time
	randomN, congestedN uint64
}

// ltRounds is the number of rounds the loss rate looks back at most.
const ltRounds = 8

// ltRound counts one round's packets.
type ltRound struct{ sent, lost int64 }

// NewLossTolerant returns a loss-tolerant controller (see LossTolerant), ready for Init. The
// options are the native controller's (e.g. WithRandSource).
func NewLossTolerant(opts ...NativeOption) *LossTolerant {
	c := &LossTolerant{nat: NewNative(opts...)}
	c.nat.catchUp = true
	c.Init(time.Time{}, Params{})
	return c
}

// LossTolerantFactory returns a Factory of loss-tolerant controllers with the given options;
// ParseSpec("udt-lt") returns LossTolerantFactory().
func LossTolerantFactory(opts ...NativeOption) Factory {
	return func() Controller { return NewLossTolerant(opts...) }
}

// Init resets the controller for a connection: the native algorithm's Init and the loss
// classifier's state.
func (c *LossTolerant) Init(now time.Time, p Params) {
	c.nat.Init(now, p)
	*c = LossTolerant{nat: c.nat, roundStart: now}
}

// OnACK records the smoothed RTT and runs the native rate control.
func (c *LossTolerant) OnACK(now time.Time, a ACK) {
	if a.RTT > 0 {
		c.srtt = a.RTT
		if c.minRTT == 0 || a.RTT < c.minRTT {
			c.minRTT = a.RTT
		}
	}
	c.roll(now)
	c.nat.OnACK(now, a)
}

// OnPacketSent counts the packet for the loss rate and records the largest sequence number
// sent.
func (c *LossTolerant) OnPacketSent(now time.Time, seq uint32, size int) {
	c.roll(now)
	c.rounds[c.cur].sent++
	c.nat.OnPacketSent(now, seq, size)
}

// OnLoss counts the newly reported losses and passes the report to the native decrease if it is
// a congestion signal (see LossTolerant); otherwise it only counts it as random.
func (c *LossTolerant) OnLoss(now time.Time, l Loss) {
	if len(l.Ranges) == 0 {
		return
	}
	c.roll(now)
	for _, r := range l.Ranges {
		first, last := r.First&maxSeq, r.Last&maxSeq
		if seqAfter(first, last) {
			last = first // a reversed range: count its first number only
		}
		if c.anyLost {
			if !seqAfter(last, c.maxLost) {
				continue // reported before
			}
			if !seqAfter(first, c.maxLost) {
				first = (c.maxLost + 1) & maxSeq
			}
		}
		c.rounds[c.cur].lost += seqOffset(first, last) + 1
		c.maxLost, c.anyLost = last, true
	}
	if !c.congested(l.Ranges[0].First & maxSeq) {
		c.randomN++
		return
	}
	c.congestedN++
	c.nat.OnLoss(now, l)
}

// congested reports whether a loss report whose first lost packet is first is a congestion
// signal: the loss rate is high, or the queue has grown and the report starts a new congestion
// period (one decrease per period for the delay evidence alone).
func (c *LossTolerant) congested(first uint32) bool {
	if c.LossRate() > LossTolerantLossRate {
		return true
	}
	if c.minRTT == 0 {
		return false
	}
	thresh := max(time.Duration(float64(c.minRTT)*LossTolerantQueueDelay), LossTolerantMinQueueDelay)
	if c.srtt-c.minRTT <= thresh {
		return false
	}
	return c.nat.slowStart || seqAfter(first, c.nat.lastDecSeq)
}

// OnTimeout runs the native timeout handling (spec §5.4).
func (c *LossTolerant) OnTimeout(now time.Time) { c.nat.OnTimeout(now) }

// OnPacketReceived does nothing, as Native's.
func (c *LossTolerant) OnPacketReceived(now time.Time, seq uint32, size int) {}

// State returns the native algorithm's state (Period = STP, ACKPeriod = SYN) with, after slow
// start, the window's rate term multiplied by LossTolerantWindowGain.
func (c *LossTolerant) State() State {
	s := c.nat.State()
	if !c.nat.SlowStart() {
		s.Window = min((s.Window-initialWindow)*LossTolerantWindowGain+initialWindow, NoWindowLimit)
	}
	return s
}

// SlowStart reports whether the controller is still in slow start.
func (c *LossTolerant) SlowStart() bool { return c.nat.SlowStart() }

// Losses returns the numbers of loss reports (NAKs) classified so far as random (ignored) and
// as congestion (passed to the native decrease).
func (c *LossTolerant) Losses() (random, congestion uint64) { return c.randomN, c.congestedN }

// LossRate returns the loss rate the classifier uses: lost/sent over the most recent rounds that
// together sent at least LossTolerantLossSample packets (at most 8 rounds), or 0 if fewer than
// LossTolerantMinLosses packets were lost in them. It may exceed 1 when retransmissions are
// reported lost again.
func (c *LossTolerant) LossRate() float64 {
	var sent, lost int64
	for i := range ltRounds {
		r := c.rounds[(c.cur-i+ltRounds)%ltRounds]
		sent += r.sent
		lost += r.lost
		if sent >= LossTolerantLossSample {
			break
		}
	}
	if lost < LossTolerantMinLosses {
		return 0
	}
	return float64(lost) / float64(max(sent, 1))
}

// roll starts a new round when the current one has lasted max(smoothed RTT, SYN), clearing
// rounds that passed without events. A clock that goes backwards keeps the current round.
func (c *LossTolerant) roll(now time.Time) {
	round := max(c.srtt, SYN)
	el := now.Sub(c.roundStart)
	if el < round {
		return
	}
	for k := min(el/round, ltRounds); k > 0; k-- {
		c.cur = (c.cur + 1) % ltRounds
		c.rounds[c.cur] = ltRound{}
	}
	c.roundStart = now
}

// MinRTT returns the smallest smoothed RTT seen, 0 before the first.
func (c *LossTolerant) MinRTT() time.Duration { return c.minRTT }

// String returns "udt-lt", the name ParseSpec accepts for it.
func (c *LossTolerant) String() string { return "udt-lt" }

