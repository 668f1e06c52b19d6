package arrival_test

import (
	"fmt"
	"time"

	"github.com/udtgo/udt/internal/arrival"
	"github.com/udtgo/udt/internal/seqno"
)

func Example() {
	start := time.Unix(0, 0)
	e := arrival.New(start)
	fmt.Println("start:", e.RecvSpeed(), e.Bandwidth())
	now := start
	// 10 000 packets/s, with every 16th packet and its successor sent back to
	// back over a link that needs 8 µs per packet.
	for seq := seqno.Seq(0); seq < 2000; seq++ {
		if seq&0xF == 1 {
			now = now.Add(8 * time.Microsecond)
		} else {
			now = now.Add(100 * time.Microsecond)
		}
		e.OnArrival(now, seq)
	}
	fmt.Println("later:", e.RecvSpeed(), e.Bandwidth())
	// Output:
	// start: 1 1000
	// later: 10000 125000
}
