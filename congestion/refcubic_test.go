package congestion_test

import (
	"math"
	"time"

	"github.com/udtgo/udt/congestion"
)

// refCubic is the loss-based reference flow of the competition tests: TCP CUBIC (RFC 9438) as a
// window-based congestion.Controller driven by UDT's cumulative ACKs and NAKs. It is test code,
// a yardstick, not a controller to ship.
//
//   - Slow start (RFC 5681 §3.1) from an initial window of 10 packets (RFC 6928), cwnd += packets
//     acknowledged, until the first congestion event; no HyStart.
//   - A congestion event is a NAK naming a packet sent after the last one's recovery point
//     (RFC 6582 §3.2: one reduction per window of data). It sets W_max (with fast convergence,
//     RFC 9438 §4.7) and cwnd = ssthresh = β·cwnd (β = 0.7, §4.6); the first ACK of congestion
//     avoidance after it starts a CUBIC epoch.
//   - Congestion avoidance (§4.2–4.3): per packet acknowledged cwnd += (target − cwnd)/cwnd with
//     target = W_cubic(t + RTT) bounded to [cwnd, 1.5·cwnd], W_cubic(t) = C·(t − K)³ + W_max,
//     C = 0.4, K = ∛((W_max − cwnd at the epoch's start)/C); the Reno-friendly estimate W_est grows by α·acked/cwnd,
//     α = 3(1 − β)/(1 + β) (1 once W_est ≥ W_max), and wins where it is larger.
//   - No growth during recovery (until the cumulative ACK passes the recovery point).
//   - A retransmission timeout (UDT's EXP, §4.8 and RFC 5681 §3.1): ssthresh = β·cwnd, cwnd = 1.
//
// UDT has no SACK, and its sender counts as in flight every packet after the first
// unacknowledged one, so a hole would stall a plain window for the round trip of its repair.
// The window the controller reports is therefore cwnd plus the packets known to have left the
// network beyond the cumulative ACK: up to the highest packet a NAK shows received (the one
// after its last range), as RFC 6675's pipe leaves out SACKed and lost packets. UDT sends
// retransmissions outside the window; they add the packets lost in one window (≤ the loss rate)
// to what is in flight.
//
// It paces as Linux paces TCP (tcp_update_pacing_rate in net/ipv4/tcp_input.c): at cwnd/sRTT × 2
// while cwnd < ssthresh/2, × 1.2 after. Unpaced it would not be TCP-like here: UDT acknowledges
// every 10 ms or 64 packets, not every other packet, so the window would leave in bursts no TCP
// ACK clock makes (measured: 21 % of a clean 100 Mbit/s · 100 ms path with 1 BDP of buffer, 3
// timeouts in 20 s, against 84 % paced; at 1 % loss paced it gets 1.7 %, the 1.8 Mbit/s kernel
// CUBIC got on this path in the namespaces testbed).
type refCubic struct {
	mss      int
	cwnd     float64
	ssthresh float64
	wMax     float64
	wEst     float64
	k        float64   // seconds
	epoch    time.Time // start of the current congestion-avoidance epoch; zero: none
	ack      uint32    // the cumulative ACK
	highRecv uint32    // the highest packet a NAK shows received, +1 (≥ ack)
	recover  uint32    // the recovery point: the largest sequence sent at the last reduction
	inRec    bool
	srtt     time.Duration
}

// RFC 9438's constants.
const (
	cubicC    = 0.4
	cubicBeta = 0.7
)

func refCubicFactory() congestion.Factory {
	return func() congestion.Controller { return new(refCubic) }
}

func (c *refCubic) String() string { return "cubic (reference)" }

func (c *refCubic) Init(now time.Time, p congestion.Params) {
	c.mss = p.MSS
	c.cwnd, c.ssthresh = 10, math.Inf(1)
	c.ack, c.highRecv, c.recover = p.ISN, p.ISN, p.ISN
}

// seqDiff is b − a on the 31-bit circle (spec §1.6).
func seqDiff(a, b uint32) int32 { return int32((b-a)<<1) >> 1 }

func (c *refCubic) OnACK(now time.Time, a congestion.ACK) {
	if a.RTT > 0 {
		c.srtt = a.RTT
	}
	acked := float64(seqDiff(c.ack, a.Seq))
	if acked <= 0 {
		return
	}
	c.ack = a.Seq
	if seqDiff(c.highRecv, c.ack) > 0 {
		c.highRecv = c.ack
	}
	if c.inRec {
		if seqDiff(c.recover, a.Seq) <= 0 {
			return // still in recovery: no growth
		}
		c.inRec = false
		return // the ACK that ends recovery acknowledges the repaired window: no growth from it
	}
	if c.cwnd < c.ssthresh {
		c.cwnd += acked
		return
	}
	c.avoid(now, acked)
}

// avoid is CUBIC's congestion avoidance for acked packets acknowledged at now (RFC 9438 §4.2–4.3).
func (c *refCubic) avoid(now time.Time, acked float64) {
	if c.epoch.IsZero() { // a congestion-avoidance stage starts (§4.2: K from cwnd_epoch)
		c.epoch, c.wEst = now, c.cwnd
		c.wMax = max(c.wMax, c.cwnd)
		c.k = math.Cbrt((c.wMax - c.cwnd) / cubicC)
	}
	t := now.Sub(c.epoch).Seconds() + c.srtt.Seconds()
	target := cubicC*math.Pow(t-c.k, 3) + c.wMax
	target = min(max(target, c.cwnd), 1.5*c.cwnd)
	alpha := 3 * (1 - cubicBeta) / (1 + cubicBeta)
	if c.wEst >= c.wMax {
		alpha = 1
	}
	c.wEst += alpha * acked / c.cwnd
	c.cwnd += acked * (target - c.cwnd) / c.cwnd
	if c.wEst > c.cwnd {
		c.cwnd = c.wEst
	}
}

func (c *refCubic) OnLoss(now time.Time, l congestion.Loss) {
	if len(l.Ranges) == 0 {
		return
	}
	newest := l.Ranges[0].First
	for _, r := range l.Ranges {
		// the packet after a range revealed the gap: it was received
		if next := (r.Last + 1) & 0x7FFFFFFF; seqDiff(c.highRecv, next) > 0 && seqDiff(next, l.CurrSeq) >= -1 {
			c.highRecv = next
		}
		if seqDiff(newest, r.First) > 0 {
			newest = r.First
		}
	}
	if c.inRec && seqDiff(c.recover, newest) <= 0 {
		return // a loss of the window already reduced for (or a re-report)
	}
	c.reduce()
	c.inRec, c.recover = true, l.CurrSeq
}

// reduce is the multiplicative decrease with fast convergence (RFC 9438 §4.6–4.7).
func (c *refCubic) reduce() {
	if c.cwnd < c.wMax {
		c.wMax = c.cwnd * (1 + cubicBeta) / 2
	} else {
		c.wMax = c.cwnd
	}
	c.ssthresh = max(c.cwnd*cubicBeta, 2)
	c.cwnd = c.ssthresh
	c.epoch = time.Time{} // the next congestion-avoidance ACK starts the epoch
}

func (c *refCubic) OnTimeout(now time.Time) {
	c.reduce()
	c.cwnd = 1 // slow start again, then a new epoch at ssthresh
	c.inRec = false
}

func (c *refCubic) OnPacketSent(time.Time, uint32, int)     {}
func (c *refCubic) OnPacketReceived(time.Time, uint32, int) {}

func (c *refCubic) State() congestion.State {
	beyond := float64(max(seqDiff(c.ack, c.highRecv), 0))
	s := congestion.State{Window: max(c.cwnd, 1) + beyond}
	if c.srtt > 0 {
		ratio := 1.2
		if c.cwnd < c.ssthresh/2 {
			ratio = 2
		}
		s.Period = time.Duration(float64(c.srtt) / (ratio * c.cwnd))
	}
	return s
}
