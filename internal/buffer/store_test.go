package buffer

import "testing"

// pageOf must equal i / perPage for every slot size and every slot index a buffer can have.
func TestStorePageOf(t *testing.T) {
	for slot := 1; slot <= 65535; slot += 1 + slot/64 {
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
