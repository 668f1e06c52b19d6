// Package arrival implements the receiver-side measurements UDT carries in
// full ACKs (spec §6, UDT 4.11 window.cpp CPktTimeWindow): the packet
// arrival speed (ACK word 4) and the link capacity estimated from packet
// pairs (ACK word 5), and the sender's smoothing of both (spec §6.3).
//
// These are pure data structures: time is passed in, nothing allocates, and
// they are not safe for concurrent use.
package arrival

import (
	"math"
	"slices"
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

const (
	// ArrivalWindow is the number of inter-arrival intervals kept (spec §6.1).
	ArrivalWindow = 16
	// ProbeWindow is the number of packet-pair intervals kept (spec §6.2; the
	// draft's 16 is wrong, UDT 4.11 keeps 64).
	ProbeWindow = 64
	// InitialArrivalInterval fills the arrival window at start: 1 s, so the
	// speed reads 1 packet/s until real samples displace it (spec §6.1).
	InitialArrivalInterval = time.Second
	// InitialProbeInterval fills the probe window at start: 1000 µs, so the
	// first capacity estimate is 1000 packets/s (spec §6.2).
	InitialProbeInterval = 1000 * time.Microsecond
)

// Estimator is the receiver's arrival-time window: the last ArrivalWindow
// intervals between data packets and the last ProbeWindow packet-pair gaps.
//
// Intervals are kept in nanoseconds rather than the reference's whole
// microseconds, so pairs arriving less than 1 µs apart (common above
// 1 Gbit/s) still give a finite estimate; for intervals that are whole
// microseconds the results equal the reference's except that the mean
// interval is truncated to whole nanoseconds instead of whole microseconds.
//
// Arrival times may be shared: a receiver that takes them from the kernel
// (Linux SO_TIMESTAMPNS) gets one stamp for all the datagrams of a GRO run.
// Consecutive packets with the same time form a run, whose spacing is
// unknown; see [Estimator.OnArrival] for how runs are counted.
//
// Use [New] or [Estimator.Reset] before the first packet: the first interval
// is measured from that time, as in the reference.
type Estimator struct {
	arr    [ArrivalWindow]int64 // ns
	ai     int
	probe  [ProbeWindow]int64 // ns
	pi     int
	last   time.Time
	p1     time.Time
	p1Seq  seqno.Seq
	p1Last bool // the previous arrival was a probe-1 packet (seq&0xF == 0)

	// The current run of arrivals sharing the time last: run packets (0 before
	// the first arrival) that arrived within span ns after the arrival before
	// them. pairOpen: the probe window's newest entry is a pair whose second
	// packet started this run, so its gap is the run's spacing too.
	run      int64
	span     int64
	pairOpen bool
	// lead is the gap before the run's first packet; typical is the median
	// interval of the last ReportSpeed call (ns). Close runs: see OnArrival.
	lead    int64
	typical int64
}

// New returns an Estimator whose first interval is measured from now (the
// connection's start).
func New(now time.Time) *Estimator {
	e := new(Estimator)
	e.Reset(now)
	return e
}

// Reset fills both windows with their initial values (spec §6.1, §6.2) and
// measures the next interval from now.
func (e *Estimator) Reset(now time.Time) {
	*e = Estimator{last: now, typical: int64(InitialArrivalInterval)}
	for i := range e.arr {
		e.arr[i] = int64(InitialArrivalInterval)
	}
	for i := range e.probe {
		e.probe[i] = int64(InitialProbeInterval)
	}
}

// OnArrival records a data packet with sequence number seq arriving at now
// (spec §4.4 steps 2–3). Every packet adds an interval to the arrival window.
// A packet with seq&0xF == 0 starts a packet pair; the next arrival, if it is
// seq+1, adds the gap between the two to the probe window.
//
// Departures from the reference:
//
//   - UDT 4.11 records the gap for any packet with seq&0xF == 1 measured from
//     the last probe-1 packet, even if other packets arrived in between or the
//     probe-1 packet was lost (spec §6.2 notes it); we count only true
//     consecutive pairs.
//
//   - Same-time runs. A packet whose time equals the previous packet's joins
//     that packet's run: k packets stamped T after an arrival at L are counted
//     as k intervals of (T−L)/k each (the earlier entries of the run in the
//     arrival window are rewritten as the run grows), so a receiver stamping
//     GRO runs measures k packets in T−L, not k−1 zero intervals and one of
//     k·spacing. A packet pair inside a run has an unknown gap and is not
//     recorded (the reference, counting whole µs, would record 0 and could
//     divide by it); a pair whose second packet starts a run gets that run's
//     spacing, (T−L)/k.
//
//   - Close runs. A packet that arrives less than 1/8 of the typical interval
//     (the median M of the last ReportSpeed call: the last ACK) and less than
//     1/8 of the gap that started the current run after the previous packet
//     joins that run, as if it had the same time, and the run's span grows by
//     its gap: k such packets count as k intervals of span/k. A pacer that is
//     late releases its due packets together (pacer catch-up), a token-bucket
//     shaper passes a bucketful at wire speed, a router that stalled releases
//     what it held: a run stands for its packets' share of the time since the
//     packet before it. The reference keeps the short gaps; when they are the majority of
//     the 16 the median is one of them and the speed reads up to a hundred
//     times the link rate (seen on the testbed behind tbf), and when they are
//     a few, the filter drops them as outliers below M/8 and keeps the long
//     one, reading 6–10 % low. A packet-pair probe's second packet never
//     joins: its gap is the probe.
//
// Times going backwards count as 0 and start a new run.
func (e *Estimator) OnArrival(now time.Time, seq seqno.Seq) {
	d := int64(now.Sub(e.last))
	probe2 := e.p1Last && seq == e.p1Seq.Inc()
	sameRun := e.run > 0 && (d == 0 || d > 0 && !probe2 && d*8 < e.lead && d*8 < e.typical)
	if sameRun {
		e.span += d
		e.run++
		iv := e.span / e.run
		for k, i := int64(0), e.ai; k < min(e.run-1, ArrivalWindow-1); k++ {
			if i--; i < 0 {
				i = ArrivalWindow - 1
			}
			e.arr[i] = iv
		}
		e.arr[e.ai] = iv
		if e.pairOpen {
			e.probe[(e.pi+ProbeWindow-1)%ProbeWindow] = iv
		}
	} else {
		e.run, e.span, e.pairOpen = 1, max(0, d), false
		e.lead = e.span
		e.arr[e.ai] = e.span
	}
	if e.ai++; e.ai == ArrivalWindow {
		e.ai = 0
	}
	e.last = now

	if e.p1Last && seq == e.p1Seq.Inc() && !sameRun {
		e.probe[e.pi] = max(0, int64(now.Sub(e.p1)))
		if e.pi++; e.pi == ProbeWindow {
			e.pi = 0
		}
		e.pairOpen = true
	}
	e.p1Last = seq&0xF == 0
	if e.p1Last {
		e.p1, e.p1Seq = now, seq
	}
}

// median reproduces the reference's median: the element at index n/2 of the
// first n−1 window entries in sorted order (spec §6.1 "harmless quirk").
func median(dst, window []int64) int64 {
	n := len(window)
	copy(dst, window[:n-1])
	slices.Sort(dst[:n-1])
	return dst[n/2]
}

// RecvSpeed returns the packet arrival speed in packets/s for ACK word 4
// (spec §6.1): the mean of the intervals within (M/8, 8·M) of the median M,
// inverted and rounded up, or 0 if no more than 8 of the 16 intervals pass
// the filter (the sender ignores 0). Before real traffic it reads 1 packet/s
// (the initial 1 s intervals); while real intervals displace them it can read
// 0 for a few packets. It changes nothing; see ReportSpeed.
func (e *Estimator) RecvSpeed() int {
	s, _ := e.speed()
	return s
}

// ReportSpeed is RecvSpeed for an ACK being sent: it also takes M as the
// typical interval that bounds close runs until the next report (see
// [Estimator.OnArrival]).
func (e *Estimator) ReportSpeed() int {
	s, m := e.speed()
	e.typical = m
	return s
}

// speed returns RecvSpeed's value and the median M it filtered with (ns).
func (e *Estimator) speed() (int, int64) {
	var tmp [ArrivalWindow]int64
	m := median(tmp[:], e.arr[:])
	upper, lower := m<<3, m>>3
	var sum, count int64
	for _, x := range e.arr {
		if x > lower && x < upper {
			sum += x
			count++
		}
	}
	if count <= ArrivalWindow/2 {
		return 0, m
	}
	return int(math.Ceil(1e9 / float64(sum/count))), m
}

// Bandwidth returns the estimated link capacity in packets/s for ACK word 5
// (spec §6.2): the mean of the median M (counted once extra) and the probe
// gaps within (M/8, 8·M), inverted and rounded up. It is 1000 packets/s
// before any pair arrives. If every gap is 0 (no measurable time between the
// pair, e.g. in a test with a frozen clock) it returns 0, "unknown", where the
// reference would divide by zero. Pairs that share one arrival time are not
// recorded at all (see [Estimator.OnArrival]).
func (e *Estimator) Bandwidth() int {
	var tmp [ProbeWindow]int64
	m := median(tmp[:], e.probe[:])
	upper, lower := m<<3, m>>3
	sum, count := m, int64(1)
	for _, x := range e.probe {
		if x > lower && x < upper {
			sum += x
			count++
		}
	}
	if sum == 0 {
		return 0
	}
	return int(math.Ceil(1e9 * float64(count) / float64(sum)))
}

// PeerRates is the sender's smoothed copy of the receiver's two estimates
// (spec §6.3, §5.1): RcvRate starts at 16 packets/s and Bandwidth at
// 1 packet/s; each full ACK moves them 1/8 of the way to its values. The zero
// value is not ready: use [NewPeerRates].
type PeerRates struct {
	RcvRate   int // packets/s, smoothed ACK word 4
	Bandwidth int // packets/s, smoothed ACK word 5
}

// NewPeerRates returns the initial values of UDT 4.11 (CUDT::open).
func NewPeerRates() PeerRates { return PeerRates{RcvRate: 16, Bandwidth: 1} }

// OnFullACK folds in ACK words 4 and 5 as received on the wire: each is read
// as a signed 32-bit value, as the reference does, and ignored unless
// positive; otherwise x ← (7·x + v)/8 in integer arithmetic (no overflow for
// any input).
func (p *PeerRates) OnFullACK(rcvRate, bandwidth uint32) {
	if v := int32(rcvRate); v > 0 {
		p.RcvRate = int((7*int64(p.RcvRate) + int64(v)) >> 3)
	}
	if v := int32(bandwidth); v > 0 {
		p.Bandwidth = int((7*int64(p.Bandwidth) + int64(v)) >> 3)
	}
}
