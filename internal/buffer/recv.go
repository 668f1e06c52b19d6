package buffer

import (
	"math/bits"

	"github.com/udtgo/udt/internal/seqno"
)

// RecvBuffer holds arriving data packets in a window of Cap slots starting at
// the read point, the oldest packet not yet fully read. Packets may arrive in
// any order; [RecvBuffer.Read] returns bytes in sequence order up to the
// first missing packet, which is also the ACK number (spec §2.3 word 0).
//
// A packet is accepted if its sequence number lies in [read point, read
// point + Cap); the rest are rejected with a reason (spec §4.4 step 4).
type RecvBuffer struct {
	st      store
	n       int // slots
	payload int
	present []uint64 // bitmap by slot
	head    int      // slot of the read point
	seq     seqno.Seq
	off     int       // bytes already read from the head slot
	contig  int       // packets present from the head without a gap
	ready   int       // bytes readable: in the contig packets, minus off
	stored  int       // packets present
	copied  uint64    // bytes Read, ReadMessage and ReadPinned copied out, ever (Copied)
	msg     *recvMsgs // message mode (NewMessageRecvBuffer); nil for a stream
}

// NewRecvBuffer returns a receive buffer of capacity packets (at least 1) of
// up to payload bytes (see [PayloadSize]; at most PageSize − 2) whose
// first packet is isn (the peer's initial sequence number).
func NewRecvBuffer(capacity, payload int, isn seqno.Seq) *RecvBuffer {
	payload = max(1, min(payload, maxSlot))
	n := max(1, min(capacity, 1<<29))
	b := &RecvBuffer{n: n, payload: payload, present: make([]uint64, (n+63)/64), seq: isn}
	b.st.init(n, payload)
	return b
}

func (b *RecvBuffer) slot(k int) int {
	i := b.head + k
	if i >= b.n {
		i -= b.n
	}
	return i
}

func (b *RecvBuffer) has(i int) bool { return b.present[i>>6]&(1<<(i&63)) != 0 }

// Insert copies payload into the slot of packet seq. It returns ErrLength for
// an empty or oversized payload, ErrTooOld for a packet before the read point,
// ErrBeyondWindow for one at or beyond read point + Cap, and ErrDuplicate for
// one already held; the buffer is unchanged on error.
func (b *RecvBuffer) Insert(seq seqno.Seq, payload []byte) error {
	d, err := b.store(seq, payload)
	if err != nil {
		return err
	}
	if d == b.contig { // in order: extend the run by this packet, then over any that follow
		b.ready += len(payload)
		b.contig++
		if b.contig < b.n && b.has(b.slot(b.contig)) {
			b.advance()
		}
	}
	return nil
}

// store copies payload into the slot of packet seq and marks it present, returning the packet's
// offset from the read point; errors as for Insert, with the buffer unchanged.
func (b *RecvBuffer) store(seq seqno.Seq, payload []byte) (int, error) {
	if len(payload) == 0 || len(payload) > b.payload {
		return 0, ErrLength
	}
	d := seqno.Offset(b.seq, seq)
	if d < 0 {
		return 0, ErrTooOld
	}
	if d >= b.n {
		return 0, ErrBeyondWindow
	}
	i := b.slot(d)
	if b.has(i) {
		return 0, ErrDuplicate
	}
	b.st.put(i, payload)
	b.present[i>>6] |= 1 << (i & 63)
	b.stored++
	return d, nil
}

// advance extends the contiguous run from the head over present slots.
func (b *RecvBuffer) advance() {
	for b.contig < b.n {
		i := b.slot(b.contig)
		w := b.present[i>>6] >> (i & 63)
		if w&1 == 0 {
			return
		}
		// Take the whole run of set bits in this word at once.
		k := min(bits.TrailingZeros64(^w), b.n-i, b.n-b.contig)
		for j := i; j < i+k; j++ {
			b.ready += b.st.length(j)
		}
		b.contig += k
	}
}

// Read copies contiguous in-order bytes into p and returns how many; a
// packet may be read in several calls. 0 means nothing is readable (the next
// packet is missing or the buffer is empty). A message-mode buffer returns
// nothing here (see ReadMessage).
func (b *RecvBuffer) Read(p []byte) int {
	if b.msg != nil {
		return 0 // message mode: ReadMessage
	}
	total := 0
	for len(p) > 0 && b.contig > 0 {
		i := b.head
		d := b.st.data(i)
		l := len(d)
		k := copy(p, d[b.off:])
		p, total, b.off = p[k:], total+k, b.off+k
		if b.off < l {
			break
		}
		b.present[i>>6] &^= 1 << (i & 63)
		b.st.release(i)
		b.stored--
		b.off = 0
		b.contig--
		b.seq = b.seq.Inc()
		if b.head++; b.head == b.n {
			b.head = 0
		}
	}
	b.ready -= total
	b.copied += uint64(total)
	return total
}

// AckSeq returns the first missing sequence number: every packet before it
// has arrived. It is the ACK number (spec §2.3 word 0).
func (b *RecvBuffer) AckSeq() seqno.Seq { return b.seq.Add(b.contig) }

// ReadSeq returns the sequence number of the read point, the oldest packet
// not yet fully read.
func (b *RecvBuffer) ReadSeq() seqno.Seq { return b.seq }

// Readable returns the number of bytes Read can return now; in message mode, the size of the
// message ReadMessage returns next (0: none yet).
func (b *RecvBuffer) Readable() int {
	if b.msg != nil {
		return b.msg.nextSize()
	}
	return b.ready
}

// Available returns the free slots from the ACK number to the end of the
// window: the flow window to advertise in ACK word 3, in packets (the caller
// applies UDT's minimum of 2, spec §2.3).
func (b *RecvBuffer) Available() int { return b.n - b.contig }

// Stored returns the number of packets held, in order or not.
func (b *RecvBuffer) Stored() int { return b.stored }

// Has reports whether packet seq is held (arrived and not yet fully read).
func (b *RecvBuffer) Has(seq seqno.Seq) bool {
	d := seqno.Offset(b.seq, seq)
	return d >= 0 && d < b.n && b.has(b.slot(d))
}

// Cap returns the capacity in packets.
func (b *RecvBuffer) Cap() int { return b.n }

// PayloadSize returns the largest payload a packet may carry.
func (b *RecvBuffer) PayloadSize() int { return b.payload }

// Release returns the buffer's memory to the pool. The buffer may not be used
// afterwards.
func (b *RecvBuffer) Release() {
	b.st.releaseAll()
	clear(b.present)
	b.contig, b.ready, b.stored, b.off = 0, 0, 0, 0
	if b.msg != nil {
		b.msg.reset()
	}
}

// Trim returns the page kept back for reuse to the pool, so that an idle
// buffer holding no data holds no payload memory (call it when the
// connection goes idle; the next Insert takes a page again).
func (b *RecvBuffer) Trim() { b.st.trim() }

// Memory returns the payload memory held, in bytes (whole pages).
func (b *RecvBuffer) Memory() int { return b.st.held() * PageSize }
