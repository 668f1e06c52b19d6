package buffer

import "github.com/udtgo/udt/internal/seqno"

// Packets of a size that changes (path MTU discovery): the slots keep PayloadSize bytes of room,
// but Write cuts packets of PacketSize bytes, and Grow lengthens the next packet to be sent.

// NewSendBufferSized is NewSendBuffer for packets whose size varies between minPayload and
// payload bytes: it holds capacity bytes whatever the size, with slots enough for capacity /
// minPayload packets (each with payload bytes of room, so the memory held, taken as used, is up
// to payload/minPayload times the bytes held while packets are at their smallest).
func NewSendBufferSized(capacity, payload, minPayload int, isn seqno.Seq) *SendBuffer {
	payload = max(1, min(payload, maxSlot))
	minPayload = max(1, min(minPayload, payload))
	b := NewSendBuffer((capacity+minPayload-1)/minPayload*payload, payload, isn)
	b.limit = max(capacity, payload)
	return b
}

// SetPacketSize sets the payload bytes of the packets Write cuts from now on, clamped to
// [1, PayloadSize]. Packets already cut keep their length: the unsent ones leave as they are
// (UDT4 numbers packets, not bytes, so a packet is never cut again once it has a number; the
// unsent ones could be, but at the cost of moving the whole backlog). Free follows the new size
// (NewSendBufferSized keeps the capacity in bytes).
func (b *SendBuffer) SetPacketSize(n int) { b.fill = max(1, min(n, b.payload)) }

// PacketSize returns the payload bytes of the packets Write cuts.
func (b *SendBuffer) PacketSize() int { return b.fill }

// NextLen returns the payload length of the packet Next would hand out, 0 if none is unsent.
func (b *SendBuffer) NextLen() int {
	if b.sent == b.used {
		return 0
	}
	return b.st.length(b.slot(b.sent))
}

// Grow makes the packet Next hands out next n payload bytes long (n ≤ PayloadSize) by moving
// bytes from the front of the unsent packet after it, which stays at least one byte long; the
// byte stream is unchanged. It reports whether the next packet is now at least n bytes: false
// when too little unsent data follows it (nothing is changed then).
func (b *SendBuffer) Grow(n int) bool {
	if b.sent == b.used || n > b.payload {
		return false
	}
	i := b.slot(b.sent)
	l := b.st.length(i)
	if l >= n {
		return true
	}
	if b.sent+1 == b.used {
		return false
	}
	k := b.slot(b.sent + 1)
	next := b.st.data(k)
	need := n - l
	if len(next) <= need {
		return false
	}
	copy(b.st.bytes(i)[l:n], next[:need])
	copy(b.st.bytes(k), next[need:]) // overlapping: copy moves
	b.st.setLength(i, n)
	b.st.setLength(k, len(next)-need)
	return true
}

// Recut cuts the unsent packets again at PacketSize bytes (the last one may be shorter): after
// the size grew, data written before leaves at the new size; after it fell, the unsent data
// (which has no numbers yet) fits the path again, if the free slots allow (NewSendBufferSized
// has enough at every size down to its minimum). The byte stream is unchanged; sent packets are
// not touched. It copies the unsent bytes once, through one slot-sized scratch buffer, and
// returns the change in the number of unsent packets (negative: fewer).
func (b *SendBuffer) Recut() int {
	u := b.used - b.sent
	if u == 0 {
		return 0
	}
	if cap(b.starts) < u+1 {
		b.starts = make([]int, u+1, b.n+1)
	}
	starts := b.starts[:u+1] // starts[k]: stream offset of unsent packet k; starts[u]: the total
	same, ahead, behind := true, true, true
	for k := range u {
		l := b.st.length(b.slot(b.sent + k))
		starts[k+1] = starts[k] + l
		same = same && (l == b.fill || k == u-1 && l <= b.fill)
		ahead = ahead && starts[k+1] <= (k+1)*b.fill // old packet k ends before new packet k+1
		behind = behind && starts[k] >= k*b.fill     // old packet k starts after new packet k
	}
	total := starts[u]
	need := (total + b.fill - 1) / b.fill
	if same || need > b.n-b.sent || !(need < u && ahead || need >= u && behind) {
		// Already cut so; not enough free slots; or sizes mixed so that no single pass can move
		// the bytes in place (a grown probe among short packets, say): leave them.
		return 0
	}
	if cap(b.scratch) < b.payload {
		b.scratch = make([]byte, b.payload)
	}
	piece := func(w int) { // gather new packet w from the old ones into its slot
		lo, hi := w*b.fill, min((w+1)*b.fill, total)
		k := 0
		for starts[k+1] <= lo {
			k++
		}
		tmp, n := b.scratch[:hi-lo], 0
		for off := lo; off < hi; k++ {
			src := b.st.data(b.slot(b.sent + k))
			c := copy(tmp[n:], src[off-starts[k]:])
			n, off = n+c, off+c
		}
		i := b.slot(b.sent + w)
		if w >= u {
			b.st.acquire(i) // a new slot (the size fell)
		}
		copy(b.st.bytes(i), tmp)
		b.st.setLength(i, len(tmp))
	}
	// Growing (ahead), new packet w only needs old packets ≥ w: go forward; shrinking (behind),
	// only old packets ≤ w: go backward. Either way no old packet is overwritten before its last
	// reader.
	if need < u {
		for w := range need {
			piece(w)
		}
		for k := need; k < u; k++ {
			b.st.release(b.slot(b.sent + k))
		}
	} else {
		for w := need - 1; w >= 0; w-- {
			piece(w)
		}
	}
	b.used = b.sent + need
	return need - u
}
