package buffer

import (
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// pageOf must equal i / perPage for every slot size and every slot index a buffer can have.
func TestStorePageOf(t *testing.T) {
	for slot := 1; slot <= maxSlot; slot += 1 + slot/64 {
		var s store
		s.init(1, slot)
		check := func(i int) {
			if got, want := s.pageOf(i), i/s.perPage; got != want {
				t.Fatalf("slot %d: pageOf(%d) = %d want %d", slot, i, got, want)
			}
		}
		for i := range 3 * s.perPage {
			check(i)
		}
		for _, i := range []int{1<<29 - 1, 1 << 29, 1<<31 - 1, 1<<40 + 12345, 1<<62 - 1} {
			check(i)
		}
	}
}

// The largest slot still fits a page with its length prefix.
func TestStoreLargestSlot(t *testing.T) {
	b := NewRecvBuffer(4, 1<<20, 0)
	defer b.Release()
	if b.PayloadSize() != maxSlot || b.st.perPage != 1 {
		t.Fatalf("payload %d, %d per page", b.PayloadSize(), b.st.perPage)
	}
	p := make([]byte, maxSlot)
	p[maxSlot-1] = 7
	for s := range 4 {
		if err := b.Insert(seqno.Seq(s), p); err != nil {
			t.Fatal(err)
		}
	}
	q := make([]byte, 4*maxSlot)
	if n := b.Read(q); n != 4*maxSlot || q[4*maxSlot-1] != 7 {
		t.Fatalf("read %d", n)
	}
}
