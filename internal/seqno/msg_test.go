package seqno

import (
	"testing"
	"testing/quick"
)

func refMsgOff(a, b int32) int32 {
	d := a - b
	if d < 0 {
		d = -d
	}
	if d < 0x0FFFFFFF+1 {
		return b - a
	}
	if a < b {
		return b - a - 0x1FFFFFFF - 1
	}
	return b - a + 0x1FFFFFFF + 1
}

func TestMsgAgainstReference(t *testing.T) {
	f := func(x, y uint32, near bool) bool {
		a, b := MsgFromWire(x), MsgFromWire(y)
		if near { // concentrate around the wrap
			a, b = MaxMsg.Add(int(x%64)-32), MaxMsg.Add(int(y%64)-32)
		}
		o := MsgOffset(a, b)
		if o != int(refMsgOff(int32(a), int32(b))) || a.Add(o) != b || MsgOffset(b, a) != -o {
			t.Errorf("MsgOffset(%d,%d)=%d", a, b, o)
			return false
		}
		return MsgCmp(a, b) == map[bool]int{true: -1, false: 1}[o > 0] || o == 0 && MsgCmp(a, b) == 0
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 100000}); err != nil {
		t.Fatal(err)
	}
}

func TestMsgNext(t *testing.T) {
	tests := []struct{ in, want Msg }{
		{0, 1}, {1, 2}, {MaxMsg - 2, MaxMsg - 1}, {MaxMsg - 1, 1}, {MaxMsg, 1},
	}
	for _, tt := range tests {
		if got := tt.in.Next(); got != tt.want {
			t.Errorf("%d.Next()=%d want %d", tt.in, got, tt.want)
		}
	}
	if MsgFromWire(0x80000001) != 1 || MsgFromWire(0xFFFFFFFF) != MaxMsg || !MaxMsg.Valid() || Msg(MaxMsg+1).Valid() {
		t.Error("MsgFromWire/Valid")
	}
	if !Msg(MaxMsg).Less(3) || Msg(3).Less(MaxMsg) {
		t.Error("Less across wrap")
	}
}
