package stream

import (
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

// sentLog records when each packet in flight (sent, not yet acknowledged) was last transmitted,
// for the sender's time-based loss detection (reorder.go, after RFC 8985's per-packet
// xmit_ts): a NAK declares a packet lost only once it was sent long enough ago, and an ACK
// that arrives sooner after a retransmission than a round trip shows the retransmission was
// spurious. Records live in a ring indexed by the offset from the first unacknowledged packet
// (never by comparing raw 31-bit numbers), which grows with the flight up to the send buffer
// and is freed when the flight is empty.
type sentLog struct {
	base    seqno.Seq // sequence number of the record at head: the first unacknowledged packet
	ring    []sentRec // power-of-two length
	head    int
	n       int // records: base … base+n−1
	limit   int // largest n: the send buffer in packets
	retrans int // records with sentRetrans set
}

// sentRec is one packet's transmission history. Times are on the engine clock.
type sentRec struct {
	last  time.Duration // latest transmission
	prev  time.Duration // the transmission before it (valid with sentRetrans)
	flags uint8
}

// sentRec flags.
const (
	sentRetrans     uint8 = 1 << iota // the latest transmission is a retransmission
	sentByTimer                       // … queued by the retransmission timer (probe, go-back-N), not by a NAK
	sentAfterWait                     // … queued by a NAK sent after the receiver's reordering window
	queuedByTime                      // queued for retransmission by the timer and not resent since
	queuedAfterWait                   // queued by a NAK sent after the receiver's window, not resent since
)

func newSentLog(isn seqno.Seq, limit int) sentLog {
	return sentLog{base: isn, limit: max(limit, 1)}
}

// at returns the record of seq, or nil if seq is not in flight.
func (l *sentLog) at(seq seqno.Seq) *sentRec {
	k := seqno.Offset(l.base, seq)
	if k < 0 || k >= l.n {
		return nil
	}
	return &l.ring[(l.head+k)&(len(l.ring)-1)]
}

// onSend records a transmission of seq at t: the next new packet (base+n) or a retransmission
// of one in flight; anything else is ignored.
func (l *sentLog) onSend(seq seqno.Seq, t time.Duration, retrans bool) {
	if !retrans {
		// Numbers the send buffer skipped (a given-up message's unsent packets take their
		// numbers as if sent, buffer.SendBuffer.GiveUp) are recorded as sent now too.
		for k := seqno.Offset(l.base, seq); l.n <= k && l.n < l.limit; {
			if l.n == len(l.ring) {
				l.grow()
			}
			l.n++
			l.ring[(l.head+l.n-1)&(len(l.ring)-1)] = sentRec{last: t}
		}
		return
	}
	r := l.at(seq)
	if r == nil {
		return
	}
	if r.flags&sentRetrans == 0 {
		l.retrans++
	}
	flags := sentRetrans
	if r.flags&queuedByTime != 0 {
		flags |= sentByTimer
	}
	if r.flags&queuedAfterWait != 0 {
		flags |= sentAfterWait
	}
	r.prev, r.last, r.flags = r.last, t, flags
}

// grow doubles the ring (at least 64 records).
func (l *sentLog) grow() {
	r := make([]sentRec, max(64, 2*len(l.ring)))
	for k := 0; k < l.n; k++ {
		r[k] = l.ring[(l.head+k)&(len(l.ring)-1)]
	}
	l.ring, l.head = r, 0
}

// markTimer notes that the timer queued seq for retransmission (sentByTimer on its next send).
func (l *sentLog) markTimer(first, last seqno.Seq) {
	for s := first; seqno.Offset(s, last) >= 0; s = s.Inc() {
		if r := l.at(s); r != nil {
			r.flags = r.flags&^queuedAfterWait | queuedByTime
		}
	}
}

// markNAK notes that a NAK, not the timer, queued seq for retransmission; waited: a NAK sent
// after the receiver's reordering window.
func (l *sentLog) markNAK(seq seqno.Seq, waited bool) {
	if r := l.at(seq); r != nil {
		r.flags &^= queuedByTime | queuedAfterWait
		if waited {
			r.flags |= queuedAfterWait
		}
	}
}

// ack drops the records before ack, calling fn (if not nil) for each of them, oldest first.
func (l *sentLog) ack(ack seqno.Seq, fn func(seqno.Seq, *sentRec)) {
	off := seqno.Offset(l.base, ack)
	if off <= 0 {
		return
	}
	d := min(off, l.n)
	for k := 0; k < d; k++ {
		r := &l.ring[(l.head+k)&(len(l.ring)-1)]
		if fn != nil {
			fn(l.base.Add(k), r)
		}
		if r.flags&sentRetrans != 0 {
			l.retrans--
		}
	}
	if d > 0 {
		l.head = (l.head + d) & (len(l.ring) - 1)
	}
	l.n -= d
	l.base = ack
	if l.n == 0 {
		l.head = 0
	}
}

// trim frees the ring while nothing is in flight: an idle connection keeps no records.
func (l *sentLog) trim() {
	if l.n == 0 {
		l.ring, l.head = nil, 0
	}
}
