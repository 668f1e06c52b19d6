package simnet_test

import (
	"fmt"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// A lossy, reordering pair for tests over a bad link. Outside a synctest bubble it runs on the
// real clock; the seeded losses are the same in every run.
func ExampleNewPair() {
	lossy := simnet.LinkConfig{Delay: time.Millisecond, Loss: 0.05, Reorder: 0.05, Duplicate: 0.01}
	p := simnet.NewPair(1, lossy, lossy)
	defer p.Close()

	for i := range 1000 {
		p.A.WriteTo([]byte{byte(i >> 8), byte(i)}, p.B.LocalAddr())
	}
	buf := make([]byte, 1500)
	got := 0
	for {
		p.B.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, _, err := p.B.ReadFrom(buf); err != nil {
			break // os.ErrDeadlineExceeded: the link is quiet
		}
		got++
	}
	s := p.AB.Stats()
	fmt.Println("sent", s.Sent, "lost", s.DroppedLoss, "duplicated", s.Duplicated, "received", got)
	// Output: sent 1000 lost 44 duplicated 9 received 965
}

// Two flows sharing a 100 Mbit/s bottleneck with 20 ms RTT and a one-BDP drop-tail queue.
func ExampleNewDumbbell() {
	const rate = 100_000_000
	rtt := 20 * time.Millisecond
	d := simnet.NewDumbbell(1, 2,
		simnet.LinkConfig{Rate: rate, Delay: rtt / 2, QueueBytes: simnet.BDP(rate, rtt), Overhead: 28, Loss: 0.01},
		simnet.LinkConfig{Delay: rtt / 2})
	defer d.Close()
	// Flow i sends from d.Left[i] to d.Right[i].LocalAddr() and hears back on d.Left[i].
	fmt.Println(d.Left[0].LocalAddr(), "->", d.Right[0].LocalAddr())
	fmt.Println(d.Left[1].LocalAddr(), "->", d.Right[1].LocalAddr())
	fmt.Println("queue", simnet.BDP(rate, rtt), "bytes")
	// Output:
	// 198.18.0.1:9000 -> 198.18.1.1:9000
	// 198.18.0.2:9000 -> 198.18.1.2:9000
	// queue 250000 bytes
}
