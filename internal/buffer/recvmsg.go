package buffer

import (
	"math/bits"
	"slices"
	"sort"

	"github.com/udtgo/udt/internal/seqno"
)

// Message mode (UDT_DGRAM, spec §7.2) on the receive side. Each slot also keeps its packet's
// data-header word 1 (message number, FF position, O flag), and ReadMessage returns exactly one
// whole message:
//
//   - in order: the message starting at the read point, once all its packets are in the
//     acknowledged run [read point, ACK number); an O = 1 message is delivered only this way;
//   - out of order (O = 0): a message beyond the first missing packet whose packets are all
//     present is delivered at once, before earlier holes are filled, as UDT 4.11's recvmsg does;
//     its slots stay taken (their memory released) until the read point passes them.
//
// A message some of whose packets were given up (Drop, the sender's message drop request, spec
// §2.6) or whose packets are inconsistent (a middle packet without a first one, a number that
// changes inside a message) is never delivered: when it reaches the read point its packets are
// discarded. Dropped slots count as received for the ACK number, so the acknowledged run moves
// past them. Cost: 4 bytes per slot (word 1) and a bit per slot, allocated with the buffer.
//
// Bounds against hostile input: every operation touches at most the window's slots; the
// assembly table for out-of-order messages holds at most one entry per stored packet and is
// swept of entries behind the ACK number whenever it doubles.
type recvMsgs struct {
	b     *RecvBuffer
	word1 []uint32 // data-header word 1 of each slot's packet
	gone  []uint64 // bitmap: slot given up (dropped) or already delivered out of order

	// The head message, starting at the read point: scan slots of it have been checked
	// (present, same number, consistent positions) and hold scanBytes; ready > 0 once it is
	// complete (ready packets, readyBytes bytes).
	scan, scanBytes   int
	ready, readyBytes int

	track   map[seqno.Msg]msgTrack // O = 0 messages being assembled beyond the ACK number
	sweepAt int
	ooo     []oooMsg // complete O = 0 messages not yet read, by first sequence number
	pin     msgPin   // a message being read in parts (recvpin.go)

	discarded int // packets discarded unread
}

// msgTrack counts the packets of one out-of-order message seen beyond the ACK number.
type msgTrack struct {
	first, last seqno.Seq // valid when flags has hasFirst / hasLast
	seen        seqno.Seq // the latest packet counted (for sweeping)
	count       int32
	flags       uint8
}

const (
	hasFirst = 1 << iota
	hasLast
)

// oooMsg is a complete out-of-order message.
type oooMsg struct {
	first seqno.Seq
	no    seqno.Msg
	n     int // packets
	bytes int
}

// NewMessageRecvBuffer returns a message-mode receive buffer (see NewRecvBuffer for the sizes).
func NewMessageRecvBuffer(capacity, payload int, isn seqno.Seq) *RecvBuffer {
	b := NewRecvBuffer(capacity, payload, isn)
	b.msg = &recvMsgs{b: b, word1: make([]uint32, b.n), gone: make([]uint64, len(b.present)),
		track: make(map[seqno.Msg]msgTrack), sweepAt: 64}
	return b
}

func (m *recvMsgs) isGone(i int) bool { return m.gone[i>>6]&(1<<(i&63)) != 0 }
func (m *recvMsgs) setGone(i int)     { m.gone[i>>6] |= 1 << (i & 63) }

func (m *recvMsgs) reset() {
	clear(m.gone)
	clear(m.track)
	m.ooo = m.ooo[:0]
	m.scan, m.scanBytes, m.ready, m.readyBytes = 0, 0, 0, 0
	m.pin = msgPin{}
}

// nextSize is the size of the message ReadMessage returns next, 0 if none (or one is pinned).
func (m *recvMsgs) nextSize() int {
	if m.pin.n > 0 {
		return 0
	}
	if m.ready > 0 {
		return m.readyBytes
	}
	if len(m.ooo) > 0 {
		return m.ooo[0].bytes
	}
	return 0
}

// InsertMessage is Insert for a message-mode buffer: w1 is the packet's data-header word 1.
// Errors as for Insert; a packet for a slot that was given up is a duplicate.
func (b *RecvBuffer) InsertMessage(seq seqno.Seq, w1 uint32, payload []byte) error {
	m := b.msg
	d, err := b.store(seq, payload)
	if err != nil {
		return err
	}
	m.word1[b.slot(d)] = w1
	if d == b.contig {
		m.advance()
		m.settle()
	} else if !InOrder(w1) {
		m.assemble(seq, w1)
	}
	return nil
}

// advance extends the acknowledged run over present (received or given-up) slots.
func (m *recvMsgs) advance() {
	b := m.b
	for b.contig < b.n {
		i := b.slot(b.contig)
		w := b.present[i>>6] >> (i & 63)
		if w&1 == 0 {
			return
		}
		b.contig += min(bits.TrailingZeros64(^w), b.n-i, b.n-b.contig)
	}
}

// settle brings the head message up to date: it discards given-up and inconsistent packets at the
// read point and finds out whether the message there is complete.
func (m *recvMsgs) settle() {
	b := m.b
	for m.ready == 0 && b.contig > 0 {
		if m.scan == 0 {
			i := b.head
			if m.pin.n > 0 && m.pin.first == b.seq {
				return // a pinned message stays where it is until its read ends (recvpin.go)
			}
			if m.isGone(i) {
				m.pop(1, false)
				continue
			}
			switch w := m.word1[i]; Position(w) {
			case ffSolo:
				m.ready, m.readyBytes = 1, b.st.length(i)
				return
			case ffFirst:
				m.scan, m.scanBytes = 1, b.st.length(i)
			default: // a middle or last packet without its first: part of a broken message
				m.pop(1, true)
				continue
			}
		}
		no := seqno.MsgFromWire(m.word1[b.head])
		for m.scan < b.contig {
			i := b.slot(m.scan)
			w := m.word1[i]
			if m.isGone(i) || seqno.MsgFromWire(w) != no || isStart(w) {
				m.pop(m.scan, true) // broken: a packet was given up, or the numbering is inconsistent
				break
			}
			m.scanBytes += b.st.length(i)
			m.scan++
			if Position(w) == ffLast {
				m.ready, m.readyBytes = m.scan, m.scanBytes
				return
			}
		}
		if m.scan > 0 {
			return // incomplete: its next packet is missing
		}
	}
}

// pop removes the k slots at the read point (all present), counting those not yet given up as
// discarded when discard is set.
func (m *recvMsgs) pop(k int, discard bool) {
	b := m.b
	for range k {
		i := b.head
		if m.isGone(i) {
			m.gone[i>>6] &^= 1 << (i & 63)
		} else {
			b.st.release(i)
			b.stored--
			if discard {
				m.discarded++
			}
		}
		b.present[i>>6] &^= 1 << (i & 63)
		b.contig--
		b.seq = b.seq.Inc()
		if b.head++; b.head == b.n {
			b.head = 0
		}
	}
	m.scan, m.scanBytes = 0, 0
}

// giveUp marks present slot i as given up and frees its memory.
func (m *recvMsgs) giveUp(i int) {
	m.b.st.release(i)
	m.b.stored--
	m.setGone(i)
}

// discard gives up present slot i, a received packet of a message given up unread.
func (m *recvMsgs) discard(i int) {
	m.giveUp(i)
	m.discarded++
}

// ReadMessage copies the next message (see the type's comment for the order) into p and returns
// its size in n. size is the message's size: 0 when no message is ready (or one is pinned,
// recvpin.go), and n is 0 with size > 0 when p is shorter than the message, which then stays
// queued. The buffer must be in message mode. It is PinMessage and ReadPinned in one call.
func (b *RecvBuffer) ReadMessage(p []byte) (n, size int) {
	m := b.msg
	if m.pin.n > 0 {
		return 0, 0
	}
	if size = m.next(); size == 0 || len(p) < size {
		return 0, size
	}
	m.pinNext()
	n, _ = b.ReadPinned(p)
	return n, size
}

// next returns the size of the next message, as nextSize, after taking off m.ooo any message no
// longer intact at its front (which cannot happen: drops remove their entries; a broken message
// is never delivered).
func (m *recvMsgs) next() int {
	for m.ready == 0 && len(m.ooo) > 0 && !m.intact(m.ooo[0]) {
		m.ooo = append(m.ooo[:0], m.ooo[1:]...)
	}
	return m.nextSize()
}

// intact reports whether o's packets are all still held, not given up, and form message o.no.
func (m *recvMsgs) intact(o oooMsg) bool {
	b := m.b
	d0 := seqno.Offset(b.seq, o.first)
	if d0 < 0 || d0+o.n > b.n {
		return false
	}
	for j := range o.n {
		i := b.slot(d0 + j)
		if !b.has(i) || m.isGone(i) || m.pinnedAt(d0+j) {
			return false
		}
		w := m.word1[i]
		if seqno.MsgFromWire(w) != o.no || InOrder(w) || isStart(w) != (j == 0) || isEnd(w) != (j == o.n-1) {
			return false
		}
	}
	return true
}

// assemble counts an out-of-order (O = 0) packet that landed beyond the ACK number and queues its
// message once all its packets are present.
func (m *recvMsgs) assemble(seq seqno.Seq, w uint32) {
	no := seqno.MsgFromWire(w)
	if Position(w) == ffSolo {
		m.complete(oooMsg{first: seq, no: no, n: 1})
		return
	}
	t := m.track[no]
	t.count++
	t.seen = seq
	switch Position(w) {
	case ffFirst:
		t.first, t.flags = seq, t.flags|hasFirst
	case ffLast:
		t.last, t.flags = seq, t.flags|hasLast
	}
	if t.flags == hasFirst|hasLast {
		if n := seqno.Offset(t.first, t.last) + 1; n == int(t.count) {
			delete(m.track, no)
			m.complete(oooMsg{first: t.first, no: no, n: n})
			return
		} else if n < int(t.count) || n > m.b.n {
			delete(m.track, no) // inconsistent numbering: deliverable in order only, if at all
			return
		}
	}
	m.track[no] = t
	if len(m.track) > m.sweepAt {
		m.sweep()
	}
}

// complete checks message o slot by slot and queues it for ReadMessage.
func (m *recvMsgs) complete(o oooMsg) {
	if !m.intact(o) {
		return
	}
	b := m.b
	d0 := seqno.Offset(b.seq, o.first)
	for j := range o.n {
		o.bytes += b.st.length(b.slot(d0 + j))
	}
	k := len(m.ooo)
	for k > 0 && seqno.Offset(m.ooo[k-1].first, o.first) < 0 {
		k--
	}
	m.ooo = append(m.ooo, oooMsg{})
	copy(m.ooo[k+1:], m.ooo[k:])
	m.ooo[k] = o
}

// sweep deletes assembly entries the ACK number has passed (their messages are read in order).
func (m *recvMsgs) sweep() {
	ack := m.b.AckSeq()
	for no, t := range m.track {
		if seqno.Offset(ack, t.seen) < 0 {
			delete(m.track, no)
		}
	}
	m.sweepAt = 2*len(m.track) + 64
}

// Drop gives up message no, whose packets the sender numbered first..last (inclusive; the
// message drop request, spec §2.6): its packets held are freed and never delivered, its missing
// ones count as received for the ACK number, and the message's packets just outside the range
// are given up too (the reference's request may start in the middle of a message). A message's
// packets have consecutive numbers, so a packet of another message in the range ends what the
// request can mean: the range is applied up to it, and it and everything after it are kept. The
// range is clipped to the window. Drop returns the number of slots given up and the last number
// the request was applied to (before first if none).
//
// A request costs O(1 + slots given up + range/64), whatever the peer sends: slots given up
// before are skipped 64 at a time, and a request that changes nothing leaves the head message's
// state alone (UDT 4.11's dropMsg scans its whole buffer for every request, so a peer repeating
// one made its receiver do O(window) work per 24-byte packet).
func (b *RecvBuffer) Drop(first, last seqno.Seq, no seqno.Msg) (marked int, end seqno.Seq) {
	m := b.msg
	lo, hi := max(seqno.Offset(b.seq, first), 0), min(seqno.Offset(b.seq, last), b.n-1)
	if seqno.Offset(first, last) < 0 || lo > hi {
		return 0, first.Dec()
	}
	minD, maxD := hi+1, -1 // the span of the slots given up
	touch := func(d int) {
		minD, maxD = min(minD, d), max(maxD, d)
		marked++
	}
	d := lo
	for ; d <= hi; d++ {
		i := b.slot(d)
		if i&63 == 0 && d+63 <= hi && i+63 < b.n {
			if w := i >> 6; b.present[w]&m.gone[w] == ^uint64(0) {
				d += 63 // 64 slots given up before
				continue
			}
		}
		if m.isGone(i) {
			continue
		}
		if m.pinnedAt(d) {
			break // being read (recvpin.go): delivered, as another message's packet would be
		}
		if b.has(i) {
			if seqno.MsgFromWire(m.word1[i]) != no {
				break // another message's packet: not part of this one
			}
			m.discard(i)
		} else {
			b.present[i>>6] |= 1 << (i & 63)
			m.setGone(i)
			m.word1[i] = Word1(ffMiddle, false, no)
		}
		touch(d)
	}
	end = b.seq.Add(d - 1)
	same := func(d int) bool {
		i := b.slot(d)
		return b.has(i) && !m.isGone(i) && seqno.MsgFromWire(m.word1[i]) == no && !m.pinnedAt(d)
	}
	for k := lo - 1; k >= 0 && same(k); k-- {
		m.discard(b.slot(k))
		touch(k)
	}
	for k := d; k < b.n && same(k); k++ {
		m.discard(b.slot(k))
		touch(k)
	}
	delete(m.track, no)
	if marked == 0 {
		return 0, end
	}
	// A complete out-of-order message of no lies within the span: all its packets were given up.
	k := sort.Search(len(m.ooo), func(j int) bool { return seqno.Offset(b.seq, m.ooo[j].first) >= minD })
	for k < len(m.ooo) && seqno.Offset(b.seq, m.ooo[k].first) <= maxD {
		if m.ooo[k].no == no {
			m.ooo = slices.Delete(m.ooo, k, k+1)
		} else {
			k++
		}
	}
	if minD < max(m.scan, m.ready) { // the head message lost a packet it had counted
		m.scan, m.scanBytes, m.ready, m.readyBytes = 0, 0, 0, 0
	}
	m.advance()
	m.settle()
	return marked, end
}

// Discarded returns the number of received packets discarded unread because their message was
// given up (a drop request) or broken (message mode).
func (b *RecvBuffer) Discarded() int {
	if b.msg == nil {
		return 0
	}
	return b.msg.discarded
}

// Messages reports whether b is a message-mode buffer.
func (b *RecvBuffer) Messages() bool { return b.msg != nil }
