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
