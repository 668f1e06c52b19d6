package rtt

import (
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

// MaxAckNo is the largest ACK sequence number (31 bits, spec §1.6).
const MaxAckNo = 0x7FFFFFFF

// DefaultHistory is the reference's ACK history size (CACKWindow, 1024
// entries; spec §2.3).
const DefaultHistory = 1024

// History is the receiver's ACK window: for each of the last N full or medium
// ACKs it keeps the ACK sequence number (ACK header word 1), the data
// sequence number it acknowledged (ACK word 0) and when it was sent. An ACK2
// naming one of them yields an RTT sample (spec §2.5).
//
// History assigns the ACK sequence numbers itself, so a lookup is O(1): they
// run 1, 2, …, MaxAckNo and then wrap to 1. (UDT 4.11 wraps to 0; we skip 0
// because light ACKs carry 0 in that field. A UDT4 peer only echoes the
// number, so this is compatible.)
//
// As in the reference, acknowledging entry k forgets k and every older entry,
// so a replayed or reordered older ACK2 yields no sample; an ACK2 naming a
// number never sent, already confirmed, or overwritten (older than N ACKs) is
// not found. No ACK2 content can make History misbehave.
type History struct {
	ent  []hentry
	head uint64 // ACKs stored so far; the newest has index head−1
	tail uint64 // the oldest live ACK's index; live: [tail, head)
}

type hentry struct {
	ackNo uint32
	ack   seqno.Seq
	sent  time.Time
}

// NewHistory returns an empty history of n entries (n < 1 means
// DefaultHistory).
func NewHistory(n int) *History {
	if n < 1 {
		n = DefaultHistory
	}
	return &History{ent: make([]hentry, n)}
}

// ackNoOf returns the ACK sequence number of the i-th stored ACK (0-based).
func ackNoOf(i uint64) uint32 { return uint32(i%MaxAckNo) + 1 }

// Next returns the ACK sequence number the next Store will assign.
func (h *History) Next() uint32 { return ackNoOf(h.head) }

// Store records an ACK acknowledging data up to (excluding) ack, sent at now,
// and returns the ACK sequence number to put in its header. When full, the
// oldest entry is overwritten.
func (h *History) Store(ack seqno.Seq, now time.Time) (ackNo uint32) {
	ackNo = ackNoOf(h.head)
	h.ent[h.head%uint64(len(h.ent))] = hentry{ackNo: ackNo, ack: ack, sent: now}
	h.head++
	if h.head-h.tail > uint64(len(h.ent)) {
		h.tail = h.head - uint64(len(h.ent))
	}
	return ackNo
}

// Acknowledge processes an ACK2 carrying ackNo, received at now. If that ACK
// is in the history it returns the RTT sample (now − send time, at least 0)
// and the data sequence number the ACK carried, and forgets that entry and
// all older ones. Otherwise ok is false and nothing changes.
func (h *History) Acknowledge(ackNo uint32, now time.Time) (rtt time.Duration, ack seqno.Seq, ok bool) {
	if h.head == h.tail || ackNo == 0 || ackNo > MaxAckNo {
		return 0, 0, false
	}
	newest := ackNoOf(h.head - 1)
	back := uint64((newest + MaxAckNo - ackNo) % MaxAckNo) // how many ACKs older than the newest
	if back >= h.head-h.tail {
		return 0, 0, false
	}
	i := h.head - 1 - back
	e := &h.ent[i%uint64(len(h.ent))]
	if e.ackNo != ackNo { // cannot happen; defensive
		return 0, 0, false
	}
	h.tail = i + 1
	return max(0, now.Sub(e.sent)), e.ack, true
}

// Len returns the number of ACKs awaiting an ACK2.
func (h *History) Len() int { return int(h.head - h.tail) }
