package stream

import (
	"errors"
	"io"
	"time"

	"github.com/udtgo/udt/internal/buffer"
	"github.com/udtgo/udt/internal/losslist"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// Message mode (UDT_DGRAM, socket type 2; spec §7.2, §2.6), enabled by Config.Messages.
//
// Sender: WriteMessage queues one whole message or nothing; its packets carry FF (first, middle,
// last, solo), the O flag and the message's number (spec §1.2). A message with a time to live is
// given up once it has passed: its packets are never sent again and the receiver is told with a
// message drop request (control type 7) naming the message's number and sequence numbers. UDT
// 4.11 checks the TTL only when a packet is about to be retransmitted (spec §4.3), so a message
// stuck behind a full window still goes out long after its TTL; here the check is made before
// every transmission, the first included, so a stale message is not sent. Its unsent packets take
// their sequence numbers without leaving (the reference's skip does the same, spec §4.3), except
// the last, which goes as a 1-byte stub no receiver delivers (FF = 00), so that the receiver sees
// the numbers were used. The request names only numbers already used, is repeated whenever the
// receiver reports one of the message's packets missing again or the retransmission timer
// re-queues it, and carries the true last sequence number with the Inclusive flag (package
// packet), where the reference sends one past it (spec §2.6).
//
// Receiver: ReadMessage returns exactly one whole message (package buffer: in order, or earlier
// when O = 0), or says how large the next one is when the caller's buffer is too small (the
// message stays queued; UDT 4.11 truncates it and drops the rest). A drop request gives up the
// named packets: held ones are freed, missing ones leave the loss list and count as received for
// the ACK number, and the largest received sequence number moves past them (spec §2.6 step 3) —
// but numbers beyond the largest received one only once a packet at or past the request's end
// arrives (a forged request naming the future would otherwise acknowledge what was never sent).
// Limitation: UDT 4.11 never sends the packets it skips, so a message it gives up at the very end
// of what it sends is acknowledged here only when more data follows.
//
// A caller that must not copy a large message in one call (conn, which copies at most 256 KiB
// per hold of its lock) writes it in parts (BeginMessage, then FillMessage) and reads it in parts
// (PinMessage, then ReadPinned); WriteMessage and ReadMessage are the same in one call.

// ErrMessageTooLarge: the message needs more packets than the send buffer holds or than the
// peer's flow window from the handshake (its receive buffer could never hold it whole) (UDT error
// 5012).
var ErrMessageTooLarge = errors.New("udt: message too large")

// errStreamMode is returned by the message calls of a stream endpoint.
var errStreamMode = errors.New("udt: message call on a stream connection")

// MessageStats counts message-mode events (zero for a stream connection).
type MessageStats struct {
	Written     uint64 // messages accepted by WriteMessage
	Read        uint64 // messages returned by ReadMessage
	Expired     uint64 // messages given up by this sender after their TTL
	DropReqSent uint64 // message drop requests sent (repeats included)
	DropReqRecv uint64 // message drop requests received and applied
	Discarded   uint64 // received packets discarded unread: their message was given up or broken
}

// MaxMessage returns the largest message WriteMessage accepts now, in bytes: as many packets as
// the send buffer holds or the peer's flow window from the handshake allows (its receive buffer
// must hold the whole message), whichever is fewer, of the payload packets are cut at now
// (PacketSize − 16). In message mode path MTU discovery never probes (a message's packets keep
// the boundaries they were cut with, so none can be lengthened into a probe): the size stays at
// the base (1184 bytes of payload by default) unless an ICMP report lowers it, and so may this
// limit. A message's packets keep the size they were cut at, so a message accepted stays
// deliverable.
func (e *Endpoint) MaxMessage() int {
	return min(e.snd.Cap(), e.cfg.PeerFlowWindow) * e.snd.PacketSize()
}

// WriteMessage queues p (not empty) as one message whose packets carry the in-order flag inOrder
// and which the sender gives up ttl after now (ttl ≤ 0: never). It reports false when the send
// buffer cannot hold the whole message yet (wait for CanWrite and retry), a message is being
// filled (BeginMessage), or the connection no longer sends or was closed, and returns
// ErrMessageTooLarge for a message larger than MaxMessage. It is BeginMessage and FillMessage in
// one call.
func (e *Endpoint) WriteMessage(now time.Time, p []byte, ttl time.Duration, inOrder bool) (bool, error) {
	ok, err := e.BeginMessage(now, len(p), ttl, inOrder)
	if ok {
		e.FillMessage(p)
	}
	return ok, err
}

// BeginMessage is WriteMessage for a message of size bytes that FillMessage then copies in, in
// parts, so that the caller need not copy a large message in one call (conn copies at most 256
// KiB per hold of its lock). The message's number, sequence numbers, flags and time to live (from
// now) are fixed here (buffer.SendBuffer.BeginMessage); nothing of it is sent, acknowledged, given
// up after its TTL or named by a drop request before its last byte is in: a TTL that passes
// meanwhile gives the whole message up at the first release after it (spec §2.6, §7.2). Close, a
// break or the peer's Shutdown before then drop it whole (FillMessage, AbortMessage).
func (e *Endpoint) BeginMessage(now time.Time, size int, ttl time.Duration, inOrder bool) (bool, error) {
	if !e.cfg.Messages {
		return false, errStreamMode
	}
	if size > e.MaxMessage() {
		return false, ErrMessageTooLarge
	}
	if !e.active() || e.cl.closing || size <= 0 || e.snd.Filling() > 0 {
		return false, nil // another message is being filled: its state stays as it is
	}
	deadline := int64(buffer.Never)
	if ttl > 0 {
		deadline = int64(e.since(now) + ttl)
	}
	ok, err := e.snd.BeginMessage(size, deadline, inOrder)
	e.msgs.want, e.msgs.filling = 0, 0
	if ok {
		e.msgs.filling = size
	} else if err == nil {
		// CanWrite waits for that room, counted as SendBuffer.Free counts it: free slots at the
		// size packets are cut at now.
		e.msgs.want = e.snd.MessagePackets(size) * e.snd.PacketSize()
	}
	return ok, err
}

// FillMessage copies p, the next bytes of the message BeginMessage reserved, and returns how many
// it took (all of p, up to the message's end) and whether the message is now complete: it is then
// queued, as WriteMessage queues one (conn pulls the Effects: its first packet may be due). If
// the connection stopped sending or was closed meanwhile, it drops the message whole and returns
// (0, false); without a message being filled it also returns (0, false).
func (e *Endpoint) FillMessage(p []byte) (int, bool) {
	if e.snd.Filling() == 0 {
		e.msgs.filling = 0
		return 0, false
	}
	if !e.active() || e.cl.closing {
		e.AbortMessage()
		return 0, false
	}
	n := e.snd.FillMessage(p)
	if e.snd.Filling() > 0 {
		return n, false
	}
	e.stats.BytesWritten += uint64(e.msgs.filling)
	e.stats.Messages.Written++
	e.msgs.filling = 0
	return n, true
}

// AbortMessage drops the message being filled (BeginMessage), whole: nothing of it was sent or
// will be, and its slots are free again.
func (e *Endpoint) AbortMessage() {
	e.snd.AbortMessage()
	e.msgs.filling = 0
}

// NextMessage returns the size of the message ReadMessage would return now, 0 if none (or one
// is pinned by PinMessage).
func (e *Endpoint) NextMessage() int { return e.rcv.Readable() }

// ReadMessage copies the next whole message into p and returns its length n. When p is shorter
// than that message, it returns n = 0 and the message's size, and the message stays queued.
// Otherwise as Read: (0, 0, nil) when no message is ready (or one is being read in parts,
// PinMessage), io.EOF after the peer's Shutdown once every message has been read, Err() once
// broken.
func (e *Endpoint) ReadMessage(p []byte) (n, size int, err error) {
	if !e.cfg.Messages {
		return 0, 0, errStreamMode
	}
	if e.rcv.Pinned() > 0 {
		return 0, 0, nil
	}
	n, size = e.rcv.ReadMessage(p)
	if n > 0 {
		e.messageRead(n)
		return n, size, nil
	}
	if size > 0 {
		return 0, size, nil
	}
	if e.err != nil {
		return 0, 0, e.err
	}
	if e.peerClosed {
		return 0, 0, io.EOF
	}
	return 0, 0, nil
}

// PinMessage begins reading the next message in parts (ReadPinned), for a caller that must not
// copy a large message in one call (conn copies at most 256 KiB per hold of its lock), and
// returns its size; 0 when no message is ready or one is pinned already. Until the read ends, the
// message stays whole and in place whatever arrives (a drop request for it included:
// buffer.RecvBuffer.PinMessage), and ReadMessage returns nothing. It works on a broken or closed
// connection too, as ReadMessage does.
func (e *Endpoint) PinMessage() int {
	if !e.cfg.Messages {
		return 0
	}
	return e.rcv.PinMessage()
}

// ReadPinned copies the next bytes of the pinned message into p and returns how many, and
// whether that was its end: the message is then read, as by ReadMessage (a window update may be
// queued).
func (e *Endpoint) ReadPinned(p []byte) (int, bool) {
	size := e.rcv.Pinned()
	n, done := e.rcv.ReadPinned(p)
	if done {
		e.messageRead(size)
	}
	return n, done
}

// UnpinMessage ends a read in parts before its end: the message stays queued, whole.
func (e *Endpoint) UnpinMessage() { e.rcv.UnpinMessage() }

// messageRead counts a message of size bytes read and sends a window update if it is due.
func (e *Endpoint) messageRead(size int) {
	e.stats.BytesRead += uint64(size)
	e.stats.Messages.Read++
	e.maybeWindowUpdate()
}

// Copied returns the bytes the application's calls (Write, WriteMessage, FillMessage, Read,
// ReadMessage, ReadPinned) copied into the send buffer and out of the receive buffer since the
// start: conn's tests count the bytes copied per hold of its lock with it.
func (e *Endpoint) Copied() uint64 { return e.snd.Copied() + e.rcv.Copied() }

// insert puts one data packet into the receive buffer (b is the whole datagram).
func (e *Endpoint) insert(seq seqno.Seq, b, payload []byte) error {
	if e.cfg.Messages {
		e.msgs.dropped = e.msgs.dropped[:0]
		err := e.rcv.InsertMessage(seq, be.Uint32(b[4:]), payload)
		if err == nil && len(e.msgs.pending) > 0 {
			// The packet shows the sender used the numbers up to it: drop requests waiting for
			// that apply now. The largest received number and the loss list are left to onData,
			// which first compares the packet with the number before it (in order, a gap whose
			// given-up parts are not losses, or a filler whose loss entry it takes).
			e.applyPending(seqno.Max(e.lrsn, seq))
		}
		return err
	}
	return e.rcv.Insert(seq, payload)
}

// syncLRSN keeps the receiver's numbers consistent when given-up slots moved the ACK number: the
// largest received number is at least ACK − 1 and the loss list holds nothing before the ACK
// number (a gap reported before a drop request covered it). It runs after a drop request and
// after onData has handled a packet, never between a packet's insert and onData's comparison
// (that would make an in-order packet look like a filler, and take a filler's loss entry before
// onFill reads it).
func (e *Endpoint) syncLRSN() {
	ack := e.rcv.AckSeq()
	if top := ack.Dec(); seqno.Offset(e.lrsn, top) > 0 {
		e.lrsn = top
	}
	if first, ok := e.rloss.First(); ok && first.Less(ack) {
		e.rloss.RemoveBefore(ack)
	}
}

// onMsgDrop applies a message drop request (spec §2.6). It returns false if it was dropped.
func (e *Endpoint) onMsgDrop(b []byte) bool {
	var m packet.MsgDropRequest
	if err := m.Decode(b); err != nil {
		e.stats.Drops.Malformed++
		return false
	}
	if !e.cfg.Messages {
		e.stats.Drops.IgnoredCtrl++ // a stream connection has no messages to drop (spec §7.3)
		return true
	}
	first, last := seqno.SeqFromWire(m.First), seqno.SeqFromWire(m.Last)
	if !m.Inclusive && last != first {
		last = last.Dec() // the reference's Last is one past the message's end (spec §2.6)
	}
	if seqno.Len(first, last) > e.rcv.Cap() {
		e.stats.Drops.OutOfWindow++ // no message spans more than the window
		return false
	}
	no := seqno.Msg(m.MsgNo)
	if seqno.Offset(e.lrsn, last) > 0 {
		// Numbers beyond the largest received one are given up only once a packet shows that the
		// sender used them (our sender sends a given-up message's last packet as a stub): a forged
		// request naming the future would otherwise move the ACK number past everything sent, and
		// the sender, rightly ignoring such ACKs, would never drain.
		e.msgs.pend(pendingDrop{no: no, first: first, last: last})
		if seqno.Offset(first, e.lrsn) < 0 {
			e.stats.Messages.DropReqRecv++
			return true
		}
		last = e.lrsn
	}
	e.applyDrop(no, first, last)
	e.syncLRSN()
	e.stats.Messages.DropReqRecv++
	return true
}

// applyDrop gives up first..last of message no (at or below the largest received number, or the
// packet being inserted) and returns the last number it gave up.
func (e *Endpoint) applyDrop(no seqno.Msg, first, last seqno.Seq) seqno.Seq {
	ack := e.rcv.AckSeq()
	_, last = e.rcv.Drop(first, last, no) // up to another message's packet, if one is in the range
	e.rloss.RemoveRange(first, last)
	if e.rcv.AckSeq() != ack {
		e.ackForce = true // the sender can free the message at once
	}
	return last
}

// pendingDrop is a drop request whose range reaches beyond the largest received number.
type pendingDrop struct {
	no          seqno.Msg
	first, last seqno.Seq
}

// msgState is the receiver's message-mode state kept by the Endpoint.
type msgState struct {
	pending []pendingDrop    // at most maxPendingDrops, oldest first
	dropped []losslist.Range // the ranges applyPending gave up at the packet being inserted (onGap)
	want    int              // bytes of send-buffer room the last refused message needs (CanWrite)
	filling int              // bytes of the message being filled (BeginMessage), 0 if none
	// unsent counts the messages given up before any of their packets left: the receiver never
	// saw their numbers, so they need no drop request (giveUp).
	unsent uint64
}

// maxPendingDrops bounds the drop requests waiting for their last packet: a few messages given
// up within one RTT; beyond that the oldest is forgotten (the sender repeats its request when
// the receiver reports the numbers missing).
const maxPendingDrops = 16

func (m *msgState) pend(p pendingDrop) {
	for i, q := range m.pending {
		if q.no == p.no {
			m.pending[i] = p
			return
		}
	}
	if len(m.pending) == maxPendingDrops {
		m.pending = append(m.pending[:0], m.pending[1:]...)
	}
	m.pending = append(m.pending, p)
}

// applyPending applies the pending drop requests whose last number is at or below top, the
// largest number now known to be used by the sender.
func (e *Endpoint) applyPending(top seqno.Seq) {
	p := e.msgs.pending
	k := 0
	for _, d := range p {
		if seqno.Offset(top, d.last) <= 0 {
			if end := e.applyDrop(d.no, d.first, d.last); seqno.Offset(d.first, end) >= 0 {
				e.msgs.dropped = append(e.msgs.dropped, losslist.Range{First: d.first, Last: end})
			}
			continue
		}
		if seqno.Offset(e.rcv.ReadSeq(), d.last) < 0 {
			continue // the read point passed it: nothing left to drop
		}
		p[k] = d
		k++
	}
	e.msgs.pending = p[:k]
}

// expireMessages gives up the messages whose TTL has passed at t before Release sends: the one
// at the front of the loss list (about to be retransmitted) and the one holding the next new
// packet (about to be sent for the first time), repeatedly. Given-up packets that were never sent
// take window room as if sent.
func (e *Endpoint) expireMessages(t time.Duration) {
	if !e.cfg.Messages {
		return
	}
	now := int64(t)
	for e.active() {
		if s, ok := e.sloss.Front(); ok {
			if !e.snd.Expired(s, now) {
				return
			}
			e.giveUp(t, s)
			continue
		}
		if !e.snd.NextExpired(now) || !e.sendable() { // the loss list is empty: room for new data
			return
		}
		e.giveUp(t, e.snd.NextSeq())
	}
}

// giveUp abandons the message holding packet s and sends the drop request for it. The request
// names only numbers already used (sent, or skipped by GiveUp): a receiver that trusts it, as UDT
// 4.11 does (it moves its largest received number to Last), would otherwise acknowledge numbers
// beyond the last one sent, ACKs this sender ignores. The stub that carries the last number
// follows as an ordinary packet, which receivers discard.
func (e *Endpoint) giveUp(t time.Duration, s seqno.Seq) {
	idle := e.inFlight() == 0
	next := e.snd.NextSeq()
	no, first, last, ok := e.snd.GiveUp(s)
	if !ok {
		return
	}
	if next != e.snd.NextSeq() {
		for q := next; q != e.snd.NextSeq(); q = q.Inc() {
			e.dlv.skip(q)
		}
		// Data given up unsent is data the application no longer offers: until what is in flight
		// now is delivered, rate samples may understate the path (application-limited,
		// draft-cheng-iccrg-delivery-rate-estimation §3.4). Without this a delivery-based
		// controller spirals down under heavy loss: fewer bytes delivered, a lower rate, more
		// messages expiring before they leave, still fewer bytes delivered.
		e.dlv.markAppLimited()
	}
	if idle && e.inFlight() > 0 {
		e.rtoBase, e.rtoCount = t, 0 // as packOne: the timer starts with the first packet in flight
	}
	if first != last {
		e.sloss.RemoveRange(first, last.Dec()) // the last packet still goes, as a stub
		e.forgetDeferred(first, last.Dec())    // nor is any of them resent after its reordering wait
	}
	if used := e.sndCurrSeq(); seqno.Offset(used, last) > 0 {
		last = used
	}
	if seqno.Offset(first, last) >= 0 {
		e.sendMsgDrop(t, no, first, last)
	} else {
		e.msgs.unsent++
	}
}

// skip records packet seq, which the sender skipped (GiveUp: never sent), as delivered already,
// so that delivery accounting keeps its order and the packet is neither in flight, nor lost, nor
// counted in any rate sample. It is no evidence for imply either: it has no send time.
func (d *deliveryTracker) skip(seq seqno.Seq) {
	if k := seqno.Offset(d.base, seq); k == d.n && d.n < d.limit {
		d.grow()
		d.n++
		*d.at(k) = pktRecord{flags: pktDelivered | pktSkipped, ord: d.sentOrd}
	}
}

// messageHeader writes data-header word 1 of packet seq (FF, O and the message's number, spec
// §1.2) into b and returns the packet's length l. The last packet of a message given up goes as
// a 1-byte stub marked as a middle packet (FF = 00), which no receiver (UDT 4.11's included)
// delivers: a middle packet never completes a message by itself.
func (e *Endpoint) messageHeader(b []byte, seq seqno.Seq, msg seqno.Msg, l int) int {
	w := e.snd.Word1(seq, msg)
	if e.snd.Stub(seq) {
		be.PutUint32(b[4:], w&^(3<<30))
		return headerSize + 1
	}
	be.PutUint32(b[4:], w)
	return l
}

// sendMsgDrop sends a message drop request for message no, packets first..last.
func (e *Endpoint) sendMsgDrop(t time.Duration, no seqno.Msg, first, last seqno.Seq) {
	p := packet.MsgDropRequest{ControlHeader: e.ctrlHeader(t), MsgNo: uint32(no), Inclusive: true,
		First: uint32(first), Last: uint32(last)}
	b, err := p.AppendBinary(e.ctrl[:0])
	e.emit(t, b, err)
	e.stats.Messages.DropReqSent++
}

// messageStats fills the counters kept by the buffers.
func (e *Endpoint) messageStats(s *Stats) {
	s.Messages.Discarded = uint64(e.rcv.Discarded())
	s.Messages.Expired = uint64(e.snd.GivenUp())
}
