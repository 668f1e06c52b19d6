package losslist

import (
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

// Receiver is the receiver's loss list: the sequence numbers detected missing
// and not yet arrived (spec §4.4 step 5), in circular order, as disjoint
// ranges. Each range remembers when it was last reported in a NAK and how
// many times, so that numbers still missing are re-reported periodically
// ([Receiver.Due]) — UDT 4.9+ disabled the periodic NAK and relies on the
// sender's go-back-N timeout instead (spec §2.4); we do better.
//
// All ranges lie within a span of Window packets starting at the first one;
// insertions beyond it fail with ErrWindow. Memory is proportional to the
// number of ranges (at most Window, and Window/2 when gaps are recorded in
// arrival order); the backing array grows by doubling and is reused, so
// steady-state operation does not allocate.
//
// Costs, R = number of ranges: appending a new gap O(1); First and
// RemoveBefore O(1) per range removed; Remove O(log R) plus, when a range is
// split or deleted, a shift of the shorter side (O(1) for in-order
// retransmissions); Due O(R).
type Receiver struct {
	e      []rentry // live ranges are e[h:]
	h      int
	n      int // packets
	window int
	epoch  time.Time
}

type rentry struct {
	first, last seqno.Seq
	reports     uint32
	reported    time.Duration // since epoch
}

// Entry describes one range of a Receiver with its report history.
type Entry struct {
	Range
	LastReport time.Time // when a NAK last named this range
	Reports    int       // how many NAKs named it
}

// NewReceiver returns an empty receiver loss list whose ranges must fit in a
// span of window packets (normally the receive buffer's capacity); window is
// clamped to [1, MaxWindow].
func NewReceiver(window int) *Receiver {
	return &Receiver{window: max(1, min(window, MaxWindow)), e: make([]rentry, 0, 16)}
}

// Len returns the number of missing sequence numbers (packets).
func (r *Receiver) Len() int { return r.n }

// Ranges returns the number of disjoint ranges.
func (r *Receiver) Ranges() int { return len(r.e) - r.h }

// First returns the smallest missing sequence number: the receiver's ACK
// number when the list is not empty (spec §2.3 word 0).
func (r *Receiver) First() (seqno.Seq, bool) {
	if r.h == len(r.e) {
		return 0, false
	}
	return r.e[r.h].first, true
}

func (r *Receiver) since(now time.Time) time.Duration {
	if r.epoch.IsZero() {
		r.epoch = now
	}
	return now.Sub(r.epoch)
}

// Insert records first..last as missing and as reported once at now (the
// caller sends the immediate NAK, spec §2.4). Numbers already in the list keep
// their history. It returns how many numbers were new, ErrInverted if first
// comes after last, or ErrWindow if the list would span more than its window;
// the list is unchanged on error. The usual call, a gap beyond every recorded
// range, appends in O(1).
func (r *Receiver) Insert(first, last seqno.Seq, now time.Time) (int, error) {
	if seqno.Offset(first, last) < 0 {
		return 0, ErrInverted
	}
	if r.h < len(r.e) {
		// Offsets from the first range; existing ranges span [0, window).
		lo := r.e[r.h].first
		d1, d2 := seqno.Offset(lo, first), seqno.Offset(lo, last)
		if d1 > d2 || max(d2, seqno.Offset(lo, r.e[len(r.e)-1].last))-min(d1, 0) >= r.window {
			return 0, ErrWindow
		}
	} else if seqno.Len(first, last) > r.window {
		return 0, ErrWindow
	}
	t := r.since(now)
	if r.h == len(r.e) || r.e[len(r.e)-1].last.Less(first) {
		r.push(rentry{first: first, last: last, reports: 1, reported: t})
		r.n += seqno.Len(first, last)
		return seqno.Len(first, last), nil
	}
	added := 0
	cur := first
	i := r.search(first)
	for {
		if i < len(r.e) && r.e[i].first.LessEq(last) {
			if cur.Less(r.e[i].first) {
				j := r.insertAt(i, rentry{first: cur, last: r.e[i].first.Dec(), reports: 1, reported: t})
				added += seqno.Len(cur, r.e[j].last)
				i = j + 1
			}
			if !r.e[i].last.Less(last) {
				break
			}
			cur = r.e[i].last.Inc()
			i++
			continue
		}
		r.insertAt(i, rentry{first: cur, last: last, reports: 1, reported: t})
		added += seqno.Len(cur, last)
		break
	}
	r.n += added
	return added, nil
}

// Remove deletes seq (a late or retransmitted packet arrived, spec §4.4 step
// 7), splitting its range if needed, and reports whether it was missing.
func (r *Receiver) Remove(seq seqno.Seq) bool {
	i := r.search(seq)
	if i == len(r.e) || seq.Less(r.e[i].first) {
		return false
	}
	e := &r.e[i]
	switch {
	case e.first == e.last:
		r.deleteAt(i)
	case seq == e.first:
		e.first = seq.Inc()
	case seq == e.last:
		e.last = seq.Dec()
	default:
		tail := *e
		tail.first = seq.Inc()
		e.last = seq.Dec()
		r.insertAt(i+1, tail)
	}
	r.n--
	return true
}

// Contains reports whether seq is missing.
func (r *Receiver) Contains(seq seqno.Seq) bool {
	i := r.search(seq)
	return i < len(r.e) && r.e[i].first.LessEq(seq)
}

// RemoveBefore deletes every number before ack, e.g. when the receiver gives
// up on them or a message drop request names them (spec §2.6).
func (r *Receiver) RemoveBefore(ack seqno.Seq) {
	for r.h < len(r.e) {
		e := &r.e[r.h]
		if e.last.Less(ack) {
			r.n -= seqno.Len(e.first, e.last)
			r.h++
			continue
		}
		if e.first.Less(ack) {
			r.n -= seqno.Offset(e.first, ack)
			e.first = ack
		}
		break
	}
	if r.h == len(r.e) {
		r.e, r.h = r.e[:0], 0
	}
}

// Due appends to dst, smallest first, the ranges last reported at least
// interval before now, marks them reported at now, and returns the extended
// slice: the periodic NAK re-report (the draft's per-entry rule, spec §2.4,
// with the interval chosen by the caller, e.g. RTT + 4·RTTVar). At most limit
// ranges are appended (limit ≤ 0: no limit); the rest stay due for the next
// call. It does not allocate when dst has room.
func (r *Receiver) Due(now time.Time, interval time.Duration, dst []Range, limit int) []Range {
	t := r.since(now)
	k := 0
	for i := r.h; i < len(r.e) && (limit <= 0 || k < limit); i++ {
		e := &r.e[i]
		if t-e.reported < interval {
			continue
		}
		dst = append(dst, Range{e.first, e.last})
		e.reported = t
		e.reports++
		k++
	}
	return dst
}

// Entries appends every range with its report history to dst, smallest
// first, for statistics and tests.
func (r *Receiver) Entries(dst []Entry) []Entry {
	for _, e := range r.e[r.h:] {
		dst = append(dst, Entry{Range{e.first, e.last}, r.epoch.Add(e.reported), int(e.reports)})
	}
	return dst
}

// Clear empties the list, keeping its memory.
func (r *Receiver) Clear() { r.e, r.h, r.n = r.e[:0], 0, 0 }

// search returns the index of the first live range whose last is at or after
// seq, or len(r.e).
func (r *Receiver) search(seq seqno.Seq) int {
	lo, hi := r.h, len(r.e)
	if hi > lo && r.e[hi-1].last.Less(seq) {
		return hi // common case: beyond everything
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.e[m].last.Less(seq) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (r *Receiver) push(e rentry) {
	if len(r.e) == cap(r.e) && r.h > 0 {
		r.compact()
	}
	r.e = append(r.e, e)
}

func (r *Receiver) compact() {
	n := copy(r.e, r.e[r.h:])
	r.e, r.h = r.e[:n], 0
}

// insertAt inserts e before the range at index i (r.h ≤ i ≤ len), shifting
// the shorter side, and returns e's new index; the range that was at i is at
// the returned index + 1.
func (r *Receiver) insertAt(i int, e rentry) int {
	if r.h > 0 && i-r.h < len(r.e)-i {
		copy(r.e[r.h-1:], r.e[r.h:i])
		r.h--
		r.e[i-1] = e
		return i - 1
	}
	if len(r.e) == cap(r.e) && r.h > 0 {
		i -= r.h
		r.compact()
	}
	r.e = append(r.e, rentry{})
	copy(r.e[i+1:], r.e[i:])
	r.e[i] = e
	return i
}

// deleteAt removes index i, shifting the shorter side.
func (r *Receiver) deleteAt(i int) {
	if i-r.h < len(r.e)-1-i {
		copy(r.e[r.h+1:], r.e[r.h:i])
		r.h++
	} else {
		copy(r.e[i:], r.e[i+1:])
		r.e = r.e[:len(r.e)-1]
	}
	if r.h == len(r.e) {
		r.e, r.h = r.e[:0], 0
	}
}
