package losslist

import (
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

// Receiver is the receiver's loss list: the sequence numbers detected missing
// and not yet arrived (spec §4.4 step 5), in circular order, as disjoint
// ranges. Each range remembers when it was detected, when it was last
// reported in a NAK and how many times, so that numbers still missing are
// re-reported periodically ([Receiver.Due]) — UDT 4.9+ disabled the periodic
// NAK and relies on the sender's go-back-N timeout instead (spec §2.4); we do
// better.
//
// A range may also be recorded unreported ([Receiver.Detect]): a gap the
// receiver waits a reordering window for before it reports it
// ([Receiver.Pending], [Receiver.NextPending]), since the packets may only be
// late (RFC 8985's reordering window applied at the receiver, as SRT's
// reorder tolerance does).
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
	e       []rentry // live ranges are e[h:]
	h       int
	n       int // packets
	pending int // ranges never reported (reports == 0)
	window  int
	epoch   time.Time
}

type rentry struct {
	first, last seqno.Seq
	reports     uint32
	tag         uint32        // the caller's value given to Detect
	detected    time.Duration // since epoch
	reported    time.Duration // since epoch; equals detected while reports == 0
}

// Entry describes one range of a Receiver with its report history.
type Entry struct {
	Range
	Detected   time.Time // when the range was recorded missing
	LastReport time.Time // when a NAK last named this range (Detected if none yet)
	Reports    int       // how many NAKs named it (0: pending, see Detect)
	Tag        uint32    // the value given to Detect (0 after Insert)
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
	return r.insert(first, last, now, 1, 0)
}

// Detect is Insert without the report: first..last is recorded missing at
// now but not reported yet; [Receiver.Pending] hands it out once it has been
// missing for the caller's reordering window. tag is kept with the new
// numbers and returned by Take (a receiver keeps the timestamp of the packet
// that revealed the gap, to tell a late original from a retransmission).
func (r *Receiver) Detect(first, last seqno.Seq, now time.Time, tag uint32) (int, error) {
	return r.insert(first, last, now, 0, tag)
}

func (r *Receiver) insert(first, last seqno.Seq, now time.Time, reports, tag uint32) (int, error) {
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
	fresh := rentry{first: first, last: last, reports: reports, tag: tag, detected: t, reported: t}
	if r.h == len(r.e) || r.e[len(r.e)-1].last.Less(first) {
		r.push(fresh)
		r.n += seqno.Len(first, last)
		r.countNew(reports, 1)
		return seqno.Len(first, last), nil
	}
	added := 0
	cur := first
	i := r.search(first)
	for {
		if i < len(r.e) && r.e[i].first.LessEq(last) {
			if cur.Less(r.e[i].first) {
				fresh.first, fresh.last = cur, r.e[i].first.Dec()
				j := r.insertAt(i, fresh)
				added += seqno.Len(cur, r.e[j].last)
				r.countNew(reports, 1)
				i = j + 1
			}
			if !r.e[i].last.Less(last) {
				break
			}
			cur = r.e[i].last.Inc()
			i++
			continue
		}
		fresh.first, fresh.last = cur, last
		r.insertAt(i, fresh)
		added += seqno.Len(cur, last)
		r.countNew(reports, 1)
		break
	}
	r.n += added
	return added, nil
}

// countNew adds k new ranges with the given report count to the pending count.
func (r *Receiver) countNew(reports uint32, k int) {
	if reports == 0 {
		r.pending += k
	}
}

// Remove deletes seq (a late or retransmitted packet arrived, spec §4.4 step
// 7), splitting its range if needed, and reports whether it was missing.
func (r *Receiver) Remove(seq seqno.Seq) bool {
	_, ok := r.Take(seq)
	return ok
}

// Take is Remove returning the history of the range seq belonged to: when it
// was detected, last reported and how many times (ok is false, and the
// Entry zero, if seq was not missing).
func (r *Receiver) Take(seq seqno.Seq) (Entry, bool) {
	i := r.search(seq)
	if i == len(r.e) || seq.Less(r.e[i].first) {
		return Entry{}, false
	}
	e := &r.e[i]
	info := r.entry(*e)
	switch {
	case e.first == e.last:
		if e.reports == 0 {
			r.pending--
		}
		r.deleteAt(i)
	case seq == e.first:
		e.first = seq.Inc()
	case seq == e.last:
		e.last = seq.Dec()
	default:
		tail := *e
		tail.first = seq.Inc()
		e.last = seq.Dec()
		r.countNew(tail.reports, 1)
		r.insertAt(i+1, tail)
	}
	r.n--
	return info, true
}

func (r *Receiver) entry(e rentry) Entry {
	return Entry{Range{e.first, e.last}, r.epoch.Add(e.detected), r.epoch.Add(e.reported), int(e.reports), e.tag}
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
			if e.reports == 0 {
				r.pending--
			}
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
// with the interval chosen by the caller, e.g. RTT + 4·RTTVar). Ranges never
// reported (Detect) are not re-reports and are left to Pending. At most limit
// ranges are appended (limit ≤ 0: no limit); the rest stay due for the next
// call. It does not allocate when dst has room.
func (r *Receiver) Due(now time.Time, interval time.Duration, dst []Range, limit int) []Range {
	t := r.since(now)
	k := 0
	for i := r.h; i < len(r.e) && (limit <= 0 || k < limit); i++ {
		e := &r.e[i]
		if e.reports == 0 || t-e.reported < interval {
			continue
		}
		dst = append(dst, Range{e.first, e.last})
		e.reported = t
		e.reports++
		k++
	}
	return dst
}

// Pending appends to dst, smallest first, the ranges never reported that were
// detected at least wait before now, marks them reported once at now, and
// returns the extended slice: the NAK of gaps that outlived the reordering
// window. At most limit ranges are appended (limit ≤ 0: no limit). It costs
// O(pending ranges) when, as a receiver records them, unreported ranges
// follow every reported one; it does not allocate when dst has room.
func (r *Receiver) Pending(now time.Time, wait time.Duration, dst []Range, limit int) []Range {
	if r.pending == 0 {
		return dst
	}
	t := r.since(now)
	k := 0
	for i := r.firstPending(); i < len(r.e) && r.pending > 0 && (limit <= 0 || k < limit); i++ {
		e := &r.e[i]
		if e.reports != 0 || t-e.detected < wait {
			continue
		}
		dst = append(dst, Range{e.first, e.last})
		e.reports, e.reported = 1, t
		r.pending--
		k++
	}
	return dst
}

// NextPending returns the earliest detection time among the ranges never
// reported; ok is false if there are none.
func (r *Receiver) NextPending() (time.Time, bool) {
	if r.pending == 0 {
		return time.Time{}, false
	}
	var first time.Duration
	seen := 0
	for i := len(r.e) - 1; i >= r.h && seen < r.pending; i-- {
		if e := &r.e[i]; e.reports == 0 {
			if seen == 0 || e.detected < first {
				first = e.detected
			}
			seen++
		}
	}
	return r.epoch.Add(first), true
}

// PendingLen returns the number of ranges never reported.
func (r *Receiver) PendingLen() int { return r.pending }

// firstPending returns the lowest index from which all never-reported ranges
// follow: scanning back from the end until all of them have been seen.
func (r *Receiver) firstPending() int {
	i, seen := len(r.e), 0
	for i > r.h && seen < r.pending {
		i--
		if r.e[i].reports == 0 {
			seen++
		}
	}
	return i
}

// Entries appends every range with its report history to dst, smallest
// first, for statistics and tests.
func (r *Receiver) Entries(dst []Entry) []Entry {
	for _, e := range r.e[r.h:] {
		dst = append(dst, r.entry(e))
	}
	return dst
}

// Clear empties the list, keeping its memory.
func (r *Receiver) Clear() { r.e, r.h, r.n, r.pending = r.e[:0], 0, 0, 0 }

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
