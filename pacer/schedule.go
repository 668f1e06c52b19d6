package pacer

import (
	"math"
	"math/bits"
	"time"
)

// DefaultBurst is the burst cap used when SchedulerConfig.Burst or Config.Burst is zero or
// negative: at most 16 packets leave per decision. At 1 Gbit/s with 1472-byte packets departures
// are ~12 µs apart, so 16 packets cover ~190 µs of wake-up lateness before catch-up gives up.
const DefaultBurst = 16

// SchedulerConfig configures a Scheduler. The zero value is an unlimited rate with DefaultBurst
// in catch-up mode.
type SchedulerConfig struct {
	// Interval is the time between two departures (1/rate). Zero or negative means unlimited:
	// every Release may send up to the burst cap. SetRate and SetPacketRate set it from a rate.
	Interval time.Duration

	// Burst caps the packets released by one Release call and, in catch-up mode, the credit a
	// late or idle sender may accumulate (in packets). Zero or negative means DefaultBurst.
	Burst int

	// Strict disables catch-up: each packet leaves no earlier than one full interval after the
	// previous actual departure, and Release releases at most one packet per call (Force aside).
	// This is the classic "sleep one interval per packet" sender: with a timer that oversleeps
	// to ~1 ms it stalls at ~1000 packets/s whatever the configured rate.
	Strict bool
}

// Scheduler decides how many packets may leave at a given time so that departures follow a
// rate. It is pure: it takes the current time as an argument, reads no clock and starts no
// goroutine. All arithmetic is integer nanoseconds; the interval is kept as an exact fraction
// (whole ns plus a remainder over the rate's denominator), so 3 packets/s or 1 Gbit/s of
// 1472-byte packets do not drift, and every sum saturates instead of overflowing.
//
// Catch-up mode (the default) keeps an absolute schedule: departure k leaves at
// anchor + ⌊k·interval⌋, not "interval after the previous wake", so a waiter that wakes late
// does not lower the rate: late packets leave at once, at most Burst per Release. Credit is
// bounded: after an idle period or a long stall the schedule is re-anchored so that at most
// Burst packets are due at once (like the budget of quic-go's pacer, and unlike UDT4's
// TimeDiff compensation, which repays any accumulated lateness back to back, spec §9.3).
//
// Strict mode has no catch-up (see SchedulerConfig.Strict).
//
// A Scheduler is not safe for concurrent use; the owner of the flow (the pacer goroutine
// calling Flow.Release) drives it. The zero value is ready to use: unlimited, DefaultBurst,
// catch-up.
type Scheduler struct {
	// The interval is q + r/den ns with 0 ≤ r < den; den == 0 means unlimited.
	q   int64
	r   uint64
	den uint64

	burst  int
	strict bool

	started  bool      // next and prev are valid
	hasEpoch bool      // epoch is set
	epoch    time.Time // times are kept as ns since epoch (the first time passed in)
	next     int64     // ns: time of the next departure slot
	rem      uint64    // fractional part of next, in units of 1/den ns
	prev     int64     // ns: slot (catch-up) or actual time (strict) of the last departure
	credit   int64     // ns: ⌊(burst−1)·interval⌋, the catch-up credit; valid when creditOK
	creditOK bool
}

// never is a saturated departure time: beyond any representable now, never due.
const never = math.MaxInt64

// NewScheduler returns a Scheduler configured by cfg.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
	s := &Scheduler{strict: cfg.Strict}
	s.SetBurst(cfg.Burst)
	s.SetInterval(cfg.Interval)
	return s
}

// SetBurst sets the burst cap in packets; n ≤ 0 means DefaultBurst.
func (s *Scheduler) SetBurst(n int) {
	if n <= 0 {
		n = 0 // resolved lazily so that the zero Scheduler works
	}
	s.burst = n
	s.creditOK = false
}

// Burst reports the burst cap in packets.
func (s *Scheduler) Burst() int {
	if s.burst <= 0 {
		return DefaultBurst
	}
	return s.burst
}

// Strict reports whether the scheduler is in strict (no catch-up) mode.
func (s *Scheduler) Strict() bool { return s.strict }

// SetInterval sets the time between departures; d ≤ 0 means unlimited. The change takes
// effect from the next departure: it leaves one new interval after the last one (or at once if
// that time has passed), whatever the old interval had scheduled.
func (s *Scheduler) SetInterval(d time.Duration) {
	if d <= 0 {
		s.setFraction(0, 0, 0)
		return
	}
	s.setFraction(int64(d), 0, 1)
}

// SetPacketRate sets the rate in packets per second; pps ≤ 0 means unlimited. The interval is
// kept exactly (1e9/pps ns as a fraction). Takes effect from the next departure (see
// SetInterval).
func (s *Scheduler) SetPacketRate(pps int64) {
	if pps <= 0 {
		s.setFraction(0, 0, 0)
		return
	}
	s.setFraction(int64(1e9/uint64(pps)), 1e9%uint64(pps), uint64(pps))
}

// SetRate sets the rate in bytes per second for packets of packetSize bytes (the size on the
// wire that the rate counts, e.g. UDP payload); bytesPerSec ≤ 0 means unlimited, and so does
// packetSize ≤ 0 (an empty packet takes no time). The interval packetSize·1e9/bytesPerSec ns
// is computed in 128 bits and kept exactly; an interval beyond ~292 years saturates. Takes
// effect from the next departure (see SetInterval). For a rate in bit/s pass bitsPerSec/8.
func (s *Scheduler) SetRate(bytesPerSec, packetSize int64) {
	if bytesPerSec <= 0 || packetSize <= 0 {
		s.setFraction(0, 0, 0)
		return
	}
	den := uint64(bytesPerSec)
	hi, lo := bits.Mul64(uint64(packetSize), 1e9)
	if hi >= den {
		s.setFraction(math.MaxInt64, 0, 1)
		return
	}
	q, r := bits.Div64(hi, lo, den)
	if q > math.MaxInt64 {
		s.setFraction(math.MaxInt64, 0, 1)
		return
	}
	s.setFraction(int64(q), r, den)
}

// Interval reports the time between departures rounded down to a nanosecond; 0 means unlimited.
func (s *Scheduler) Interval() time.Duration {
	if s.den == 0 {
		return 0
	}
	return time.Duration(s.q)
}

func (s *Scheduler) setFraction(q int64, r, den uint64) {
	s.q, s.r, s.den = q, r, den
	s.creditOK = false
	if !s.started {
		return
	}
	// The next departure is one new interval after the last one.
	s.next, s.rem = s.prev, 0
	if den != 0 {
		s.advance(1)
	}
}

// Release reports how many of want packets may leave at now and records them as sent at now.
// It returns 0 when want ≤ 0 or the next departure is after now. The result never exceeds want
// or the burst cap; in strict mode it is at most 1. When Release returns fewer than
// min(want, burst) in catch-up mode, Next is after now.
func (s *Scheduler) Release(now time.Time, want int) (n int) {
	if want <= 0 {
		return 0
	}
	t := s.ns(now)
	limit := min(want, s.Burst())
	if !s.started {
		s.started, s.next, s.rem = true, t, 0
	}
	if s.den == 0 { // unlimited
		s.prev, s.next, s.rem = t, t, 0
		return limit
	}
	if t < s.next || s.next == never {
		return 0
	}
	if s.strict {
		s.prev, s.next = t, t
		s.advance(1)
		return 1
	}
	s.bound(t)
	for n < limit && s.next <= t && s.next != never {
		s.prev = s.next
		s.advance(1)
		n++
	}
	return n
}

// Force records n departures at now regardless of the schedule and the burst cap: for packets
// that must leave back to back, like UDT's probing packet pair (spec §4.3 step 5 and §6.2: the
// packet after each seq&0xF == 0 leaves immediately). The usual sequence for a pair is
// Release(now, 1) == 1 for the probe, then Force(now, 1) for its partner.
//
// In catch-up mode forced packets take the next slots of the schedule, so the long-run rate is
// unchanged: the packet after the pair waits for its own slot. In strict mode the next
// departure is one interval after now. n ≤ 0 does nothing.
func (s *Scheduler) Force(now time.Time, n int) {
	if n <= 0 {
		return
	}
	t := s.ns(now)
	if !s.started {
		s.started, s.next, s.rem = true, t, 0
	}
	switch {
	case s.den == 0:
		s.prev, s.next, s.rem = t, t, 0
	case s.strict:
		s.prev, s.next = t, t
		s.advance(1)
	default:
		s.bound(t)
		s.advance(uint64(n) - 1)
		s.prev = s.next
		s.advance(1)
	}
}

// Next reports when the next packet may leave: at or before now means at once. It is the zero
// Time before the first Release or Force (the first packet may leave at once). Under an
// unlimited rate it is the time of the last Release. In catch-up mode it may be long past
// after an idle period; Release then bounds the credit to the burst cap.
func (s *Scheduler) Next() time.Time {
	if !s.started {
		return time.Time{}
	}
	return s.epoch.Add(time.Duration(s.next))
}

// ns converts now to saturating nanoseconds since the scheduler's epoch (the first time it saw).
func (s *Scheduler) ns(now time.Time) int64 {
	if !s.hasEpoch {
		s.epoch, s.hasEpoch = now, true
	}
	return int64(now.Sub(s.epoch)) // Sub saturates at ±292 years
}

// bound caps catch-up credit to the burst: no slot before t − ⌊(burst−1)·interval⌋ stays due.
func (s *Scheduler) bound(t int64) {
	if !s.creditOK {
		n := uint64(s.Burst() - 1)
		hi, lo := bits.Mul64(n, s.r)
		frac, _ := bits.Div64(hi, lo, s.den) // hi < den since r < den
		s.credit = addSat(mulSat(int64(n), s.q), int64(min(frac, math.MaxInt64)))
		s.creditOK = true
	}
	if floor := subSat(t, s.credit); s.next < floor {
		s.next, s.rem = floor, 0
	}
}

// advance moves the next slot n intervals later, exactly and saturating.
func (s *Scheduler) advance(n uint64) {
	if n == 1 { // the per-packet path: no division
		s.rem += s.r // < 2·den ≤ 2⁶⁴: no overflow
		carry := int64(0)
		if s.rem >= s.den {
			s.rem -= s.den
			carry = 1
		}
		s.next = addSat(addSat(s.next, s.q), carry)
		return
	}
	if n == 0 {
		return
	}
	// whole = n·q + ⌊(rem + n·r)/den⌋; rem' = (rem + n·r) mod den. hi < den always holds, as
	// rem + n·r < (n+1)·den ≤ 2⁶⁴·den.
	hi, lo := bits.Mul64(n, s.r)
	var c uint64
	lo, c = bits.Add64(lo, s.rem, 0)
	hi += c
	carry, rem := bits.Div64(hi, lo, s.den)
	s.rem = rem
	whole := mulSat(int64(min(n, math.MaxInt64)), s.q)
	if carry > math.MaxInt64 {
		carry = math.MaxInt64
	}
	s.next = addSat(addSat(s.next, whole), int64(carry))
}

func addSat(a, b int64) int64 {
	c := a + b
	if (c > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return c
}

func subSat(a, b int64) int64 {
	if b == math.MinInt64 {
		return addSat(addSat(a, math.MaxInt64), 1)
	}
	return addSat(a, -b)
}

// mulSat multiplies non-negative a and b, saturating at math.MaxInt64.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// Restart forgets the catch-up credit: the next departure is no earlier than now. A sender that
// was held back by its window or had nothing to send calls it when it can send again, so that
// the time it was blocked is not repaid as a burst (as Linux's TCP pacing, which never lets its
// next departure time fall behind the clock).
func (s *Scheduler) Restart(now time.Time) {
	t := s.ns(now)
	if !s.started || s.next < t {
		s.started, s.next, s.rem = true, t, 0
	}
}
