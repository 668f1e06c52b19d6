package stream

import (
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/losslist"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// Loss detection that tolerates reordering, on both sides (RFC 8985 RACK-TLP's time-based
// reordering window; SRT's receiver reorder tolerance).
//
// A gap in the sequence is not a loss yet: parallel router paths, multipath links and Wi-Fi
// deliver some packets late. UDT4 takes every gap for a loss at once (the receiver NAKs it, the
// sender resends it and its controller slows down, spec §4.4, §5.3), which on a path that
// delays a quarter of its packets by a few ms costs almost all of the throughput.
//
// Receiver. A gap waits the receiver's reordering window W_r before its NAK. If the missing
// packet arrives meanwhile, nothing is reported. Whether an arrival that fills a gap is late or
// a retransmission is told exactly by its header timestamp (spec §1.2: every transmission is
// stamped when it leaves): a packet stamped before the packet that revealed the gap was sent
// before it (or with it, in the same µs) and overtaken on the way. The time from the gap's detection to that arrival is the
// reordering extent; W_r is the largest extent observed (SRT raises its tolerance to each
// observed distance in the same way; here in time, as RFC 8985), so spurious NAKs happen only
// for extents larger than any seen before (for random extents about ln N of N). A late packet
// that arrives after its NAK (the NAK was spurious) is ACKed at once, so that the sender learns
// of it within a path delay rather than a SYN.
//
// Sender. A UDT 4.11 receiver NAKs every gap at once. Following RFC 8985 §6.2 the sender then
// declares a NAKed packet lost only once now ≥ its last transmission + minRTT + W_s, and resends
// the others when that deadline passes if no ACK has covered them by then (a timer). W_s grows
// when a retransmission proves spurious: an ACK covering it arrives sooner after the
// retransmission than a round trip (Linux tcp_rack_advance's test against the minimum RTT), so
// the receiver had the first copy; W_s then becomes the wait that would have avoided it. While
// no reordering has been seen (W_s = 0) every NAKed packet is lost at once, as in UDT4. A NAK
// naming a packet retransmitted less than minRTT ago was sent before that retransmission could
// arrive and is ignored for it.
//
// A receiver of ours marks its NAKs (header word 1, which UDT4 sends as 0 and never reads, spec
// §2 table) with nakWaited and its window in µs: such a NAK has already outlived a reordering
// window, so the sender resends its packets at once and does not widen its own window from
// them (the receiver widens its own, exactly); the sender's window serves UDT4 receivers only.
//
// Both windows are capped: W_r at max(SRTT, SYN) — RFC 8985 caps at SRTT, and a receiver
// reports progress only every SYN anyway, so a shorter cap buys no faster repair — and W_s at
// SRTT + SYN (a UDT4 receiver ACKs every SYN). Both fall back to zero after reorderPersist losses
// declared with no reordering observed (RFC 8985's reo_wnd_persist). Real loss is therefore
// repaired within RTT + W (+ one SYN against a UDT4 receiver on a reordering path).
//
// The controller is told (OnLoss) only of packets declared lost after the window, never of
// reordering.

// reorderPersist is RFC 8985's reo_wnd_persist: losses declared without any reordering observed
// after which a reordering window falls back to zero.
const reorderPersist = 16

// nakWaited marks a NAK sent after the receiver's reordering window (its header word 1; the low
// 31 bits carry the window in µs, for diagnostics).
const nakWaited = 1 << 31

// recentRepairs is how many gaps filled by a retransmission the receiver remembers, so that a
// late original arriving after its retransmission (a duplicate) still counts as reordering. The
// second copy comes within about an RTT of the first: 64 covers 64 repairs per RTT, more than a
// path losing 1 % of 6400 packets per RTT.
const recentRepairs = 64

// reorderWindow is an adaptive reordering window: the largest reordering extent observed since
// the last reset.
type reorderWindow struct {
	extent time.Duration
	quiet  int // losses declared since reordering was last observed
}

// observe records reordering by extent (≤ 0: reordering covered by the window already).
func (w *reorderWindow) observe(extent time.Duration) {
	w.extent = max(w.extent, extent)
	w.quiet = 0
}

// lossesDeclared counts n losses declared after the window; reorderPersist of them in a row
// without reordering reset the window.
func (w *reorderWindow) lossesDeclared(n int) {
	if w.quiet += n; w.quiet >= reorderPersist {
		w.extent, w.quiet = 0, 0
	}
}

// get returns the window, at most limit.
func (w *reorderWindow) get(limit time.Duration) time.Duration { return min(w.extent, limit) }

// sndReorder is the sender's reordering state.
type sndReorder struct {
	win reorderWindow
	// minRTT is the smallest time from a packet's only transmission to the ACK covering it
	// (Karn's rule: retransmitted packets give no sample).
	minRTT time.Duration
	// deferred holds NAKed packets whose deadline has not passed; created on first use.
	deferred *losslist.Sender
}

// rcvReorder is the receiver's reordering state.
type rcvReorder struct {
	win       reorderWindow
	nakAtOnce bool // tests: NAK every gap at once, as a UDT 4.11 receiver does
	repairs   [recentRepairs]repairRec
	next      int
}

// repairRec is a gap that a retransmission filled.
type repairRec struct {
	seq      seqno.Seq
	tag      uint32        // timestamp of the packet that revealed the gap
	detected time.Duration // when the gap was detected
	valid    bool
}

// sentNoLater reports whether 32-bit µs header timestamp a is not later than b (wrapping): a
// packet stamped in the same µs as the one that revealed its gap left with it (a packet pair),
// while a retransmission leaves at least a round trip after it.
func sentNoLater(a, b uint32) bool { return int32(a-b) <= 0 }

// rcvReorderWindow is how long a gap waits before its NAK.
func (e *Endpoint) rcvReorderWindow() time.Duration {
	if e.rro.nakAtOnce {
		return 0
	}
	return e.rro.win.get(max(e.rtt.RTT(), SYN))
}

// sndReorderWindow is W_s, the sender's reordering window.
func (e *Endpoint) sndReorderWindow() time.Duration { return e.sro.win.get(e.rtt.RTT() + SYN) }

// onGap records the gap first..last revealed by a packet stamped ts and NAKs it at once if the
// reordering window is zero.
func (e *Endpoint) onGap(t time.Duration, now time.Time, first, last seqno.Seq, ts uint32) {
	n, err := e.rloss.Detect(first, last, now, ts)
	if err != nil { // cannot happen: every gap lies within the receive window
		e.stats.Drops.OutOfWindow++
		return
	}
	for _, d := range e.msgs.dropped {
		// Given up by drop requests at this packet's insert (message mode): not missing (spec
		// §2.6), and not reported.
		n -= e.rloss.RemoveRange(d.First, d.Last)
	}
	if n > 0 && e.rloss.Len() == n {
		e.nakTick = t // the periodic NAK starts with the first loss
	}
	e.checkPendingNAK(t, now)
}

// nakWait is how long a gap must have been missing before its NAK: longer than a non-zero
// reordering window, so that a packet exactly as late as the latest seen (a tie, common on paths
// with a fixed extra delay) is not reported; with no reordering seen, no wait (spec §2.4).
func (e *Endpoint) nakWait() time.Duration {
	if w := e.rcvReorderWindow(); w > 0 {
		return w + time.Nanosecond
	}
	return 0
}

// pendingNAKDue returns when the oldest unreported gap outlives the reordering window.
func (e *Endpoint) pendingNAKDue() (time.Duration, bool) {
	first, ok := e.rloss.NextPending()
	if !ok {
		return 0, false
	}
	return e.since(first) + e.nakWait(), true
}

// checkPendingNAK NAKs the gaps that have outlived the reordering window, lowest first, as many
// as fit in one packet (the rest stay due).
func (e *Endpoint) checkPendingNAK(t time.Duration, now time.Time) {
	if due, ok := e.pendingNAKDue(); !ok || t < due {
		return
	}
	e.dueRanges = e.rloss.Pending(now, e.nakWait(), e.dueRanges[:0], cap(e.nak.Ranges))
	if len(e.dueRanges) == 0 {
		return
	}
	e.nak.Ranges = e.nak.Ranges[:0]
	for _, r := range e.dueRanges {
		e.nak.Ranges = append(e.nak.Ranges, packet.SeqRange{First: uint32(r.First), Last: uint32(r.Last)})
		e.stats.RcvLoss += uint64(r.Len())
		e.traceGap(r.First, r.Last, r.Len())
	}
	e.rro.win.lossesDeclared(len(e.dueRanges))
	e.markNAK()
	e.sendNAK(t)
}

// markNAK sets the header word 1 of the NAK about to be sent (see nakWaited).
func (e *Endpoint) markNAK() {
	e.nak.AddInfo = 0
	if !e.rro.nakAtOnce {
		e.nak.AddInfo = nakWaited | uint32(min(e.rcvReorderWindow()/time.Microsecond, nakWaited-1))
	}
}

// onFill handles a packet stamped ts that filled a gap.
func (e *Endpoint) onFill(t time.Duration, now time.Time, seq seqno.Seq, ts uint32) {
	ent, ok := e.rloss.Take(seq)
	if !ok {
		return
	}
	if sentNoLater(ts, ent.Tag) { // sent before the packet that revealed the gap: late, not lost
		e.stats.PktReordered++
		e.rro.win.observe(now.Sub(ent.Detected))
		if ent.Reports > 0 && !e.rro.nakAtOnce {
			e.ackForce = true // the NAK was spurious: let the sender know at once
		}
		return
	}
	r := &e.rro.repairs[e.rro.next]
	e.rro.next = (e.rro.next + 1) % recentRepairs
	*r = repairRec{seq: seq, tag: ent.Tag, detected: e.since(ent.Detected), valid: true}
}

// onDuplicate handles a second copy of seq stamped ts: if a retransmission filled its gap and
// this copy was sent before the packet that revealed the gap, it is the late original.
func (e *Endpoint) onDuplicate(t time.Duration, seq seqno.Seq, ts uint32) {
	for i := range e.rro.repairs {
		r := &e.rro.repairs[i]
		if !r.valid || r.seq != seq {
			continue
		}
		r.valid = false
		if sentNoLater(ts, r.tag) {
			e.stats.PktReordered++
			e.rro.win.observe(t - r.detected)
		}
		return
	}
}

// lossDeadline is when a NAKed packet last sent at last may be declared lost (with w > 0, just
// past last + minRTT + w: an ACK exactly as late as the latest seen is waited for).
func (e *Endpoint) lossDeadline(last, w time.Duration) time.Duration {
	if w > 0 {
		w += time.Nanosecond
	}
	return last + e.sro.minRTT + w
}

// declareNAKLosses applies a NAK's ranges (validated by onNAK): packets sent long enough ago are
// lost now and go into the loss list; the others wait in the deferred set for their deadline;
// packets retransmitted less than minRTT ago are skipped. It returns the ranges declared lost,
// for the controller (at most cap(e.lossRanges)).
func (e *Endpoint) declareNAKLosses(t time.Duration, rs []packet.SeqRange, waited bool) []congestion.Range {
	out := e.lossRanges[:0]
	w := e.sndReorderWindow()
	if waited {
		w = 0 // the receiver waited its own window before this NAK
	}
	lo, hi := e.sndLastAck(), e.sndCurrSeq()
	budget := e.inFlight() // ranges of a genuine NAK do not overlap: never more packets than in flight
	var runs lossRuns
	for _, r := range rs {
		first, last := seqno.SeqFromWire(r.First), seqno.SeqFromWire(r.Last)
		if seqno.Offset(first, lo) > 0 {
			first = lo
		}
		if seqno.Offset(last, hi) < 0 {
			last = hi
		}
		if seqno.Offset(first, last) < 0 {
			continue // wholly acknowledged
		}
		if w == 0 && e.sent.retrans == 0 { // no reordering seen, no retransmission to judge
			e.stats.SndLoss += uint64(e.reportedLoss(first, last))
			out = appendLoss(out, first, last)
			runs.add(first, last)
			continue
		}
		for s := first; seqno.Offset(s, last) >= 0 && budget > 0; s = s.Inc() {
			budget--
			rec := e.sent.at(s)
			if rec == nil {
				continue
			}
			if rec.flags&sentRetrans != 0 && t-rec.last < e.sro.minRTT {
				continue // the NAK left before this retransmission could arrive
			}
			if w > 0 && t < e.lossDeadline(rec.last, w) {
				e.deferLoss(s)
				continue
			}
			e.sent.markNAK(s, waited)
			e.stats.SndLoss += uint64(e.reportedLoss(s, s))
			out = appendLoss(out, s, s)
			runs.add(s, s)
		}
	}
	e.sro.win.lossesDeclared(runs.n)
	return out
}

// lossRuns counts the runs of consecutive numbers among losses declared in order: each run is
// one loss event for the reordering windows' decay.
type lossRuns struct {
	n    int
	last seqno.Seq
}

func (r *lossRuns) add(first, last seqno.Seq) {
	if r.n == 0 || r.last.Inc() != first {
		r.n++
	}
	r.last = last
}

// appendLoss adds first..last to out, merging it into the last range when adjacent; beyond
// out's capacity further ranges are dropped (the loss list has them all).
func appendLoss(out []congestion.Range, first, last seqno.Seq) []congestion.Range {
	if n := len(out); n > 0 && seqno.SeqFromWire(out[n-1].Last).Inc() == first {
		out[n-1].Last = uint32(last)
		return out
	}
	if len(out) == cap(out) {
		return out
	}
	return append(out, congestion.Range{First: uint32(first), Last: uint32(last)})
}

// deferLoss holds NAKed packet seq until its deadline.
func (e *Endpoint) deferLoss(seq seqno.Seq) {
	if e.sro.deferred == nil {
		e.sro.deferred = losslist.NewSender(e.sndLastAck(), e.sloss.Window())
	}
	if n, err := e.sro.deferred.Insert(seq, seq); err == nil && n > 0 {
		e.stats.LossDeferred++
	}
}

// forgetDeferred drops first..last from the deferred losses (a given-up message's packets).
func (e *Endpoint) forgetDeferred(first, last seqno.Seq) {
	if d := e.sro.deferred; d != nil {
		d.RemoveRange(first, last)
	}
}

// deferredDue returns the deadline of the oldest deferred packet.
func (e *Endpoint) deferredDue() (time.Duration, bool) {
	d := e.sro.deferred
	if d == nil || d.Len() == 0 {
		return 0, false
	}
	s, _ := d.Front()
	rec := e.sent.at(s)
	if rec == nil {
		return 0, true // acknowledged: due for removal at once
	}
	return e.lossDeadline(rec.last, e.sndReorderWindow()), true
}

// checkDeferred declares lost the deferred packets whose deadline has passed, oldest first, and
// tells the controller.
func (e *Endpoint) checkDeferred(t time.Duration, now time.Time) {
	d := e.sro.deferred
	if d == nil || d.Len() == 0 {
		return
	}
	if due, _ := e.deferredDue(); t < due {
		return
	}
	w := e.sndReorderWindow()
	out := e.lossRanges[:0]
	var runs lossRuns
	e.dlv.begin()
	defer e.deliveryDone(t, now)
	for {
		s, ok := d.Front()
		if !ok {
			break
		}
		rec := e.sent.at(s)
		if rec != nil && t < e.lossDeadline(rec.last, w) {
			break
		}
		d.PopFront()
		if rec == nil {
			continue
		}
		e.sent.markNAK(s, false)
		e.stats.SndLoss += uint64(e.reportedLoss(s, s))
		out = appendLoss(out, s, s)
		runs.add(s, s)
	}
	if len(out) == 0 {
		return
	}
	e.sro.win.lossesDeclared(runs.n)
	e.cc.OnLoss(now, congestion.Loss{Ranges: out, CurrSeq: uint32(e.sndCurrSeq())})
	e.applyCC()
}

// ackSent updates the sender's reordering state for a cumulative ACK of everything before ack
// (called before the send buffer moves): deferred packets it covers, and packets declared lost
// whose resend has not left yet, were late, not lost; retransmissions it covers sooner than
// minRTT/2 after they left were spurious; the newest packet it covers gives an RTT sample if it
// was sent once.
//
// The spurious test is Linux tcp_rack_advance's (the ACK came sooner after the retransmission
// than a round trip, so the receiver had an earlier copy) with half the minimum RTT: minRTT as
// measured exceeds the path's floor by the queueing and ACK delay of its best sample, and a
// repair whose round trip happened to beat that sample would otherwise be taken for reordering
// and widen the window by a whole RTT. A late original's ACK against a UDT4 receiver comes the
// reordering extent plus at most a SYN after the resend: well inside half an RTT on the paths
// where reordering costs throughput.
func (e *Endpoint) ackSent(t time.Duration, ack seqno.Seq) {
	if d := e.sro.deferred; d != nil {
		for d.Len() > 0 {
			s, _ := d.Front()
			if seqno.Offset(s, ack) <= 0 {
				break
			}
			d.PopFront()
			if rec := e.sent.at(s); rec != nil {
				e.stats.LossDeferredAcked++
				e.sro.win.observe(t - e.lossDeadline(rec.last, 0))
			}
		}
		d.RemoveBefore(ack)
	}
	// Packets a NAK declared lost that the ACK covers before their resend left were late.
	for e.sloss.Len() > 0 {
		s, _ := e.sloss.Front()
		if seqno.Offset(s, ack) <= 0 {
			break
		}
		e.sloss.PopFront()
		if rec := e.sent.at(s); rec != nil && rec.flags&(sentRetrans|queuedByTime) == 0 {
			e.stats.LossUnsent++
			e.dlv.spurious(s)
			if rec.flags&queuedAfterWait == 0 {
				e.sro.win.observe(t - e.lossDeadline(rec.last, 0))
			}
		}
	}
	minRTT := e.sro.minRTT
	if rec := e.sent.at(ack.Dec()); rec != nil && rec.flags&sentRetrans == 0 {
		if s := t - rec.last; s > 0 && (e.sro.minRTT == 0 || s < e.sro.minRTT) {
			e.sro.minRTT = s
		}
	}
	if e.sent.retrans == 0 {
		e.sent.ack(ack, nil)
		return
	}
	e.sent.ack(ack, func(s seqno.Seq, r *sentRec) {
		if r.flags&sentRetrans == 0 || t-r.last >= minRTT/2 {
			return
		}
		e.stats.PktSpurious++
		e.dlv.spurious(s)
		if r.flags&(sentByTimer|sentAfterWait) == 0 {
			e.sro.win.observe(t - r.prev - minRTT)
		}
	})
}
