package stream

import "math/bits"

// recvBuffer holds received payloads in a ring indexed by sequence number modulo a power of two.
// A nil slot has not been received. Payload buffers are recycled through a free list and allocated
// in slabs only when the occupied span grows, so the steady state allocates nothing and an idle
// connection holds little memory.
type recvBuffer struct {
	slots   [][]byte
	mask    uint32
	limit   int // ring size needed for capacity packets (power of two)
	spare   [][]byte
	payload int // bytes per payload buffer (MSS − 44)
}

const (
	minRecvRing = 64
	slabPackets = 32
)

func (r *recvBuffer) init(capacity, payload int) {
	r.limit = 1 << bits.Len(uint(capacity-1))
	r.payload = payload
	r.slots = make([][]byte, min(minRecvRing, r.limit))
	r.mask = uint32(len(r.slots) - 1)
}

// ensure makes the ring hold the span of n numbers starting at base (n ≤ capacity).
func (r *recvBuffer) ensure(base uint32, n int) {
	if n <= len(r.slots) {
		return
	}
	size := len(r.slots)
	for size < n {
		size *= 2
	}
	size = min(size, r.limit)
	slots := make([][]byte, size)
	nm := uint32(size - 1)
	for i := 0; i < len(r.slots); i++ {
		s := seqAdd(base, int32(i))
		slots[s&nm] = r.slots[s&r.mask]
	}
	r.slots, r.mask = slots, nm
}

func (r *recvBuffer) at(seq uint32) []byte { return r.slots[seq&r.mask] }

// put stores a copy of p for seq.
func (r *recvBuffer) put(seq uint32, p []byte) {
	if len(r.spare) == 0 {
		slab := make([]byte, slabPackets*r.payload)
		for i := 0; i < slabPackets; i++ {
			r.spare = append(r.spare, slab[i*r.payload:(i+1)*r.payload:(i+1)*r.payload])
		}
	}
	b := r.spare[len(r.spare)-1]
	r.spare = r.spare[:len(r.spare)-1]
	b = b[:copy(b[:r.payload], p)]
	r.slots[seq&r.mask] = b
}

// release frees the slot of seq.
func (r *recvBuffer) release(seq uint32) {
	i := seq & r.mask
	r.spare = append(r.spare, r.slots[i][:0])
	r.slots[i] = nil
}
