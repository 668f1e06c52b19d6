package losslist

import "github.com/udtgo/udt/internal/seqno"

// RemoveRange deletes first..last (inclusive, circular order; numbers outside the window are
// ignored) and returns how many were in the list: a message drop request gave them up (spec
// §2.6). It costs O(range/64).
func (s *Sender) RemoveRange(first, last seqno.Seq) int {
	if seqno.Offset(first, last) < 0 || s.n == 0 {
		return 0
	}
	if seqno.Offset(s.base, first) < 0 {
		first = s.base
	}
	if hi := s.base.Add(int(s.mask)); seqno.Offset(hi, last) > 0 {
		last = hi
	}
	if seqno.Offset(first, last) < 0 {
		return 0
	}
	removed := s.setRange(uint32(first)&s.mask, seqno.Len(first, last), false)
	s.n -= removed
	return removed
}

// RemoveRange deletes first..last (inclusive, circular order) and returns how many were missing:
// a message drop request gave them up (spec §2.6). It costs O(log R) plus the ranges removed.
func (r *Receiver) RemoveRange(first, last seqno.Seq) int {
	if seqno.Offset(first, last) < 0 {
		return 0
	}
	removed := 0
	for i := r.search(first); i < len(r.e); {
		e := &r.e[i]
		if last.Less(e.first) {
			break
		}
		switch {
		case first.LessEq(e.first) && e.last.LessEq(last): // wholly inside: delete it
			removed += seqno.Len(e.first, e.last)
			if e.reports == 0 {
				r.pending--
			}
			h := r.h
			if r.deleteAt(i); r.h > h {
				i++ // deleteAt shifted the ranges before i up by one: the next one is at i+1
			}
			continue
		case e.first.Less(first) && last.Less(e.last): // inside it: split
			removed += seqno.Len(first, last)
			tail := *e
			tail.first = last.Inc()
			e.last = first.Dec()
			r.countNew(tail.reports, 1)
			r.insertAt(i+1, tail)
			r.n -= removed
			return removed
		case e.first.Less(first): // its tail
			removed += seqno.Len(first, e.last)
			e.last = first.Dec()
		default: // its head
			removed += seqno.Len(e.first, last)
			e.first = last.Inc()
		}
		i++
	}
	r.n -= removed
	return removed
}
