package udpio_test

import (
	"fmt"
	"net"

	"github.com/udtgo/udt/internal/udpio"
)

// A sender carves its packet buffers from one array at a fixed stride so that a batch can go out
// as one GSO send; the reader passes a slice of Messages with buffers one byte larger than the
// largest datagram it accepts.
func Example() {
	const pkt = 1472 // UDP payload of a 1500-byte MSS
	rx, _ := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	defer rx.Close()
	tx, _ := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	defer tx.Close()
	r, s := udpio.New(rx), udpio.New(tx)

	arena := make([]byte, 32*pkt)
	bufs := make([][]byte, 32)
	for i := range bufs {
		bufs[i] = arena[i*pkt : (i+1)*pkt : (i+1)*pkt]
		bufs[i][0] = byte(i)
	}
	bufs[31] = bufs[31][:100] // the last may be shorter
	n, err := s.WriteBatch(bufs, rx.LocalAddr().(*net.UDPAddr).AddrPort())
	fmt.Println("sent", n, err)

	msgs := make([]udpio.Message, 64)
	for i := range msgs {
		msgs[i].Buf = make([]byte, pkt+1)
	}
	from := tx.LocalAddr().(*net.UDPAddr).AddrPort()
	total, bytes := 0, 0
	for total < 32 {
		n, err := r.ReadBatch(msgs)
		if err != nil {
			panic(err)
		}
		for _, m := range msgs[:n] {
			if m.Truncated || m.Addr != from || int(m.Data[0]) != total {
				panic("unexpected datagram")
			}
			total++
			bytes += m.N
		}
	}
	fmt.Println("received", total, "datagrams,", bytes, "bytes from", from.Addr())
	// Output:
	// sent 32 <nil>
	// received 32 datagrams, 45732 bytes from 127.0.0.1
}
