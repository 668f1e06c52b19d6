package stream

import "time"

// The bounds on a delivery-rate sample's window (delivery.go): which packet is its reference
// (deliveryRank), the oldest departure of what it counts (the suffix-minimum stacks), and the
// packets a repaired hole released that arrived before it began (the late batches).

// sendRange is the span of departures of a set of packets (an event's newly delivered ones).
type sendRange struct {
	first, last time.Duration
	any         bool // a packet was added
}

func (r *sendRange) add(t time.Duration) {
	if !r.any {
		r.first, r.last, r.any = t, t, true
		return
	}
	r.first, r.last = min(r.first, t), max(r.last, t)
}

// length is the time from the first departure to the last (0 for none or one).
func (r sendRange) length() time.Duration { return r.last - r.first }

// sendSpan is one entry of the suffix-minimum stack: minSent is the oldest send time of the
// packets delivered by event and every later event (the entries below it in the stack are older
// and reach further back).
type sendSpan struct {
	event   uint64
	minSent time.Duration
}

// maxSpans bounds the suffix-minimum stack; beyond it the oldest half of the entries merge into
// one, keeping the oldest send time, so a sample's interval can only grow (its rate only shrink).
// Merging half at once keeps a push O(1) amortised: in-order delivery pops nothing, so the stack
// stays full, and merging only the oldest two shifted the whole stack (16 KB) on every event.
const maxSpans = 1024

// spanStack is a suffix-minimum stack of sendSpan entries, oldest first.
type spanStack []sendSpan

// push records the oldest send time of the packets event delivered.
func (st *spanStack) push(event uint64, minSent time.Duration) {
	s := *st
	for len(s) > 0 && s[len(s)-1].minSent >= minSent {
		s = s[:len(s)-1]
	}
	if len(s) == maxSpans {
		h := maxSpans / 2
		s[h].minSent = s[0].minSent
		s = append(s[:0], s[h:]...)
	}
	*st = append(s, sendSpan{event: event, minSent: minSent})
}

// since returns the oldest send time of the packets delivered by the events after event.
func (st spanStack) since(event uint64) (time.Duration, bool) {
	lo, hi := 0, len(st)
	for lo < hi {
		m := (lo + hi) / 2
		if st[m].event > event {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == len(st) {
		return 0, false
	}
	return st[lo].minSent, true
}

// pushSpan numbers a new event and records the oldest send time of the packets it delivered.
func (d *deliveryTracker) pushSpan(minSent time.Duration) {
	d.events++
	d.spans.push(d.events, minSent)
}

// sentSince returns the oldest send time of the packets delivered by the events after event:
// the data counted in a sample whose reference packet left after event was all sent since then.
func (d *deliveryTracker) sentSince(event uint64) (time.Duration, bool) { return d.spans.since(event) }

// deliveryRank orders the packets an event delivers as a sample's reference: 2 for an original
// transmission acknowledged in time, 1 for a retransmission acknowledged in time that the
// receiver reported missing since its last blind resend (its earlier copies were lost, so its ACK
// dates its own delivery; Linux's tcp_rate.c samples retransmitted segments too, dropping samples
// shorter than the min RTT, as BBR here does, and accepting that a spurious one may read high), 0
// for the rest, which give no sample: a late packet (its ACK does not date its delivery), a blind
// resend or one shown spurious (an earlier copy may be the one that arrived).
func deliveryRank(f uint16) int {
	switch {
	case f&(pktLate|pktBlind|pktSpurious) != 0:
		return 0
	case f&pktRetrans != 0:
		return 1
	}
	return 2
}

// lateBatch is the late-acknowledged packets of one cumulative ACK: bytes, dated uniformly over
// [from, to] (departure + expected round trip).
type lateBatch struct {
	event    uint64
	from, to time.Duration
	bytes    int64
}

// maxLateBatches bounds the batches kept: more holes than this repaired within one sample's
// window (about a round trip) leave the oldest batches' packets counted (the sample errs high
// only on a path losing a packet in every few of a flight).
const maxLateBatches = 64

// lateBefore returns the bytes of the late batches reported by events after event that are dated
// at or before w: delivered before a sample window that begins at w.
func (d *deliveryTracker) lateBefore(event uint64, w time.Duration) int64 {
	var n int64
	for i := len(d.late) - 1; i >= 0 && d.late[i].event > event; i-- {
		lb := &d.late[i]
		switch {
		case lb.to <= w:
			n += lb.bytes
		case lb.from < w:
			n += int64(float64(lb.bytes) * float64(w-lb.from) / float64(lb.to-lb.from))
		}
	}
	return n
}
