package losslist

import (
	"errors"
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

func TestSenderBasics(t *testing.T) {
	isn := seqno.MaxSeq - 10
	s := NewSender(isn, 100)
	if s.Window() != 128 || s.Base() != isn || s.Len() != 0 {
		t.Fatalf("window %d base %d len %d", s.Window(), s.Base(), s.Len())
	}
	if _, ok := s.PopFront(); ok {
		t.Fatal("pop from empty list")
	}
	// A range across the wrap, then one before it.
	if n, err := s.Insert(isn.Add(8), isn.Add(14)); n != 7 || err != nil {
		t.Fatalf("insert: %d %v", n, err)
	}
	if n, err := s.Insert(isn.Add(2), isn.Add(9)); n != 6 || err != nil {
		t.Fatalf("overlapping insert: %d %v", n, err)
	}
	if s.Len() != 13 {
		t.Fatalf("len %d", s.Len())
	}
	if _, err := s.Insert(isn.Add(5), isn.Add(4)); !errors.Is(err, ErrInverted) {
		t.Fatalf("inverted range: %v", err)
	}
	if _, err := s.Insert(isn.Add(5), isn.Add(128)); !errors.Is(err, ErrWindow) {
		t.Fatalf("beyond window: %v", err)
	}
	if n, err := s.Insert(isn.Add(-50), isn.Add(-1)); n != 0 || err != nil {
		t.Fatalf("acknowledged range: %d %v", n, err)
	}
	if n, err := s.Insert(isn.Add(-50), isn.Add(0)); n != 1 || err != nil {
		t.Fatalf("clipped range: %d %v", n, err)
	}
	for _, want := range []int{0, 2, 3} {
		if got, ok := s.PopFront(); !ok || got != isn.Add(want) {
			t.Fatalf("pop %d, want %d", got, isn.Add(want))
		}
	}
	s.RemoveBefore(isn.Add(12)) // acknowledges 4..11 (across the wrap)
	if got, _ := s.Front(); got != isn.Add(12) || s.Len() != 3 || s.Base() != isn.Add(12) {
		t.Fatalf("after ack: front %d len %d", got, s.Len())
	}
	s.RemoveBefore(isn) // backwards: no effect
	if s.Base() != isn.Add(12) {
		t.Fatal("base moved backwards")
	}
	if !s.Remove(isn.Add(13)) || s.Remove(isn.Add(13)) || s.Contains(isn.Add(13)) || !s.Contains(isn.Add(14)) {
		t.Fatal("Remove/Contains")
	}
	s.RemoveBefore(isn.Add(12 + 1000)) // far beyond the window clears everything
	if s.Len() != 0 {
		t.Fatalf("len %d after big ack", s.Len())
	}
	// Go-back-N of a whole window.
	b := s.Base()
	if n, err := s.Insert(b, b.Add(127)); n != 128 || err != nil {
		t.Fatalf("full window: %d %v", n, err)
	}
	for i := range 128 {
		if got, ok := s.PopFront(); !ok || got != b.Add(i) {
			t.Fatalf("pop %d: %d", i, got)
		}
	}
}

// senderModel is the obvious implementation: a set of sequence numbers.
type senderModel struct {
	base   seqno.Seq
	window int
	set    map[seqno.Seq]bool
}

func (m *senderModel) smallest() (seqno.Seq, bool) {
	best, ok := seqno.Seq(0), false
	for s := range m.set {
		if !ok || s.Less(best) {
			best, ok = s, true
		}
	}
	return best, ok
}

func FuzzSender(f *testing.F) {
	f.Add(uint32(seqno.MaxSeq-5), uint16(64), []byte{0, 3, 10, 2, 1, 5, 2, 0, 250, 20})
	f.Add(uint32(seqno.MaxSeq), uint16(25600), []byte{0, 0, 255, 2, 2, 2, 1, 200, 3, 7})
	f.Add(uint32(0), uint16(100), []byte{0, 130, 3, 0, 1, 1, 1, 9, 4, 2})
	f.Fuzz(func(t *testing.T, isn uint32, window uint16, ops []byte) {
		base := seqno.SeqFromWire(isn)
		if isn&0x80000000 != 0 { // half the inputs start just before the wrap
			base = seqno.MaxSeq.Add(-int(isn % 1024))
		}
		s := NewSender(base, int(window))
		m := &senderModel{base: base, window: s.Window(), set: map[seqno.Seq]bool{}}
		w := s.Window()
		for len(ops) >= 3 {
			op, a, b := ops[0]%5, int(ops[1]), int(ops[2])
			ops = ops[3:]
			switch op {
			case 0: // insert, offsets relative to base, sometimes outside
				off := (a*w)/200 - 8
				first := m.base.Add(off)
				last := first.Add(b*w/256 - 4)
				n, err := s.Insert(first, last)
				want, wantErr := 0, error(nil)
				switch {
				case seqno.Offset(first, last) < 0:
					wantErr = ErrInverted
				case seqno.Offset(m.base, last) < 0:
				case seqno.Offset(m.base, last) >= w:
					wantErr = ErrWindow
				default:
					for q := seqno.Max(first, m.base); ; q = q.Inc() {
						if !m.set[q] {
							m.set[q] = true
							want++
						}
						if q == last {
							break
						}
					}
				}
				if n != want || err != wantErr {
					t.Fatalf("Insert(%d,%d) base %d = %d,%v want %d,%v", first, last, m.base, n, err, want, wantErr)
				}
			case 1: // ack
				ack := m.base.Add(a*w/128 - 16)
				s.RemoveBefore(ack)
				if seqno.Offset(m.base, ack) > 0 {
					for q := range m.set {
						if q.Less(ack) {
							delete(m.set, q)
						}
					}
					m.base = ack
				}
			case 2: // pop
				got, ok := s.PopFront()
				want, wok := m.smallest()
				if ok != wok || got != want {
					t.Fatalf("PopFront = %d,%v want %d,%v", got, ok, want, wok)
				}
				delete(m.set, want)
			case 3: // remove
				q := m.base.Add(a*w/200 - 8)
				if s.Remove(q) != m.set[q] {
					t.Fatalf("Remove(%d)", q)
				}
				delete(m.set, q)
			case 4: // front and contains
				got, ok := s.Front()
				want, wok := m.smallest()
				if ok != wok || got != want {
					t.Fatalf("Front = %d,%v want %d,%v", got, ok, want, wok)
				}
				q := m.base.Add(a*w/200 - 8)
				if s.Contains(q) != m.set[q] {
					t.Fatalf("Contains(%d)", q)
				}
			}
			if s.Len() != len(m.set) || s.Base() != m.base {
				t.Fatalf("Len %d want %d, base %d want %d", s.Len(), len(m.set), s.Base(), m.base)
			}
		}
	})
}

func BenchmarkSenderInsertPop(b *testing.B) {
	s := NewSender(seqno.MaxSeq-1000, 25600)
	next := s.Base()
	b.ReportAllocs()
	for b.Loop() {
		// One lost packet in every 8, reported, retransmitted and acknowledged.
		if _, err := s.Insert(next, next); err != nil {
			b.Fatal(err)
		}
		if _, ok := s.PopFront(); !ok {
			b.Fatal("empty")
		}
		next = next.Add(8)
		s.RemoveBefore(next)
	}
	b.ReportMetric(float64(s.Window()/8), "bytes/list")
}
