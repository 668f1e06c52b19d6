package congestion

import "testing"

func TestSeqHelpers(t *testing.T) {
	for _, c := range []struct {
		a, b uint32
		off  int64
	}{
		{5, 10, 5},
		{10, 5, -5},
		{0x7FFFFFFF, 0, 1}, // wrap
		{0, 0x7FFFFFFF, -1},
		{0x80000005, 10, 5}, // bit 31 is masked off
		{0, 0x3FFFFFFF, 0x3FFFFFFF},
	} {
		if got := seqOffset(c.a, c.b); got != c.off {
			t.Errorf("seqOffset(%#x, %#x) = %d, want %d", c.a, c.b, got, c.off)
		}
		if got := seqAfter(c.b, c.a); got != (c.off > 0) {
			t.Errorf("seqAfter(%#x, %#x) = %v", c.b, c.a, got)
		}
	}
	if seqDec(0) != 0x7FFFFFFF || seqDec(7) != 6 {
		t.Error("seqDec")
	}
}
