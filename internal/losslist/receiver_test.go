package losslist

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ranges(r *Receiver) []Range {
	var out []Range
	for _, e := range r.Entries(nil) {
		out = append(out, e.Range)
	}
	return out
}

func eqRanges(a, b []Range) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReceiverBasics(t *testing.T) {
	isn := seqno.MaxSeq - 3
	r := NewReceiver(1000)
	if _, ok := r.First(); ok {
		t.Fatal("First on empty list")
	}
	// Packets isn, isn+1 arrive, then isn+5: gap isn+2..isn+4 crosses the wrap.
	if n, err := r.Insert(isn.Add(2), isn.Add(4), t0); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	if n, err := r.Insert(isn.Add(7), isn.Add(9), t0.Add(time.Millisecond)); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	if f, _ := r.First(); f != isn.Add(2) || r.Len() != 6 || r.Ranges() != 2 {
		t.Fatalf("first %d len %d ranges %d", f, r.Len(), r.Ranges())
	}
	// A late packet splits the first range.
	if !r.Remove(isn.Add(3)) || r.Remove(isn.Add(3)) || r.Remove(isn.Add(5)) {
		t.Fatal("Remove")
	}
	want := []Range{{isn.Add(2), isn.Add(2)}, {isn.Add(4), isn.Add(4)}, {isn.Add(7), isn.Add(9)}}
	if got := ranges(r); !eqRanges(got, want) {
		t.Fatalf("ranges %v want %v", got, want)
	}
	if _, err := r.Insert(isn.Add(5), isn.Add(4), t0); !errors.Is(err, ErrInverted) {
		t.Fatal(err)
	}
	if _, err := r.Insert(isn.Add(900), isn.Add(1002), t0); !errors.Is(err, ErrWindow) {
		t.Fatal(err)
	}
	if _, err := r.Insert(isn.Add(-1000), isn.Add(-999), t0); !errors.Is(err, ErrWindow) {
		t.Fatal(err)
	}
	// Periodic re-report: only ranges reported ≥ 10 ms ago, and only 2 per call.
	dst := make([]Range, 0, 8)
	if got := r.Due(t0.Add(9*time.Millisecond), 10*time.Millisecond, dst, 0); len(got) != 0 {
		t.Fatalf("due too early: %v", got)
	}
	got := r.Due(t0.Add(10*time.Millisecond), 10*time.Millisecond, dst, 0)
	if !eqRanges(got, want[:2]) {
		t.Fatalf("due %v want %v", got, want[:2])
	}
	got = r.Due(t0.Add(12*time.Millisecond), 10*time.Millisecond, dst, 0)
	if !eqRanges(got, want[2:]) {
		t.Fatalf("due %v want %v", got, want[2:])
	}
	got = r.Due(t0.Add(30*time.Millisecond), 10*time.Millisecond, dst, 2)
	if !eqRanges(got, want[:2]) {
		t.Fatalf("limited due %v", got)
	}
	es := r.Entries(nil)
	if es[0].Reports != 3 || !es[0].LastReport.Equal(t0.Add(30*time.Millisecond)) || es[2].Reports != 2 {
		t.Fatalf("entries %+v", es)
	}
	// ACK point moves past the first two ranges and into the third.
	r.RemoveBefore(isn.Add(8))
	if f, _ := r.First(); f != isn.Add(8) || r.Len() != 2 || r.Ranges() != 1 {
		t.Fatalf("after RemoveBefore: first %d len %d", f, r.Len())
	}
	// Inserting over existing ranges adds only what is new and keeps history.
	if n, err := r.Insert(isn.Add(6), isn.Add(12), t0.Add(time.Second)); n != 5 || err != nil {
		t.Fatal(n, err)
	}
	if got := ranges(r); !eqRanges(got, []Range{{isn.Add(6), isn.Add(7)}, {isn.Add(8), isn.Add(9)}, {isn.Add(10), isn.Add(12)}}) {
		t.Fatalf("ranges %v", got)
	}
	r.RemoveBefore(isn.Add(100))
	if r.Len() != 0 || r.Ranges() != 0 {
		t.Fatal("not empty")
	}
}

// recvModel tracks each missing number with its report history.
type recvModel struct {
	set map[seqno.Seq]rep
}

type rep struct {
	at  time.Time // last report (detection while n == 0)
	n   int
	det time.Time
	tag uint32
}

func (m *recvModel) sorted(from seqno.Seq) []seqno.Seq {
	var out []seqno.Seq
	for q := range m.set {
		out = append(out, q)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Less(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func FuzzReceiver(f *testing.F) {
	f.Add(uint32(seqno.MaxSeq-20), uint16(64), []byte{0, 3, 10, 1, 5, 0, 0, 30, 4, 2, 4, 4, 3, 40, 0})
	f.Add(uint32(seqno.MaxSeq), uint16(300), []byte{0, 1, 200, 1, 100, 0, 1, 50, 0, 4, 9, 1, 2, 0, 0})
	f.Add(uint32(5), uint16(10), []byte{0, 0, 9, 0, 2, 3, 1, 1, 0, 1, 4, 0, 3, 7, 0})
	f.Fuzz(func(t *testing.T, isn uint32, window uint16, ops []byte) {
		base := seqno.SeqFromWire(isn)
		if isn&0x80000000 != 0 { // half the inputs start just before the wrap
			base = seqno.MaxSeq.Add(-int(isn % 1024))
		}
		w := max(1, int(window)%2048)
		r := NewReceiver(w)
		m := &recvModel{set: map[seqno.Seq]rep{}}
		now := t0
		var dst []Range
		for len(ops) >= 3 {
			op, a, b := ops[0]%8, int(ops[1]), int(ops[2])
			ops = ops[3:]
			switch op {
			case 0, 5: // insert a gap, reported (0) or pending (5)
				first := base.Add(a*w/128 - w/4)
				last := first.Add(b*w/256 - 2)
				reports, tag := 1, uint32(0)
				if op == 5 {
					tag = uint32(a + b)
				}
				var n int
				var err error
				if op == 0 {
					n, err = r.Insert(first, last, now)
				} else {
					n, err = r.Detect(first, last, now, uint32(a+b))
					reports = 0
				}
				keys := m.sorted(base)
				want, wantErr := 0, error(nil)
				lo, hi := first, last
				if len(keys) > 0 {
					lo, hi = seqno.Min(lo, keys[0]), seqno.Max(hi, keys[len(keys)-1])
				}
				switch {
				case seqno.Offset(first, last) < 0:
					wantErr = ErrInverted
				case seqno.Offset(lo, hi) >= w || seqno.Offset(lo, hi) < 0:
					wantErr = ErrWindow
				default:
					for q := first; ; q = q.Inc() {
						if _, ok := m.set[q]; !ok {
							m.set[q] = rep{now, reports, now, tag}
							want++
						}
						if q == last {
							break
						}
					}
				}
				if n != want || err != wantErr {
					t.Fatalf("Insert(%d,%d) = %d,%v want %d,%v", first, last, n, err, want, wantErr)
				}
			case 1: // a packet arrives
				q := base.Add(a*w/128 - w/4)
				me, had := m.set[q]
				if b&1 == 0 {
					if r.Remove(q) != had || r.Contains(q) {
						t.Fatalf("Remove(%d) want %v", q, had)
					}
				} else {
					e, ok := r.Take(q)
					if ok != had || r.Contains(q) || ok && (e.Reports != me.n || !e.Detected.Equal(me.det) || !e.LastReport.Equal(me.at) || e.Tag != me.tag) {
						t.Fatalf("Take(%d) = %+v, %v want %+v, %v", q, e, ok, me, had)
					}
				}
				delete(m.set, q)
			case 2: // ACK point
				ack := base.Add(a*w/128 - w/4)
				r.RemoveBefore(ack)
				for q := range m.set {
					if q.Less(ack) {
						delete(m.set, q)
					}
				}
			case 3: // time passes
				now = now.Add(time.Duration(a) * time.Millisecond)
			case 4: // periodic re-report
				interval := time.Duration(b) * time.Millisecond
				limit := a % 4
				dst = r.Due(now, interval, dst[:0], limit)
				if limit > 0 && len(dst) > limit {
					t.Fatalf("Due returned %d > limit %d", len(dst), limit)
				}
				got := map[seqno.Seq]bool{}
				for _, rg := range dst {
					for q := rg.First; ; q = q.Inc() {
						e, ok := m.set[q]
						if !ok || e.n == 0 || now.Sub(e.at) < interval {
							t.Fatalf("Due returned %d (in model %v, last %v, reports %d)", q, ok, e.at, e.n)
						}
						got[q] = true
						m.set[q] = rep{now, e.n + 1, e.det, e.tag}
						if q == rg.Last {
							break
						}
					}
				}
				if limit == 0 || len(dst) < limit {
					for q, e := range m.set {
						if !got[q] && e.n > 0 && now.Sub(e.at) >= interval {
							t.Fatalf("Due missed %d", q)
						}
					}
				}
			case 7: // a message drop request gives a range up
				first := base.Add(a*w/128 - w/4)
				last := first.Add(b * w / 256)
				want := 0
				for q := range m.set {
					if seqno.Offset(first, q) >= 0 && seqno.Offset(q, last) >= 0 {
						delete(m.set, q)
						want++
					}
				}
				if n := r.RemoveRange(first, last); n != want {
					t.Fatalf("RemoveRange(%d, %d) = %d, want %d", first, last, n, want)
				}
			case 6: // gaps that outlived the reordering window
				wait := time.Duration(b) * time.Millisecond
				limit := a % 4
				dst = r.Pending(now, wait, dst[:0], limit)
				if limit > 0 && len(dst) > limit {
					t.Fatalf("Pending returned %d > limit %d", len(dst), limit)
				}
				got := map[seqno.Seq]bool{}
				for _, rg := range dst {
					for q := rg.First; ; q = q.Inc() {
						e, ok := m.set[q]
						if !ok || e.n != 0 || now.Sub(e.det) < wait {
							t.Fatalf("Pending returned %d (in model %v, detected %v, reports %d)", q, ok, e.det, e.n)
						}
						got[q] = true
						m.set[q] = rep{now, 1, e.det, e.tag}
						if q == rg.Last {
							break
						}
					}
				}
				if limit == 0 || len(dst) < limit {
					for q, e := range m.set {
						if !got[q] && e.n == 0 && now.Sub(e.det) >= wait {
							t.Fatalf("Pending missed %d", q)
						}
					}
				}
			}
			// Full comparison.
			keys := m.sorted(base)
			if r.Len() != len(keys) {
				t.Fatalf("Len %d want %d", r.Len(), len(keys))
			}
			f, ok := r.First()
			if ok != (len(keys) > 0) || ok && f != keys[0] {
				t.Fatalf("First %d,%v", f, ok)
			}
			var earliest time.Time
			for _, me := range m.set {
				if me.n == 0 && (earliest.IsZero() || me.det.Before(earliest)) {
					earliest = me.det
				}
			}
			if np, ok := r.NextPending(); ok != !earliest.IsZero() || ok && !np.Equal(earliest) {
				t.Fatalf("NextPending %v,%v want %v", np, ok, earliest)
			}
			i, pending := 0, 0
			for _, e := range r.Entries(nil) {
				if e.Reports == 0 {
					pending++
				}
				for q := e.First; ; q = q.Inc() {
					me := m.set[q]
					if i >= len(keys) || keys[i] != q || !me.at.Equal(e.LastReport) || me.n != e.Reports || !me.det.Equal(e.Detected) || me.tag != e.Tag {
						t.Fatalf("entry %+v disagrees with model at %d", e, q)
					}
					i++
					if q == e.Last {
						break
					}
				}
			}
			if pending != r.PendingLen() {
				t.Fatalf("PendingLen %d, entries say %d", r.PendingLen(), pending)
			}
		}
	})
}

func BenchmarkReceiverGapAndFill(b *testing.B) {
	r := NewReceiver(25600)
	next := seqno.MaxSeq - 1000
	dst := make([]Range, 0, 64)
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Every 10th packet lost, arriving 8 gaps later; re-report every 16 packets.
		if _, err := r.Insert(next, next, now); err != nil {
			b.Fatal(err)
		}
		if i >= 8 {
			r.Remove(next.Add(-80))
		}
		if i%16 == 0 {
			dst = r.Due(now, time.Millisecond, dst[:0], 0)
		}
		next = next.Add(10)
		now = now.Add(100 * time.Microsecond)
	}
}

// BenchmarkReceiverWorstCase fills a 25 600-packet window with 12 800
// single-packet gaps (every other packet lost) and fills them in random order:
// each Remove shifts up to half the ranges.
func BenchmarkReceiverWorstCase(b *testing.B) {
	const w = 25600
	r := NewReceiver(w)
	order := rand.New(rand.NewPCG(1, 1)).Perm(w / 2)
	base := seqno.MaxSeq - 100
	b.ReportAllocs()
	i := len(order)
	for b.Loop() {
		if i == len(order) {
			b.StopTimer()
			r.Clear()
			for k := range w / 2 {
				r.Insert(base.Add(2*k), base.Add(2*k), t0)
			}
			i = 0
			b.StartTimer()
		}
		if !r.Remove(base.Add(2 * order[i])) {
			b.Fatal("missing")
		}
		i++
	}
}
