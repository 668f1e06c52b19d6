package losslist

import (
	"math/bits"

	"github.com/udtgo/udt/internal/seqno"
)

// Sender is the sender's loss list: the set of sequence numbers the peer
// reported lost (NAK, spec §2.4) or that an EXP timeout queued for go-back-N
// (spec §4.5), served smallest first before any new data (spec §4.3).
//
// Every member lies in [Base, Base+Window), where Base is the oldest
// unacknowledged sequence number (the sender's SndLastAck). The set is a
// bitmap of Window bits (rounded up to a power of two, at least 64) indexed
// by sequence number, so memory is fixed at construction, Window/8 bytes
// (4 KiB for the default 25 600-packet window, rounded up to 32 768; callers
// must bound the window they pass, e.g. a peer's handshake flow window), and no input, however hostile, makes an
// operation cost more than O(Window/64) word operations. Insert and
// RemoveBefore cost O(range/64); PopFront is amortised O(1) for in-order use.
type Sender struct {
	bits []uint64
	mask uint32    // size − 1; size is a power of two dividing 2^31
	base seqno.Seq // members lie in [base, base+size)
	scan seqno.Seq // no members in [base, scan); scan is within [base, base+size]
	n    int
}

// NewSender returns an empty sender loss list whose window starts at base
// (the initial sequence number) and holds window packets; window is clamped
// to [64, MaxWindow] and rounded up to a power of two.
func NewSender(base seqno.Seq, window int) *Sender {
	size := 64
	for size < window && size < MaxWindow {
		size <<= 1
	}
	return &Sender{bits: make([]uint64, size/64), mask: uint32(size - 1), base: base, scan: base}
}

// Window returns the number of sequence numbers the list can span.
func (s *Sender) Window() int { return int(s.mask) + 1 }

// Base returns the oldest sequence number the list can hold.
func (s *Sender) Base() seqno.Seq { return s.base }

// Len returns the number of sequence numbers in the list (packets).
func (s *Sender) Len() int { return s.n }

// Insert adds first..last (inclusive, circular order) and returns how many
// numbers were new. Numbers before Base are already acknowledged and are
// clipped, as the reference does with NAK entries below SndLastAck (spec
// §2.4). It returns ErrInverted if first comes after last and ErrWindow if
// last is at or beyond Base+Window; the list is unchanged on error.
func (s *Sender) Insert(first, last seqno.Seq) (int, error) {
	if seqno.Offset(first, last) < 0 {
		return 0, ErrInverted
	}
	if seqno.Offset(s.base, last) < 0 {
		return 0, nil // wholly acknowledged
	}
	if seqno.Offset(s.base, first) < 0 {
		first = s.base
	}
	if seqno.Offset(s.base, last) > int(s.mask) {
		return 0, ErrWindow
	}
	added := s.setRange(uint32(first)&s.mask, seqno.Len(first, last), true)
	s.n += added
	if seqno.Offset(first, s.scan) > 0 {
		s.scan = first
	}
	return added, nil
}

// Remove deletes seq if present and reports whether it was.
func (s *Sender) Remove(seq seqno.Seq) bool {
	if !s.Contains(seq) {
		return false
	}
	i := uint32(seq) & s.mask
	s.bits[i>>6] &^= 1 << (i & 63)
	s.n--
	return true
}

// Contains reports whether seq is in the list.
func (s *Sender) Contains(seq seqno.Seq) bool {
	if o := seqno.Offset(s.base, seq); o < 0 || o > int(s.mask) {
		return false
	}
	i := uint32(seq) & s.mask
	return s.bits[i>>6]&(1<<(i&63)) != 0
}

// RemoveBefore deletes every number before ack (the peer has received them)
// and moves Base to ack. An ack at or before Base changes nothing.
func (s *Sender) RemoveBefore(ack seqno.Seq) {
	d := seqno.Offset(s.base, ack)
	if d <= 0 {
		return
	}
	if d > int(s.mask) || s.n == 0 {
		if s.n != 0 {
			clear(s.bits)
			s.n = 0
		}
	} else {
		s.n -= s.setRange(uint32(s.base)&s.mask, d, false)
	}
	s.base = ack
	if seqno.Offset(s.scan, ack) > 0 {
		s.scan = ack
	}
}

// Front returns the smallest number in the list without removing it.
func (s *Sender) Front() (seqno.Seq, bool) {
	if s.n == 0 {
		return 0, false
	}
	start := uint32(s.scan) & s.mask
	p := s.findFrom(start)
	s.scan = s.scan.Add(int((p - start) & s.mask))
	return s.scan, true
}

// PopFront removes and returns the smallest number in the list, the next
// packet to retransmit (spec §4.3 step 2).
func (s *Sender) PopFront() (seqno.Seq, bool) {
	seq, ok := s.Front()
	if !ok {
		return 0, false
	}
	i := uint32(seq) & s.mask
	s.bits[i>>6] &^= 1 << (i & 63)
	s.n--
	s.scan = seq.Inc()
	return seq, true
}

// Clear empties the list and restarts its window at base.
func (s *Sender) Clear(base seqno.Seq) {
	clear(s.bits)
	s.n, s.base, s.scan = 0, base, base
}

// findFrom returns the bitmap index of the first set bit at or after start,
// wrapping around; the caller guarantees one exists.
func (s *Sender) findFrom(start uint32) uint32 {
	nw := len(s.bits)
	w := int(start >> 6)
	word := s.bits[w] &^ (1<<(start&63) - 1)
	for range nw + 1 {
		if word != 0 {
			return uint32(w<<6 + bits.TrailingZeros64(word))
		}
		if w++; w == nw {
			w = 0
		}
		word = s.bits[w]
	}
	panic("losslist: count and bitmap disagree") // unreachable: n > 0
}

// setRange sets (or clears) n ≤ size bits from index start, wrapping, and
// returns how many bits changed.
func (s *Sender) setRange(start uint32, n int, set bool) int {
	size := int(s.mask) + 1
	first := min(n, size-int(start))
	changed := s.setLinear(int(start), first, set)
	if n > first {
		changed += s.setLinear(0, n-first, set)
	}
	return changed
}

func (s *Sender) setLinear(start, n int, set bool) int {
	changed := 0
	for n > 0 {
		w, b := start>>6, start&63
		k := min(64-b, n)
		m := ^uint64(0) >> (64 - k) << b
		old := s.bits[w]
		if set {
			changed += bits.OnesCount64(m &^ old)
			s.bits[w] = old | m
		} else {
			changed += bits.OnesCount64(m & old)
			s.bits[w] = old &^ m
		}
		start += k
		n -= k
	}
	return changed
}
