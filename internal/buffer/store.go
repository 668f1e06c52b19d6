package buffer

import "sync"

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
	pages   []*page
	live    []uint16
	spare   *page // one freed page kept back to avoid pool churn at page boundaries
}

func (s *store) init(n, slot int) {
	s.slot = slot
	s.perPage = PageSize / slot
	np := (n + s.perPage - 1) / s.perPage
	s.pages = make([]*page, np)
	s.live = make([]uint16, np)
}

// bytes returns slot i's full-size storage; its page must be held.
func (s *store) bytes(i int) []byte {
	p, o := i/s.perPage, (i%s.perPage)*s.slot
	return s.pages[p][o : o+s.slot : o+s.slot]
}

// acquire marks slot i live, taking its page if needed, and returns its
// storage.
func (s *store) acquire(i int) []byte {
	p := i / s.perPage
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
	p := i / s.perPage
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
