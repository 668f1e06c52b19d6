package losslist_test

import (
	"fmt"
	"time"

	"github.com/udtgo/udt/internal/losslist"
	"github.com/udtgo/udt/internal/seqno"
)

func ExampleSender() {
	isn := seqno.MaxSeq - 1
	l := losslist.NewSender(isn, 25600)
	l.Insert(isn.Add(1), isn.Add(3)) // NAK: 2147483647..1 lost
	l.RemoveBefore(isn.Add(2))       // ACK: everything before 0 arrived
	for {
		seq, ok := l.PopFront()
		if !ok {
			break
		}
		fmt.Println("retransmit", seq)
	}
	// Output:
	// retransmit 0
	// retransmit 1
}

func ExampleReceiver_Due() {
	t0 := time.Unix(0, 0)
	l := losslist.NewReceiver(25600)
	l.Insert(100, 104, t0) // gap detected, immediate NAK sent at t0
	l.Remove(102)          // a retransmission arrived
	nak := l.Due(t0.Add(300*time.Millisecond), 300*time.Millisecond, nil, 0)
	fmt.Println(nak, l.Len())
	// Output: [{100 101} {103 104}] 4
}
