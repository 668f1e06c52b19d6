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
// pages, counting live slots per page. A page starts with the 2-byte lengths
// of its slots, padded to 64 bytes, followed by the slots themselves (aligned
// as the slot size allows, for fast copies), so a buffer's per-slot metadata
// lives in the pages too: an idle buffer holds only the page table (a pointer
// and a count per page).
type store struct {
	slot    int // payload bytes per slot
	hdr     int // bytes of the length table at the start of each page
	perPage int
	recip   uint64 // ⌈2^64/perPage⌉ (0 when perPage is 1): slot → page without a division
	pages   []*page
	live    []uint16
	spare   *page // one freed page kept back to avoid pool churn at page boundaries
}

// lenSize is the size of a slot's length in the page's length table, which is
// padded to a multiple of hdrAlign bytes.
const (
	lenSize  = 2
	hdrAlign = 64
)

// maxSlot is the largest slot size: one slot and its (unpadded) length fill a page. It exceeds
// the largest UDT payload, 65535 − 44 bytes (spec §1.1).
const maxSlot = PageSize - lenSize

// hdrSize is the padded size of the length table of k slots.
func hdrSize(k int) int { return (k*lenSize + hdrAlign - 1) / hdrAlign * hdrAlign }

func (s *store) init(n, slot int) {
	s.slot = slot
	s.perPage = (PageSize - hdrAlign) / slot // an upper bound; shrink until the table fits
	for s.perPage > 1 && hdrSize(s.perPage)+s.perPage*slot > PageSize {
		s.perPage--
	}
	s.hdr = hdrSize(s.perPage)
	if s.perPage < 1 { // one slot too large for a padded table: the length alone precedes it
		s.perPage, s.hdr = 1, lenSize
	}
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

// loc returns slot i's page and its index k on the page; the page must be held. The slot's
// length is at 2k, its bytes at hdr + k·slot.
func (s *store) loc(i int) (*page, int) {
	p := s.pageOf(i)
	return s.pages[p], i - p*s.perPage
}

// bytes returns slot i's full-size storage; its page must be held.
func (s *store) bytes(i int) []byte {
	pg, k := s.loc(i)
	o := s.hdr + k*s.slot
	return pg[o : o+s.slot : o+s.slot]
}

// data returns slot i's first length() bytes; its page must be held.
func (s *store) data(i int) []byte {
	pg, k := s.loc(i)
	n := int(pg[2*k]) | int(pg[2*k+1])<<8
	o := s.hdr + k*s.slot
	return pg[o : o+n : o+s.slot]
}

// length returns the length recorded for slot i; its page must be held.
func (s *store) length(i int) int {
	pg, k := s.loc(i)
	return int(pg[2*k]) | int(pg[2*k+1])<<8
}

// setLength records the length of slot i (≤ slot); its page must be held.
func (s *store) setLength(i, n int) {
	pg, k := s.loc(i)
	pg[2*k], pg[2*k+1] = byte(n), byte(n>>8)
}

// acquire marks slot i live, taking its page if needed, and returns its page
// and index on the page (as loc). The caller must then set its length.
func (s *store) acquire(i int) (*page, int) {
	p := s.pageOf(i)
	if s.pages[p] == nil {
		if s.spare != nil {
			s.pages[p], s.spare = s.spare, nil
		} else {
			s.pages[p] = pagePool.Get().(*page)
		}
	}
	s.live[p]++
	return s.pages[p], i - p*s.perPage
}

// put acquires slot i, copies as much of p as fits into it, records that length and returns it.
func (s *store) put(i int, p []byte) int {
	pg, k := s.acquire(i)
	o := s.hdr + k*s.slot
	n := copy(pg[o:o+s.slot], p)
	pg[2*k], pg[2*k+1] = byte(n), byte(n>>8)
	return n
}

// putRun fills up to m consecutive free slots from slot i on (all on i's page) with p, chunk
// bytes per slot (chunk ≤ slot), full chunks first; it returns the bytes taken and the slots
// used (at least one if p is not empty). With chunk == slot the slots are contiguous on the
// page and it is one copy.
func (s *store) putRun(i, m, chunk int, p []byte) (n, used int) {
	pg, k := s.acquire(i) // counts the first slot
	m = min(m, s.perPage-k)
	o := s.hdr + k*s.slot
	if chunk == s.slot {
		n = copy(pg[o:o+m*s.slot], p)
	} else {
		for j := 0; j < m && n < len(p); j++ {
			n += copy(pg[o+j*s.slot:o+j*s.slot+chunk], p[n:])
		}
	}
	used = max(1, (n+chunk-1)/chunk)
	for j := k; j < k+used-1; j++ {
		pg[2*j], pg[2*j+1] = byte(chunk), byte(chunk>>8)
	}
	last := n - (used-1)*chunk
	j := k + used - 1
	pg[2*j], pg[2*j+1] = byte(last), byte(last>>8)
	s.live[s.pageOf(i)] += uint16(used - 1)
	return n, used
}

// freeRun releases up to m consecutive slots from slot i on, stopping at the end of i's page;
// it returns the slots released and the bytes they held.
func (s *store) freeRun(i, m int) (freed, n int) {
	freed, n = s.lengths(i, m)
	p := s.pageOf(i)
	s.live[p] -= uint16(freed - 1)
	s.releasePage(p) // the last one: gives the page back when it was the last live slot
	return freed, n
}

// dropRun is freeRun without the byte count: it releases up to m consecutive live slots from
// slot i on, stopping at the end of i's page, and returns how many, in O(1).
func (s *store) dropRun(i, m int) int {
	p := s.pageOf(i)
	count := min(m, s.perPage-(i-p*s.perPage))
	s.live[p] -= uint16(count - 1)
	s.releasePage(p)
	return count
}

// lengths is freeRun without freeing: the slots it would release (up to m, stopping at the end
// of i's page) and the bytes they hold.
func (s *store) lengths(i, m int) (count, n int) {
	p := s.pageOf(i)
	k := i - p*s.perPage
	count = min(m, s.perPage-k)
	pg := s.pages[p]
	for j := k; j < k+count; j++ {
		n += int(pg[2*j]) | int(pg[2*j+1])<<8
	}
	return count, n
}

// release marks slot i free and gives its page back when no slot in it is live.
func (s *store) release(i int) { s.releasePage(s.pageOf(i)) }

// releasePage marks one slot of page p free and gives the page back when no slot in it is live.
func (s *store) releasePage(p int) {
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
