package buffer

import (
	"math"

	"github.com/udtgo/udt/internal/seqno"
)

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
// [1, PayloadSize]. Packets already cut keep their length until Recut or StartRecut cuts the
// unsent ones again (UDT4 numbers packets, not bytes, so a packet is never cut again once it has
// a number). Free follows the new size (NewSendBufferSized keeps the capacity in bytes).
func (b *SendBuffer) SetPacketSize(n int) { b.fill = max(1, min(n, b.payload)) }

// PacketSize returns the payload bytes of the packets Write cuts.
func (b *SendBuffer) PacketSize() int { return b.fill }

// NextLen returns the payload length of the packet Next would hand out, 0 if none is unsent.
func (b *SendBuffer) NextLen() int {
	if b.sent == b.used || b.rc.active { // mid-pass the lengths are in motion; Next waits anyway
		return 0
	}
	return b.st.length(b.slot(b.sent))
}

// Grow makes the packet Next hands out next n payload bytes long (n ≤ PayloadSize) by moving
// bytes from the front of the unsent packet after it, which stays at least one byte long; the
// byte stream is unchanged. It reports whether the next packet is now at least n bytes: false
// when too little unsent data follows it (nothing is changed then).
func (b *SendBuffer) Grow(n int) bool {
	if b.sent == b.used || n > b.payload || b.msg != nil || b.rc.active { // a message's packets stay as cut
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
// slots, then down to the size. It returns the change in the number of unsent packets. It is
// StartRecut and RecutStep until done, in one call.
func (b *SendBuffer) Recut() int {
	u := b.used - b.sent
	if !b.StartRecut() {
		return 0
	}
	b.RecutStep(math.MaxInt) // an unbounded step runs every pass to the end
	return b.used - b.sent - u
}

// StartRecut begins the re-cut Recut does in one call, to be done in steps by RecutStep, each
// copying a bounded share of the unsent bytes (so that a caller holding a lock others wait on
// never copies the whole backlog, up to the buffer's capacity, in one hold). It reports whether
// there is anything to re-cut. A re-cut in progress (the size changed again meanwhile) goes on
// in steps and then starts over at the new size. Until the last step, the buffer takes no Write
// (Free is 0), hands out no new packet (Next) and lengthens none (Grow); acknowledgements,
// retransmissions (Packet) and pins go on as usual.
func (b *SendBuffer) StartRecut() bool {
	if b.rc.active {
		b.rc.again = true // its pass is half done: the layout changes only when it ends
		return true
	}
	return b.beginRecut()
}

// beginRecut lays the unsent packets out and starts the passes that cut them at PacketSize.
func (b *SendBuffer) beginRecut() bool {
	u := b.used - b.sent
	if u == 0 || b.msg != nil { // message mode: packets carry their message's boundaries
		return false
	}
	total, same, ahead, behind := b.layout(b.fill)
	need := (total + b.fill - 1) / b.fill
	switch {
	case same || need > b.n-b.sent-b.kept:
		return false // already cut so, or not enough free slots
	case need < u && ahead:
		b.startPass(b.fill, true, 0)
	case need >= u && behind:
		b.startPass(b.fill, false, 0)
	default:
		// Mixed sizes: full slots first (every packet is at most a slot, so a forward pass
		// works), then down to the size (every packet is then at least that: backward).
		b.layout(b.payload)
		b.startPass(b.payload, true, b.fill)
	}
	return true
}

// Recutting reports whether a re-cut started by StartRecut has steps left.
func (b *SendBuffer) Recutting() bool { return b.rc.active }

// RecutStep re-cuts about maxBytes more of the unsent bytes (at least one packet if maxBytes >
// 0) and reports whether the re-cut is complete (true also when none is in progress). A step that
// ends a pass also walks the unsent packets' lengths for the next one (layout), as StartRecut
// does: O(unsent packets), without copying their bytes.
func (b *SendBuffer) RecutStep(maxBytes int) bool {
	rc := &b.rc
	for budget := maxBytes; rc.active && budget > 0; budget -= rc.size {
		if rc.forward && rc.w < rc.need || !rc.forward && rc.w >= 0 {
			b.piece(rc.w)
			if rc.forward {
				rc.w++
			} else {
				rc.w--
			}
			continue
		}
		b.finishPass()
	}
	if rc.active && (rc.forward && rc.w == rc.need || !rc.forward && rc.w < 0) {
		b.finishPass() // the last piece was this step's: end the pass without another step
	}
	return !rc.active
}

// recutPass is the state of a re-cut in steps (StartRecut): one pass over the unsent packets
// laid out by layout (b.starts), cutting them at size, forward or backward.
type recutPass struct {
	active  bool
	forward bool
	size    int
	then    int  // the size of a backward pass to run after this one (mixed sizes), or 0
	again   bool // the size changed during the re-cut: begin another when this one ends
	u, need int  // unsent packets before the pass, after it
	w       int  // the next new packet to write
	at      int  // the old packet holding the previous piece's first byte (a pass is monotonic)
}

// startPass begins a pass over the packets layout laid out at size.
func (b *SendBuffer) startPass(size int, forward bool, then int) {
	u := b.used - b.sent
	need := (b.starts[u] + size - 1) / size
	w := need - 1 // a backward pass writes the last new packet first
	if forward {
		w = 0
	}
	b.rc = recutPass{active: true, forward: forward, size: size, then: then, u: u, need: need, w: w}
	if cap(b.scratch) < b.payload {
		b.scratch = make([]byte, b.payload)
	}
}

// finishPass ends the current pass, its pieces all written, and starts the backward pass a
// mixed re-cut has after its first.
func (b *SendBuffer) finishPass() {
	rc := &b.rc
	if rc.forward {
		for k := rc.need; k < rc.u; k++ {
			b.st.release(b.slot(b.sent + k))
		}
	}
	b.used = b.sent + rc.need
	then, again := rc.then, rc.again
	*rc = recutPass{}
	switch {
	case again: // the size changed meanwhile: cut at it from here (after a pass to full slots, one pass does)
		b.beginRecut()
	case then != 0:
		b.layout(then)
		b.startPass(then, false, 0)
	}
}

// piece gathers new packet w of the current pass from the old ones into its slot.
func (b *SendBuffer) piece(w int) {
	rc := &b.rc
	starts := b.starts[:rc.u+1]
	total, size := starts[rc.u], rc.size
	lo, hi := w*size, min((w+1)*size, total)
	for starts[rc.at+1] <= lo {
		rc.at++
	}
	for rc.at > 0 && starts[rc.at] > lo {
		rc.at--
	}
	k := rc.at
	tmp, n := b.scratch[:hi-lo], 0
	for off := lo; off < hi; k++ {
		src := b.st.data(b.slot(b.sent + k))
		c := copy(tmp[n:], src[off-starts[k]:])
		n, off = n+c, off+c
	}
	i := b.slot(b.sent + w)
	if w >= rc.u {
		b.st.acquire(i) // a new slot
	}
	copy(b.st.bytes(i), tmp)
	b.st.setLength(i, len(tmp))
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
