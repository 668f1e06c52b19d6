package losslist

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/seqno"
)

// RemoveRange on both lists against a set model, across the sequence wrap.
func TestRemoveRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		base := seqno.MaxSeq - seqno.Seq(r.IntN(300))
		snd := NewSender(base, 512)
		rcv := NewReceiver(512)
		model := map[seqno.Seq]bool{}
		now := time.Unix(0, 0)
		at := 0
		for range 20 { // receiver gaps in order, the same numbers in the sender list
			at += 1 + r.IntN(10)
			n := 1 + r.IntN(8)
			first := base.Add(at)
			last := first.Add(n - 1)
			if _, err := rcv.Insert(first, last, now); err != nil {
				t.Fatal(err)
			}
			snd.Insert(first, last)
			for k := range n {
				model[first.Add(k)] = true
			}
			at += n
		}
		for range 10 {
			first := base.Add(r.IntN(at + 10))
			last := first.Add(r.IntN(40))
			want := 0
			for s := first; ; s = s.Inc() {
				if model[s] {
					want++
					delete(model, s)
				}
				if s == last {
					break
				}
			}
			if got := rcv.RemoveRange(first, last); got != want {
				t.Fatalf("round %d: receiver removed %d, want %d", round, got, want)
			}
			if got := snd.RemoveRange(first, last); got != want {
				t.Fatalf("round %d: sender removed %d, want %d", round, got, want)
			}
			if rcv.Len() != len(model) || snd.Len() != len(model) {
				t.Fatalf("round %d: lengths %d/%d, want %d", round, rcv.Len(), snd.Len(), len(model))
			}
			for s := range model {
				if !rcv.Contains(s) || !snd.Contains(s) {
					t.Fatalf("round %d: %d lost", round, s)
				}
			}
		}
	}
}
