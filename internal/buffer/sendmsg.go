package buffer

import (
	"errors"
	"math"

	"github.com/udtgo/udt/internal/seqno"
)

// Message mode (UDT_DGRAM, spec §7.2) on the send side. A message-mode buffer holds whole
// messages: each WriteMessage takes the packets of one message or nothing, every message starts
// in a fresh slot, and each packet carries the message's number, its position in the message (FF)
// and the in-order flag (O) in data-header word 1 (spec §1.2). A message may expire: once its
// deadline has passed the sender gives it up (spec §7.2, §2.6); see Expired and GiveUp.
//
// Cost: 12 bytes per slot (word 1 and the deadline), allocated with the buffer, so 96 KiB for the
// default 8192 packets; a stream buffer has none of it.

// ErrMessageTooLarge: the message needs more packets than the buffer holds (UDT error 5012).
var ErrMessageTooLarge = errors.New("buffer: message larger than the send buffer")

// Never is the deadline of a message without a time to live.
const Never = math.MaxInt64

// givenUp marks the slots of a message GiveUp abandoned (a deadline before any time); stub marks
// its last slot, which never expires (it is sent as a stub).
const (
	givenUp = math.MinInt64
	stub    = math.MinInt64 + 1
)

// FF positions in data-header word 1 (spec §1.2), as word-1 bits.
const (
	ffShift  = 30
	ffMiddle = 0b00
	ffLast   = 0b01
	ffFirst  = 0b10
	ffSolo   = 0b11
	inOrder  = 1 << 29
)

// Word1 assembles data-header word 1 (spec §1.2): position ff (2 bits), the in-order flag and the
// 29-bit message number.
func Word1(ff uint32, order bool, msg seqno.Msg) uint32 {
	w := ff<<ffShift | uint32(msg&seqno.MaxMsg)
	if order {
		w |= inOrder
	}
	return w
}

// Position returns the FF field of data-header word 1 w: 0b10 first, 0b00 middle, 0b01 last, 0b11
// the only packet of its message (spec §1.2).
func Position(w uint32) uint32 { return w >> ffShift }

// InOrder reports the O bit of data-header word 1 w.
func InOrder(w uint32) bool { return w&inOrder != 0 }

// sendMsgs is the per-slot message state of a message-mode SendBuffer.
type sendMsgs struct {
	word1  []uint32 // data-header word 1 of each slot's packet
	expire []int64  // each slot's message deadline on the caller's clock; Never if none
	given  int      // messages given up (GiveUp)
}

// NewMessageSendBuffer returns a message-mode send buffer (see NewSendBuffer for the sizes).
func NewMessageSendBuffer(capacity, payload int, isn seqno.Seq) *SendBuffer {
	b := NewSendBuffer(capacity, payload, isn)
	b.msg = &sendMsgs{word1: make([]uint32, b.n), expire: make([]int64, b.n)}
	return b
}

// Messages reports whether b is a message-mode buffer.
func (b *SendBuffer) Messages() bool { return b.msg != nil }

// MessagePackets returns the number of packets a message of size bytes takes (at least 1).
// Packets are cut at PacketSize (sized.go).
func (b *SendBuffer) MessagePackets(size int) int { return max(1, (size+b.fill-1)/b.fill) }

// WriteMessage queues p (not empty) as one message whose packets carry the in-order flag order and
// which expires at deadline (on the caller's clock; Never for none). It reports false, taking
// nothing, when the free slots cannot hold the whole message (wait for an ACK), and returns
// ErrMessageTooLarge when the whole buffer could not. It never retains p. The buffer must be in
// message mode.
func (b *SendBuffer) WriteMessage(p []byte, deadline int64, order bool) (bool, error) {
	k := b.MessagePackets(len(p))
	if k > b.n {
		return false, ErrMessageTooLarge
	}
	if len(p) == 0 || b.n-b.used-b.kept < k {
		return false, nil
	}
	start := b.used
	for rest := p; len(rest) > 0; {
		i := b.slot(b.used)
		n, slots := b.st.putRun(i, min(b.n-b.used-b.kept, b.n-i), b.fill, rest)
		b.used += slots
		rest = rest[n:]
	}
	b.bytes += len(p)
	no := b.nextMsg
	b.nextMsg = no.Next()
	for j := range k {
		ff := uint32(ffMiddle)
		switch {
		case k == 1:
			ff = ffSolo
		case j == 0:
			ff = ffFirst
		case j == k-1:
			ff = ffLast
		}
		i := b.slot(start + j)
		b.msg.word1[i] = Word1(ff, order, no)
		b.msg.expire[i] = deadline
	}
	return true, nil
}

// Word1 returns data-header word 1 of packet seq, which must be held (sent or not); in stream
// mode every packet is a solo message with O = 0 (spec §7.3).
func (b *SendBuffer) Word1(seq seqno.Seq, msg seqno.Msg) uint32 {
	if b.msg == nil {
		return Word1(ffSolo, false, msg)
	}
	return b.msg.word1[b.slot(seqno.Offset(b.ack, seq))]
}

// held reports whether seq names a slot in use (sent or not).
func (b *SendBuffer) held(seq seqno.Seq) (int, bool) {
	d := seqno.Offset(b.ack, seq)
	return d, d >= 0 && d < b.used
}

// Expired reports whether packet seq (held, sent or not) belongs to a message whose deadline is
// at or before now. Stream packets never expire.
func (b *SendBuffer) Expired(seq seqno.Seq, now int64) bool {
	d, ok := b.held(seq)
	if b.msg == nil || !ok {
		return false
	}
	e := b.msg.expire[b.slot(d)]
	return e <= now && e != stub
}

// NextExpired reports whether the next unsent packet belongs to a message whose deadline has
// passed at now.
func (b *SendBuffer) NextExpired(now int64) bool {
	if b.msg == nil || b.sent >= b.used {
		return false
	}
	e := b.msg.expire[b.slot(b.sent)]
	return e <= now && e != stub
}

// GiveUp abandons the message holding packet seq (held): its packets not yet sent, but the
// last, take their sequence numbers as if sent, so that none is transmitted and the numbers after
// them stay valid (the reference skips them the same way, spec §4.3); the last packet stays to be
// sent, or retransmitted when lost, as a 1-byte stub (see Stub), so that the receiver learns that
// the numbers up to it were used and can trust the drop request's range. It returns the message's
// number and its first and last sequence numbers still held (those already acknowledged are
// gone). ok is false for a stream buffer or a sequence number not held.
func (b *SendBuffer) GiveUp(seq seqno.Seq) (msg seqno.Msg, first, last seqno.Seq, ok bool) {
	d, held := b.held(seq)
	if b.msg == nil || !held {
		return 0, 0, 0, false
	}
	w := b.msg.word1[b.slot(d)]
	no := seqno.MsgFromWire(w)
	lo, hi := d, d
	for lo > 0 && !isStart(w) {
		pw := b.msg.word1[b.slot(lo-1)]
		if seqno.MsgFromWire(pw) != no || isEnd(pw) {
			break
		}
		lo, w = lo-1, pw
	}
	w = b.msg.word1[b.slot(d)]
	for hi < b.used-1 && !isEnd(w) {
		nw := b.msg.word1[b.slot(hi+1)]
		if seqno.MsgFromWire(nw) != no || isStart(nw) {
			break
		}
		hi, w = hi+1, nw
	}
	if hi > b.sent {
		b.sent = hi
	}
	if b.msg.expire[b.slot(hi)] != stub {
		b.msg.given++
		for k := lo; k < hi; k++ {
			b.msg.expire[b.slot(k)] = givenUp
		}
		b.msg.expire[b.slot(hi)] = stub
	}
	return no, b.ack.Add(lo), b.ack.Add(hi), true
}

// Stub reports whether packet seq is the last packet of a message GiveUp abandoned: it is sent
// with a 1-byte payload (no receiver delivers it).
func (b *SendBuffer) Stub(seq seqno.Seq) bool {
	d, ok := b.held(seq)
	return b.msg != nil && ok && b.msg.expire[b.slot(d)] == stub
}

// GivenUp returns the number of messages GiveUp abandoned (each counted once).
func (b *SendBuffer) GivenUp() int {
	if b.msg == nil {
		return 0
	}
	return b.msg.given
}

func isStart(w uint32) bool { return Position(w)&ffFirst != 0 } // first or solo
func isEnd(w uint32) bool   { return Position(w)&ffLast != 0 }  // last or solo
