package simnet

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// packet is one datagram in flight. Packets are pooled: a steady stream allocates nothing.
type packet struct {
	buf     []byte
	src     netip.AddrPort
	srcAddr *net.UDPAddr // the sender's address, shared and never modified
	dst     netip.AddrPort
	path    []*Link
	frag    bool // written with WriteFragmentable: links above their MTU let it pass
}

var packetPool = sync.Pool{New: func() any { return &packet{buf: make([]byte, 0, 2048)} }}

func getPacket(b []byte) *packet {
	p := packetPool.Get().(*packet)
	p.buf = append(p.buf[:0], b...)
	p.frag = false
	return p
}

func putPacket(p *packet) {
	if cap(p.buf) > 1<<16 {
		return
	}
	p.srcAddr, p.path = nil, nil
	packetPool.Put(p)
}

// clone returns a copy of p for duplication.
func (p *packet) clone() *packet {
	q := getPacket(p.buf)
	q.src, q.srcAddr, q.dst, q.path, q.frag = p.src, p.srcAddr, p.dst, p.path, p.frag
	return q
}

// event: packet pkt leaves hop (a link index on its path) at time at.
type event struct {
	at  time.Time
	seq uint64
	pkt *packet
	hop int
}

func (e *event) less(f *event) bool {
	if e.at.Equal(f.at) {
		return e.seq < f.seq
	}
	return e.at.Before(f.at)
}

// eventHeap is a binary min-heap on (at, seq); by value, so pushes do not allocate.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !s[i].less(&s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = event{}
	s = s[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].less(&s[m]) {
			m = l
		}
		if r < len(s) && s[r].less(&s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
