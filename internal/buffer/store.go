package buffer

import (
	"math/bits"
	"sync"
)

// PageSize is the unit in which buffers take memory: slots are carved out of
// 64 KiB pages that are taken from a process-wide pool when a slot in them is
// first used and returned when the last one is freed. An idle connection
// therefore holds no payload memory however large its buffers are configured,
// and a busy one reuses its pages without allocating.
const PageSize = 64 << 10

type page [PageSize]byte

var pagePool = sync.Pool{New: func() any { return new(page) }}

// store maps slot indexes [0, n) to fixed-size byte slots on lazily held
// pages, counting live slots per page.
type store struct {
	slot    int
	perPage int
	recip   uint64 // ⌈2^64/perPage⌉ (0 when perPage is 1): slot → page without a division
	pages   []*page
	live    []uint16
	spare   *page // one freed page kept back to avoid pool churn at page boundaries
}

func (s *store) init(n, slot int) {
	s.slot = slot
	s.perPage = PageSize / slot
	s.recip = 0
	if s.perPage > 1 {
		s.recip = ^uint64(0)/uint64(s.perPage) + 1
	}
	np := (n + s.perPage - 1) / s.perPage
	s.pages = make([]*page, np)
	s.live = make([]uint16, np)
}

// pageOf returns i / perPage. The hot paths call it several times per packet, so it multiplies
// by the rounded-up reciprocal instead of dividing: with m = ⌈2^64/d⌉ = (2^64 + e)/d, 0 ≤ e < d,
// ⌊i·m/2^64⌋ = ⌊i/d + i·e/(d·2^64)⌋ = ⌊i/d⌋ because i·e < 2^64 adds less than 1/d.
func (s *store) pageOf(i int) int {
	if s.recip == 0 {
		return i
	}
	hi, _ := bits.Mul64(uint64(i), s.recip)
	return int(hi)
}

// bytes returns slot i's full-size storage; its page must be held.
func (s *store) bytes(i int) []byte {
	p := s.pageOf(i)
	o := (i - p*s.perPage) * s.slot
	return s.pages[p][o : o+s.slot : o+s.slot]
}

// acquire marks slot i live, taking its page if needed, and returns its
// storage.
func (s *store) acquire(i int) []byte {
	p := s.pageOf(i)
	if s.pages[p] == nil {
		if s.spare != nil {
			s.pages[p], s.spare = s.spare, nil
		} else {
			s.pages[p] = pagePool.Get().(*page)
		}
	}
	s.live[p]++
	return s.bytes(i)
}

// release marks slot i free and gives its page back when no slot in it is live.
func (s *store) release(i int) {
	p := s.pageOf(i)
	if s.live[p]--; s.live[p] == 0 {
		if s.spare == nil {
			s.spare = s.pages[p]
		} else {
			pagePool.Put(s.pages[p])
		}
		s.pages[p] = nil
	}
}

// releaseAll returns every page to the pool; the store is empty afterwards.
func (s *store) releaseAll() {
	for p, pg := range s.pages {
		if pg != nil {
			pagePool.Put(pg)
			s.pages[p] = nil
		}
		s.live[p] = 0
	}
	if s.spare != nil {
		pagePool.Put(s.spare)
		s.spare = nil
	}
}

// held returns the number of pages currently held (for tests and stats).
func (s *store) held() int {
	n := 0
	for _, pg := range s.pages {
		if pg != nil {
			n++
		}
	}
	if s.spare != nil {
		n++
	}
	return n
}

// trim returns the spare page to the pool.
func (s *store) trim() {
	if s.spare != nil {
		pagePool.Put(s.spare)
		s.spare = nil
	}
}
