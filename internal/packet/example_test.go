package packet_test

import (
	"fmt"

	"github.com/udtgo/udt/internal/packet"
)

// A receive path: classify, route by destination socket ID, decode into reused values.
func Example() {
	// The send side appends into a reused buffer.
	buf := make([]byte, 0, 1472)
	nak := packet.NAK{ControlHeader: packet.ControlHeader{DstSocketID: 0x0dd864b6},
		Ranges: []packet.SeqRange{{First: 1268895405, Last: 1268895409}}}
	buf, err := nak.AppendBinary(buf[:0])
	if err != nil {
		panic(err)
	}

	// The receive side.
	var (
		d    packet.Data
		ack  packet.ACK
		loss = packet.NAK{Ranges: make([]packet.SeqRange, 0, packet.MaxNAKRanges(packet.DefaultMSS))}
	)
	dst, err := packet.DestSocketID(buf)
	if err != nil {
		return // drop: shorter than a header
	}
	if !packet.IsControl(buf) {
		if d.Decode(buf) == nil {
			fmt.Println("data", d.Seq)
		}
		return
	}
	t, _ := packet.Type(buf)
	switch t {
	case packet.TypeACK:
		if ack.Decode(buf) == nil {
			fmt.Println("ack", ack.AckNo)
		}
	case packet.TypeNAK:
		if err := loss.Decode(buf); err != nil {
			fmt.Println("drop:", err)
			return
		}
		fmt.Printf("to %#x: %s %v (%d lost)\n", dst, t, loss.Ranges, loss.Ranges[0].Len())
	}
	// Output: to 0xdd864b6: nak [{1268895405 1268895409}] (5 lost)
}
