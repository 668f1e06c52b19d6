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
	if b.sent == b.used || n > b.payload || b.msg != nil { // a message's packets stay as cut
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
// not touched. It copies the unsent bytes once, through one slot-sized scratch buffer, or twice
// when their sizes are mixed (a probe lengthened among shorter packets): first up to full
// slots, then down to the size. It returns the change in the number of unsent packets.
func (b *SendBuffer) Recut() int {
	u := b.used - b.sent
	if u == 0 || b.msg != nil { // message mode: packets carry their message's boundaries
		return 0
	}
	total, same, ahead, behind := b.layout(b.fill)
	need := (total + b.fill - 1) / b.fill
	switch {
	case same || need > b.n-b.sent-b.kept:
		return 0 // already cut so, or not enough free slots
	case need < u && ahead:
		b.recut(b.fill, true)
	case need >= u && behind:
		b.recut(b.fill, false)
	default:
		// Mixed sizes: full slots first (every packet is at most a slot, so a forward pass
		// works), then down to the size (every packet is then at least that: backward).
		b.layout(b.payload)
		b.recut(b.payload, true)
		b.layout(b.fill)
		b.recut(b.fill, false)
	}
	return b.used - b.sent - u
}

// layout fills b.starts with the stream offsets of the unsent packets and reports their total
// length, whether they are already cut at size, and whether a forward (ahead: each old packet k
// ends before new packet k+1 starts) or a backward (behind: each old packet k starts after new
// packet k does) pass can cut them at size in place.
func (b *SendBuffer) layout(size int) (total int, same, ahead, behind bool) {
	u := b.used - b.sent
	if cap(b.starts) < u+1 {
		b.starts = make([]int, u+1, b.n+1)
	}
	starts := b.starts[:u+1]
	same, ahead, behind = true, true, true
	for k := range u {
		l := b.st.length(b.slot(b.sent + k))
		starts[k+1] = starts[k] + l
		same = same && (l == size || k == u-1 && l <= size)
		ahead = ahead && starts[k+1] <= (k+1)*size
		behind = behind && starts[k] >= k*size
	}
	b.starts = starts
	return starts[u], same, ahead, behind
}

// recut re-chunks the unsent packets laid out by layout at size bytes, forward or backward (see
// layout), taking or releasing slots as the count changes.
func (b *SendBuffer) recut(size int, forward bool) {
	u := b.used - b.sent
	starts := b.starts[:u+1]
	total := starts[u]
	need := (total + size - 1) / size
	if cap(b.scratch) < b.payload {
		b.scratch = make([]byte, b.payload)
	}
	// at is the old packet holding the previous piece's first byte: a pass is monotonic, so
	// the scan resumes there.
	at := 0
	piece := func(w int) { // gather new packet w from the old ones into its slot
		lo, hi := w*size, min((w+1)*size, total)
		for starts[at+1] <= lo {
			at++
		}
		for at > 0 && starts[at] > lo {
			at--
		}
		k := at
		tmp, n := b.scratch[:hi-lo], 0
		for off := lo; off < hi; k++ {
			src := b.st.data(b.slot(b.sent + k))
			c := copy(tmp[n:], src[off-starts[k]:])
			n, off = n+c, off+c
		}
		i := b.slot(b.sent + w)
		if w >= u {
			b.st.acquire(i) // a new slot
		}
		copy(b.st.bytes(i), tmp)
		b.st.setLength(i, len(tmp))
	}
	if forward {
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
}
