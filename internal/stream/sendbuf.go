package stream

import "math/bits"

// sendBuffer is the bounded send buffer: a byte ring addressed by 64-bit stream offsets. Bytes
// between head and tail are held: [head, cut) are in packets sent but not yet acknowledged,
// [cut, tail) are written but not yet packetized. The ring grows on demand up to max bytes, so an
// idle connection costs little memory.
type sendBuffer struct {
	data            []byte
	max             int
	head, cut, tail uint64
}

const minSendRing = 64 << 10

func (s *sendBuffer) used() int { return int(s.tail - s.head) }
func (s *sendBuffer) free() int { return s.max - s.used() }

// write copies as much of p as fits and returns the count.
func (s *sendBuffer) write(p []byte) int {
	n := min(len(p), s.free())
	if n <= 0 {
		return 0
	}
	if need := s.used() + n; need > len(s.data) {
		s.grow(need)
	}
	size := uint64(len(s.data))
	pos := s.tail % size
	c := copy(s.data[pos:], p[:n])
	copy(s.data, p[c:n])
	s.tail += uint64(n)
	return n
}

// read copies len(dst) held bytes starting at stream offset off into dst.
func (s *sendBuffer) read(dst []byte, off uint64) {
	size := uint64(len(s.data))
	pos := off % size
	c := copy(dst, s.data[pos:])
	copy(dst[c:], s.data)
}

func (s *sendBuffer) grow(need int) {
	size := max(len(s.data)*2, minSendRing)
	for size < need {
		size *= 2
	}
	size = min(size, s.max)
	nd := make([]byte, size)
	if len(s.data) > 0 {
		// Place every held byte at its offset modulo the new size.
		for off := s.head; off < s.tail; {
			pos := off % uint64(size)
			k := min(uint64(size)-pos, s.tail-off)
			s.read(nd[pos:pos+k], off)
			off += k
		}
	}
	s.data = nd
}

// sentPkt describes one packet sent at least once: where its payload lies in the send buffer and
// its message number, so that a retransmission is byte-identical.
type sentPkt struct {
	off uint64
	n   uint32
	msg uint32
}

// flight describes the packets in flight, indexed by sequence number modulo a power-of-two ring
// that grows on demand up to limit entries (the peer's flow window rounded up).
type flight struct {
	descs []sentPkt
	mask  uint32
	limit int
}

const minFlight = 64

func (f *flight) init(limit int) {
	f.limit = 1 << bits.Len(uint(limit-1))
	f.resize(min(minFlight, f.limit), 0, 0)
}

// resize reallocates the ring to size entries, keeping the n entries starting at seq first.
func (f *flight) resize(size int, first uint32, n int) {
	descs := make([]sentPkt, size)
	nm := uint32(size - 1)
	for i := 0; i < n; i++ {
		s := seqAdd(first, int32(i))
		descs[s&nm] = f.descs[s&f.mask]
	}
	f.descs, f.mask = descs, nm
}

func (f *flight) size() int              { return len(f.descs) }
func (f *flight) at(seq uint32) *sentPkt { return &f.descs[seq&f.mask] }
