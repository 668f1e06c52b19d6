package buffer_test

import (
	"fmt"

	"github.com/udtgo/udt/internal/buffer"
	"github.com/udtgo/udt/internal/seqno"
)

func Example() {
	payload := buffer.PayloadSize(1500) // 1456
	isn := seqno.MaxSeq                 // the next number wraps to 0
	snd := buffer.NewSendBuffer(1<<20, payload, isn)
	rcv := buffer.NewRecvBuffer(8192, payload, isn)
	defer snd.Release()
	defer rcv.Release()

	snd.Write([]byte("hello, "))
	snd.Write([]byte("world")) // coalesces with the unsent first packet
	for {
		seq, p, msg, ok := snd.Next()
		if !ok {
			break
		}
		fmt.Println("send", seq, msg, len(p))
		if err := rcv.Insert(seq, p); err != nil {
			fmt.Println(err)
		}
	}
	buf := make([]byte, 64)
	n := rcv.Read(buf)
	fmt.Printf("%q ack=%d\n", buf[:n], rcv.AckSeq())
	freed, _ := snd.Ack(rcv.AckSeq())
	fmt.Println("freed", freed, "free", snd.Free())
	// Output:
	// send 2147483647 1 12
	// "hello, world" ack=0
	// freed 1 free 1048320
}
