package seqno_test

import (
	"fmt"

	"github.com/udtgo/udt/internal/seqno"
)

func Example() {
	last := seqno.MaxSeq - 1 // an ISN close to the wrap
	next := last.Add(3)
	fmt.Println(next, seqno.Offset(last, next), seqno.Len(last, next), last.Less(next))
	// Output: 1 3 4 true
}

func ExampleOffset() {
	fmt.Println(seqno.Offset(seqno.MaxSeq, 5), seqno.Offset(5, seqno.MaxSeq))
	// Output: 6 -6
}

func ExampleCmp() {
	fmt.Println(seqno.Cmp(10, 20), seqno.Cmp(0, seqno.MaxSeq), seqno.Cmp(7, 7))
	// Output: -1 1 0
}

func ExampleSeqFromWire() {
	w0 := uint32(0x2a4df00f) // first word of a captured data packet (spec §1.2)
	fmt.Println(seqno.SeqFromWire(w0), seqno.SeqFromWire(0x80000000|w0))
	// Output: 709750799 709750799
}

func ExampleMsg_Next() {
	fmt.Println(seqno.Msg(1).Next(), (seqno.MaxMsg - 1).Next())
	// Output: 2 1
}
