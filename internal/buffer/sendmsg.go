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
	part   msgFill  // a message being filled (BeginMessage)
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
// nothing, when the free slots cannot hold the whole message (wait for an ACK) or a message is
// being filled (BeginMessage), and returns ErrMessageTooLarge when the whole buffer could not. It
// never retains p. The buffer must be in message mode. It is BeginMessage and FillMessage in one
// call.
func (b *SendBuffer) WriteMessage(p []byte, deadline int64, order bool) (bool, error) {
	ok, err := b.BeginMessage(len(p), deadline, order)
	if ok {
		b.FillMessage(p)
	}
	return ok, err
}

// msgFill is a message being filled in parts (BeginMessage, FillMessage). Its k slots follow the
// ones in use, [used, used+k) in ring order (an Ack moves head and used together, so they stay
// where they are), out of Free but outside everything else: Next, Unsent, Ack, GiveUp, Expired
// and Word1 see only [0, used), so no packet of the message is sent, acknowledged, given up or
// named by a drop request before its last byte is in.
type msgFill struct {
	k        int   // slots reserved; 0: no message is being filled
	size     int   // payload bytes per packet: PacketSize at BeginMessage (a later change does not cut it again)
	total    int   // the message's bytes
	done     int   // bytes filled so far, in order
	deadline int64 // as WriteMessage's
	order    bool
}

// BeginMessage reserves the slots of a message of size bytes (> 0) whose bytes FillMessage then
// copies in, in parts, so that a caller holding a lock others wait on need not copy a large
// message in one hold. The message takes its number, its packets' FF positions, the in-order flag
// order, the expiry deadline (as WriteMessage's: the TTL runs from here) and its sequence numbers,
// those right after the packets queued now; it is queued, as WriteMessage queues one, when
// FillMessage has copied its last byte, or dropped whole by AbortMessage. Results as
// WriteMessage's: false when the free slots cannot hold the message yet, a message is being
// filled already or a re-cut is in progress (StartRecut; a message-mode buffer never starts one).
func (b *SendBuffer) BeginMessage(size int, deadline int64, order bool) (bool, error) {
	k := b.MessagePackets(size)
	if k > b.n {
		return false, ErrMessageTooLarge
	}
	f := &b.msg.part
	if size <= 0 || f.k > 0 || b.rc.active || b.n-b.used-b.kept < k {
		return false, nil
	}
	*f = msgFill{k: k, size: b.fill, total: size, deadline: deadline, order: order}
	return true, nil
}

// FillMessage copies p, the next bytes of the message BeginMessage reserved, into its slots and
// returns how many it took: all of p, up to the message's end. Once the last byte is in, the
// message is queued (Unsent, Next, Buffered count it) and Filling reports 0. Without a message
// being filled it takes nothing. It never retains p.
func (b *SendBuffer) FillMessage(p []byte) int {
	f := &b.msg.part
	if f.k == 0 {
		return 0
	}
	p = p[:min(len(p), f.total-f.done)]
	taken := 0
	if r := f.done % f.size; r != 0 && len(p) > 0 { // top up the packet the last part ended in
		i := b.slot(b.used + f.done/f.size)
		c := copy(b.st.bytes(i)[r:f.size], p)
		b.st.setLength(i, r+c)
		p, taken, f.done = p[c:], c, f.done+c
	}
	for len(p) > 0 {
		j := f.done / f.size
		i := b.slot(b.used + j)
		n, slots := b.st.putRun(i, min(f.k-j, b.n-i), f.size, p)
		for s := j; s < j+slots; s++ {
			i := b.slot(b.used + s)
			b.msg.word1[i] = Word1(position(s, f.k), f.order, b.nextMsg)
			b.msg.expire[i] = f.deadline
		}
		p, taken, f.done = p[n:], taken+n, f.done+n
	}
	b.copied += uint64(taken)
	if f.done == f.total {
		b.used += f.k
		b.bytes += f.total
		b.nextMsg = b.nextMsg.Next()
		*f = msgFill{}
	}
	return taken
}

// AbortMessage drops the message being filled, whole: the slots it filled are freed, nothing of
// it was or will be sent, and its number goes to the next message. It does nothing when no
// message is being filled.
func (b *SendBuffer) AbortMessage() {
	if b.msg == nil {
		return
	}
	f := &b.msg.part
	if f.k == 0 {
		return
	}
	for j := range (f.done + f.size - 1) / f.size { // the slots holding any of its bytes
		b.st.release(b.slot(b.used + j))
	}
	*f = msgFill{}
}

// Filling returns the bytes of the message being filled (BeginMessage) not yet copied in; 0 when
// none is being filled.
func (b *SendBuffer) Filling() int {
	if b.msg == nil {
		return 0
	}
	return b.msg.part.total - b.msg.part.done
}

// reserved returns the slots held by a message being filled.
func (b *SendBuffer) reserved() int {
	if b.msg == nil {
		return 0
	}
	return b.msg.part.k
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

// position returns the FF field of packet j of a message of k packets (spec §1.2).
func position(j, k int) uint32 {
	switch {
	case k == 1:
		return ffSolo
	case j == 0:
		return ffFirst
	case j == k-1:
		return ffLast
	}
	return ffMiddle
}

func isStart(w uint32) bool { return Position(w)&ffFirst != 0 } // first or solo
func isEnd(w uint32) bool   { return Position(w)&ffLast != 0 }  // last or solo
