package seqno

import (
	"math"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
)

// Reference models transcribed from the C++ definitions in spec §1.6, using
// int32 arithmetic as the reference does.
func refCmp(a, b int32) int32 {
	d := a - b
	if d < 0 {
		d = -d
	}
	if d < 0x3FFFFFFF+1 {
		return a - b
	}
	return b - a
}

func refLen(a, b int32) int32 {
	if a <= b {
		return b - a + 1
	}
	return b - a + 0x7FFFFFFF + 2
}

func refOff(a, b int32) int32 {
	d := a - b
	if d < 0 {
		d = -d
	}
	if d < 0x3FFFFFFF+1 {
		return b - a
	}
	if a < b {
		return b - a - 0x7FFFFFFF - 1
	}
	return b - a + 0x7FFFFFFF + 1
}

func refInc(a, n int32) int32 {
	if 0x7FFFFFFF-a >= n {
		return a + n
	}
	return a - 0x7FFFFFFF + n - 1
}

func sign(x int64) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// edgy returns a sequence number biased toward the interesting places: the
// wrap point, 0, and the 2^30 threshold.
func edgy(r *rand.Rand) Seq {
	centres := [...]int64{0, int64(MaxSeq), SeqThreshold, SeqThreshold - 1, int64(MaxSeq) / 3}
	switch r.Intn(3) {
	case 0:
		return Seq(r.Uint32() & uint32(MaxSeq))
	default:
		c := centres[r.Intn(len(centres))]
		return Seq(uint32(c+int64(r.Intn(65))-32) & uint32(MaxSeq))
	}
}

// Generate implements quick.Generator.
func (Seq) Generate(r *rand.Rand, _ int) reflect.Value { return reflect.ValueOf(edgy(r)) }

func checkPair(t *testing.T, a, b Seq) {
	t.Helper()
	ia, ib := int32(a), int32(b)
	if got, want := Cmp(a, b), sign(int64(refCmp(ia, ib))); got != want {
		t.Fatalf("Cmp(%d,%d)=%d want %d", a, b, got, want)
	}
	if got, want := Offset(a, b), int(refOff(ia, ib)); got != want {
		t.Fatalf("Offset(%d,%d)=%d want %d", a, b, got, want)
	}
	if got, want := int64(Len(a, b)), int64(uint32(refLen(ia, ib))); got != want {
		t.Fatalf("Len(%d,%d)=%d want %d", a, b, got, want)
	}
	o := Offset(a, b)
	if a.Add(o) != b {
		t.Fatalf("%d.Add(Offset=%d)=%d want %d", a, o, a.Add(o), b)
	}
	if Offset(b, a) != -o {
		t.Fatalf("Offset not antisymmetric for %d,%d: %d vs %d", a, b, o, Offset(b, a))
	}
	if o < -SeqThreshold || o > SeqThreshold {
		t.Fatalf("Offset(%d,%d)=%d out of range", a, b, o)
	}
	if a.Less(b) != (Cmp(a, b) < 0) || a.LessEq(b) != (Cmp(a, b) <= 0) {
		t.Fatalf("Less/LessEq inconsistent with Cmp for %d,%d", a, b)
	}
	if Max(a, b) != map[bool]Seq{true: b, false: a}[a.Less(b)] || Min(a, b) != map[bool]Seq{true: a, false: b}[a.Less(b)] {
		t.Fatalf("Min/Max wrong for %d,%d", a, b)
	}
}

func TestSeqAgainstReference(t *testing.T) {
	f := func(a, b Seq) bool { checkPair(t, a, b); return true }
	if err := quick.Check(f, &quick.Config{MaxCount: 100000}); err != nil {
		t.Fatal(err)
	}
}

func TestSeqIncDecAdd(t *testing.T) {
	f := func(a Seq, n uint32) bool {
		n &= uint32(MaxSeq)
		if a.Inc() != Seq(refInc(int32(a), 1)) || a.Inc().Dec() != a || a.Dec().Inc() != a {
			return false
		}
		if a.Add(int(n)) != Seq(refInc(int32(a), int32(n))) {
			return false
		}
		return a.Add(int(n)).Add(-int(n)) == a
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 100000}); err != nil {
		t.Fatal(err)
	}
}

func TestSeqTable(t *testing.T) {
	tests := []struct {
		a, b    Seq
		cmp     int
		off     int
		length  int64
		comment string
	}{
		{0, 0, 0, 0, 1, "equal"},
		{MaxSeq, 0, -1, 1, 2, "wrap: 0 follows MaxSeq"},
		{0, MaxSeq, 1, -1, 1 << 31, "0 is after MaxSeq"},
		{MaxSeq - 99, 100, -1, 200, 201, "range across the wrap"},
		{5, 10, -1, 5, 6, "plain"},
		{0, SeqThreshold - 1, -1, SeqThreshold - 1, SeqThreshold, "just under the threshold"},
		{0, SeqThreshold, 1, -SeqThreshold, SeqThreshold + 1, "at the threshold the smaller number is later"},
		{SeqThreshold, 0, -1, SeqThreshold, SeqThreshold + 1, "tie-break, reversed"},
	}
	for _, tt := range tests {
		if got := Cmp(tt.a, tt.b); got != tt.cmp {
			t.Errorf("%s: Cmp(%d,%d)=%d want %d", tt.comment, tt.a, tt.b, got, tt.cmp)
		}
		if got := Offset(tt.a, tt.b); got != tt.off {
			t.Errorf("%s: Offset(%d,%d)=%d want %d", tt.comment, tt.a, tt.b, got, tt.off)
		}
		if tt.length > math.MaxInt {
			continue // 32-bit platforms
		}
		if got := Len(tt.a, tt.b); int64(got) != tt.length {
			t.Errorf("%s: Len(%d,%d)=%d want %d", tt.comment, tt.a, tt.b, got, tt.length)
		}
		checkPair(t, tt.a, tt.b)
	}
	if MaxSeq.Inc() != 0 || Seq(0).Dec() != MaxSeq || MaxSeq.Add(2) != 1 || Seq(1).Add(-2) != MaxSeq {
		t.Error("Inc/Dec/Add wrap")
	}
}

func TestSeqWire(t *testing.T) {
	if SeqFromWire(0xFFFFFFFF) != MaxSeq || SeqFromWire(0x2a4df00f) != 0x2a4df00f {
		t.Error("SeqFromWire mask")
	}
	if _, err := ParseSeq(0x80000000); err == nil {
		t.Error("ParseSeq accepted bit 31")
	}
	if s, err := ParseSeq(uint32(MaxSeq)); err != nil || s != MaxSeq || !s.Valid() {
		t.Error("ParseSeq rejected MaxSeq")
	}
	if Seq(0x80000000).Valid() {
		t.Error("Valid accepted bit 31")
	}
	if MaxSeq.String() != "2147483647" {
		t.Error(MaxSeq.String())
	}
}

func FuzzSeq(f *testing.F) {
	f.Add(uint32(0), uint32(0), int64(0))
	f.Add(uint32(MaxSeq), uint32(0), int64(1))
	f.Add(uint32(0), uint32(SeqThreshold), int64(-1))
	f.Add(uint32(0xFFFFFFFF), uint32(0x80000000), int64(1)<<40)
	f.Fuzz(func(t *testing.T, x, y uint32, n int64) {
		a, b := SeqFromWire(x), SeqFromWire(y)
		checkPair(t, a, b)
		c := a.Add(int(n))
		if !c.Valid() {
			t.Fatalf("Add produced invalid %#x", uint32(c))
		}
		if c.Add(-int(n)) != a {
			t.Fatalf("Add not invertible: %d + %d", a, n)
		}
	})
}

func BenchmarkOffset(b *testing.B) {
	var s int
	x := Seq(MaxSeq - 10)
	for i := 0; b.Loop(); i++ {
		s += Offset(x, Seq(uint32(i)&uint32(MaxSeq)))
	}
	_ = s
}
