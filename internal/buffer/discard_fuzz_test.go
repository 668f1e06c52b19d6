package buffer

import (
	"testing"

	"github.com/udtgo/udt/internal/seqno"
)

// FuzzDiscardAccounting checks that every packet InsertMessage accepted is, at any moment, exactly one
// of: still held (Stored), read (ReadMessage, 4 bytes a packet here), or discarded unread
// (Discarded: its message given up by Drop, or broken). Drop requests of any range and number,
// across the wrap.
func FuzzDiscardAccounting(f *testing.F) {
	f.Add([]byte{0, 4, 0xc0, 1, 2, 40, 0, 0})
	f.Add([]byte{0, 5, 0x80, 1, 0, 4, 0x40, 1, 2, 40, 0, 0})
	f.Add([]byte{0, 6, 0x80, 2, 0, 7, 0x40, 2, 1, 6, 1, 2, 2, 40})
	f.Add([]byte{0, 4, 0xa0, 3, 0, 5, 0x60, 3, 2, 3, 0, 0, 2, 40})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const capacity = 16
		b := NewMessageRecvBuffer(capacity, 4, seqno.MaxSeq-5)
		accepted, read := 0, 0
		buf := make([]byte, 4*capacity+8)
		for len(ops) >= 4 {
			op, x, y, z := ops[0], ops[1], ops[2], ops[3]
			ops = ops[4:]
			seq := b.ReadSeq().Add(int(x%24) - 4)
			no := seqno.Msg(1 + z%5)
			switch op % 3 {
			case 0:
				w1 := uint32(y)>>6<<ffShift | uint32(y>>5&1)<<29 | uint32(no)
				if b.InsertMessage(seq, w1, msgPkt(seq, w1)) == nil {
					accepted++
				}
			case 1:
				b.Drop(seq, seq.Add(int(y%6)), no)
			case 2:
				n, _ := b.ReadMessage(buf[:int(y)%len(buf)])
				read += n / 4
			}
			if got := b.Stored() + read + b.Discarded(); got != accepted {
				t.Fatalf("%d accepted, but %d held + %d read + %d discarded = %d", accepted, b.Stored(), read, b.Discarded(), got)
			}
		}
	})
}
