package simnet

import "testing"

func FuzzUDTControlType(f *testing.F) {
	f.Add([]byte{0x80, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x00, 0x00, 0, 0})
	f.Add([]byte{0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	nak := DropUDTControl(UDTNAK)
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, ctrl := UDTControlType(b)
		data := IsUDTData(b)
		if ctrl && data {
			t.Fatal("both control and data")
		}
		if len(b) >= 16 && !ctrl && !data {
			t.Fatal("a full header is neither control nor data")
		}
		if len(b) < 16 && (ctrl || data) {
			t.Fatal("a short datagram classified")
		}
		if typ > 0x7FFF || (!ctrl && typ != 0) {
			t.Fatalf("type %#x", typ)
		}
		if nak(b) != (ctrl && typ == UDTNAK) {
			t.Fatal("DropUDTControl(UDTNAK) disagrees with UDTControlType")
		}
	})
}
