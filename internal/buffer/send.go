package buffer

import (
	"github.com/udtgo/udt/internal/seqno"
)

// SendBuffer holds the bytes an application wrote until the peer
// acknowledges them: first unsent, then sent and awaiting an ACK (and perhaps
// retransmission).
//
// Capacity is a whole number of packet slots of PayloadSize bytes (like
// UDT_SNDBUF, spec §7.1). Bytes are cut into packets when they are first
// sent, not when written: [SendBuffer.Write] appends to the last slot while
// that packet has not been sent yet, so small writes coalesce into full
// packets. Each packet gets the next sequence number when [SendBuffer.Next]
// hands it out for its first transmission; it keeps that number and its
// message number for every retransmission.
//
// Message numbers: UDT 4.11 numbers one message per send() call, but in
// stream mode the receiver ignores message numbers and boundaries (spec
// §7.3). Because writes coalesce, each packet is its own message here: the
// numbers go 1, 2, … per packet (wrapping as [seqno.Msg.Next]) and every
// packet is a solo message (FF = 11, O = 0).
type SendBuffer struct {
	st      store
	n       int       // slots
	payload int       // bytes per slot
	fill    int       // bytes per packet cut from now on, ≤ payload (SetPacketSize)
	limit   int       // most bytes held (NewSendBufferSized); 0: only the slots bound it
	scratch []byte    // Recut's
	starts  []int     // Recut's
	rc      recutPass // a re-cut in steps (StartRecut)
	head    int       // slot of the oldest unacknowledged packet
	used    int       // slots in use: [head, head+used)
	sent    int       // of which sent: [head, head+sent)
	ack     seqno.Seq // sequence number of the head slot (SndLastAck)
	nextMsg seqno.Msg // of the next packet sent; the sent ones have the numbers before it
	bytes   int       // bytes held
	copied  uint64    // bytes Write and FillMessage copied in, ever (Copied)
	msg     *sendMsgs // message mode (NewMessageSendBuffer); nil for a stream

	// Pinning (Pin): while pins > 0, the slots Ack frees are kept, unwritten, before head:
	// [head−kept, head) in ring order; the last Unpin frees them.
	pins     int
	kept     int
	released bool // Release was called while pinned: the last Unpin does it
}

// NewSendBuffer returns a send buffer of capacity bytes (rounded down to
// whole packets, at least 1) in packets of payload bytes (see
// [PayloadSize]; at most PageSize − 2) whose first packet will carry
// sequence number isn.
func NewSendBuffer(capacity, payload int, isn seqno.Seq) *SendBuffer {
	payload = max(1, min(payload, maxSlot))
	n := max(1, capacity/payload)
	b := &SendBuffer{n: n, payload: payload, fill: payload, ack: isn, nextMsg: seqno.FirstMsg}
	b.st.init(n, payload)
	return b
}

func (b *SendBuffer) slot(k int) int {
	i := b.head + k
	if i >= b.n {
		i -= b.n
	}
	return i
}

// Write copies as much of p as fits and returns how many bytes it took; 0
// means the buffer is full and the caller should wait for an ACK (flow
// control) when p is not empty. It never retains p. A message-mode buffer
// takes nothing here (see WriteMessage).
func (b *SendBuffer) Write(p []byte) int {
	if b.msg != nil || b.rc.active {
		return 0 // message mode: WriteMessage; a re-cut in progress: after it (StartRecut)
	}
	if b.limit > 0 {
		p = p[:min(len(p), max(b.limit-b.bytes, 0))]
	}
	total := 0
	if b.used > b.sent { // the last packet is not sent yet: fill it up
		i := b.slot(b.used - 1)
		l := b.st.length(i)
		k := copy(b.st.bytes(i)[l:max(l, b.fill)], p)
		b.st.setLength(i, l+k)
		p, total = p[k:], k
	}
	for len(p) > 0 && b.used+b.kept < b.n {
		// Fill a run of slots at once: up to the free slots, the ring's end and the page's end.
		i := b.slot(b.used)
		k, slots := b.st.putRun(i, min(b.n-b.used-b.kept, b.n-i), b.fill, p)
		b.used += slots
		p, total = p[k:], total+k
	}
	b.bytes += total
	b.copied += uint64(total)
	return total
}

// Next hands out the oldest unsent packet for its first transmission: its
// sequence number (consecutive from the ISN), payload and message number.
// ok is false when there is no unsent data. The payload aliases the buffer
// and stays valid and unchanged until the packet is acknowledged, or, if the
// buffer is pinned then, until the last Unpin after that.
func (b *SendBuffer) Next() (seq seqno.Seq, payload []byte, msg seqno.Msg, ok bool) {
	if b.sent == b.used || b.rc.active {
		return 0, nil, 0, false
	}
	i := b.slot(b.sent)
	if b.msg != nil {
		msg = seqno.MsgFromWire(b.msg.word1[i])
	} else {
		msg = b.nextMsg
		b.nextMsg = b.nextMsg.Next()
	}
	seq = b.ack.Add(b.sent)
	b.sent++
	return seq, b.st.data(i), msg, true
}

// Packet looks up a sent, unacknowledged packet for retransmission. ok is
// false if seq was acknowledged already or never sent. The payload aliases
// the buffer as in Next.
func (b *SendBuffer) Packet(seq seqno.Seq) (payload []byte, msg seqno.Msg, ok bool) {
	d := seqno.Offset(b.ack, seq)
	if d < 0 || d >= b.sent {
		return nil, 0, false
	}
	i := b.slot(d)
	if b.msg != nil {
		return b.st.data(i), seqno.MsgFromWire(b.msg.word1[i]), true
	}
	return b.st.data(i), b.msgBefore(b.sent - d), true
}

// msgCycle is the length of the message-number cycle 1, 2, …, MaxMsg−1 (see seqno.Msg.Next).
const msgCycle = int(seqno.MaxMsg) - 1

// msgBefore returns the message number given k packets before the next one (1 ≤ k ≤ sent):
// numbers are consecutive per packet in the cycle, so none needs storing.
func (b *SendBuffer) msgBefore(k int) seqno.Msg {
	return seqno.Msg((int(b.nextMsg)-1-k%msgCycle+msgCycle)%msgCycle + 1)
}

// Ack frees every packet before seq (the ACK number: the first packet the
// peer has not received, spec §2.3) and returns how many it freed. An ACK at
// or before the current one frees nothing; one beyond the next unsent packet
// returns ErrAckBeyondSent and changes nothing.
func (b *SendBuffer) Ack(seq seqno.Seq) (int, error) {
	d := seqno.Offset(b.ack, seq)
	if d <= 0 {
		return 0, nil
	}
	if d > b.sent {
		return 0, ErrAckBeyondSent
	}
	for k := 0; k < d; {
		i := b.slot(k)
		var freed, n int
		if b.pins > 0 {
			freed, n = b.st.lengths(i, min(d-k, b.n-i)) // kept until the last Unpin
		} else {
			freed, n = b.st.freeRun(i, min(d-k, b.n-i))
		}
		b.bytes -= n
		k += freed
	}
	if b.pins > 0 {
		b.kept += d
	}
	b.head = b.slot(d)
	b.used -= d
	b.sent -= d
	b.ack = seq
	return d, nil
}

// AckSeq returns the oldest unacknowledged sequence number (SndLastAck).
func (b *SendBuffer) AckSeq() seqno.Seq { return b.ack }

// NextSeq returns the sequence number the next new packet will get
// (SndCurrSeqNo + 1).
func (b *SendBuffer) NextSeq() seqno.Seq { return b.ack.Add(b.sent) }

// InFlight returns the number of packets sent and not yet acknowledged.
func (b *SendBuffer) InFlight() int { return b.sent }

// Unsent returns the number of packets (the last perhaps partial) not yet
// sent.
func (b *SendBuffer) Unsent() int { return b.used - b.sent }

// Buffered returns the number of bytes held, sent or not.
func (b *SendBuffer) Buffered() int { return b.bytes }

// Free returns how many bytes Write would accept now: the free slots plus
// the room left in an unsent last packet. Partly filled packets that were
// already sent occupy a whole slot until acknowledged, and a message being
// filled (BeginMessage) all of its slots.
func (b *SendBuffer) Free() int {
	if b.rc.active {
		return 0 // Write takes nothing until the re-cut ends (StartRecut)
	}
	f := (b.n - b.used - b.kept - b.reserved()) * b.fill
	if b.used > b.sent && b.msg == nil { // a message's last packet is never topped up
		f += max(b.fill-b.st.length(b.slot(b.used-1)), 0)
	}
	if b.limit > 0 {
		f = min(f, max(b.limit-b.bytes, 0))
	}
	return f
}

// Copied returns the bytes Write, WriteMessage and FillMessage have copied into the buffer since
// it was made (conn's tests count the bytes copied per hold of the connection's lock with it).
func (b *SendBuffer) Copied() uint64 { return b.copied }

// Cap returns the capacity in packets; Cap()·PayloadSize() is the capacity
// in bytes.
func (b *SendBuffer) Cap() int { return b.n }

// PayloadSize returns the payload bytes per packet.
func (b *SendBuffer) PayloadSize() int { return b.payload }

// Release returns the buffer's memory to the pool (at the last Unpin if it is
// pinned). Neither the buffer nor any payload it handed out may be used
// afterwards, except to Unpin.
func (b *SendBuffer) Release() {
	b.used, b.sent, b.bytes = 0, 0, 0
	b.rc = recutPass{}
	if b.msg != nil {
		b.msg.part = msgFill{} // its pages go with the rest
	}
	if b.pins > 0 {
		b.released = true
		return
	}
	b.st.releaseAll()
	b.kept = 0
}

// Pin keeps every payload Next and Packet have handed out unchanged, and the
// memory under it out of the shared page pool, until the matching Unpin, even
// if an Ack frees its packet meanwhile: the slots an Ack frees while the
// buffer is pinned are held (Free does not count them) and freed by the last
// Unpin. That lets the caller hand payloads to a system call that runs
// without the buffer's lock (a GSO send from the buffer's own memory) while
// ACKs are processed and Writes take the freed space: without it, a slot
// freed and rewritten, or a page returned to the pool and reused by another
// buffer, would change the bytes on the wire. Pins nest.
func (b *SendBuffer) Pin() { b.pins++ }

// Unpin undoes one Pin; the last one frees the slots acknowledged while
// pinned and returns how many (0 for an inner one). An Unpin without a Pin
// panics: it would end another caller's pin early.
func (b *SendBuffer) Unpin() int {
	if b.pins == 0 {
		panic("buffer: Unpin without Pin")
	}
	if b.pins--; b.pins > 0 {
		return 0
	}
	freed := b.kept
	if b.released {
		b.released = false
		b.st.releaseAll()
		b.kept = 0
		return freed
	}
	start := b.head - b.kept
	if start < 0 {
		start += b.n
	}
	for k := 0; k < b.kept; {
		i := start + k
		if i >= b.n {
			i -= b.n
		}
		run, _ := b.st.freeRun(i, min(b.kept-k, b.n-i))
		k += run
	}
	b.kept = 0
	return freed
}

// Trim returns the page kept back for reuse to the pool, so that an idle
// buffer holding no data holds no payload memory (call it when the
// connection goes idle; the next Write takes a page again).
func (b *SendBuffer) Trim() { b.st.trim() }

// Memory returns the payload memory held, in bytes (whole pages).
func (b *SendBuffer) Memory() int { return b.st.held() * PageSize }
