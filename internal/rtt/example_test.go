package rtt_test

import (
	"fmt"
	"time"

	"github.com/udtgo/udt/internal/rtt"
)

func Example() {
	t0 := time.Unix(0, 0)
	h := rtt.NewHistory(rtt.DefaultHistory)
	var est rtt.Estimator // starts at 100 ms / 50 ms

	ackNo := h.Store(1000, t0) // a full ACK for data up to 1000 leaves
	if sample, ack, ok := h.Acknowledge(ackNo, t0.Add(20*time.Millisecond)); ok {
		est.Update(sample) // its ACK2 came back 20 ms later
		fmt.Println(ackNo, ack, sample)
	}
	fmt.Println(est.RTT(), est.RTTVar(), est.Timeout())
	_, _, ok := h.Acknowledge(ackNo, t0.Add(30*time.Millisecond)) // replay
	fmt.Println(ok)
	// Output:
	// 1 1000 20ms
	// 90ms 57.5ms 320ms
	// false
}
