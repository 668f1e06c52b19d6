package stream

import (
	"testing"
	"time"

	"github.com/udtgo/udt/pacer"
)

// The catch-up credit is 2 ms of the rate, at least 10 packets, at most the configured cap.
func TestBurstFor(t *testing.T) {
	for _, c := range []struct {
		p     time.Duration
		limit int
		want  int
	}{
		{0, 64, 64},                                     // unpaced (slow start): the cap
		{time.Microsecond, 64, 64},                      // 12 Gbit/s of 1500-byte packets
		{12 * time.Microsecond, 64, 64},                 // 1 Gbit/s: 167 packets in 2 ms, capped
		{120 * time.Microsecond, 64, 17},                // 100 Mbit/s: 16.7 packets in 2 ms
		{100 * time.Microsecond, 64, 20},                // exactly 20
		{1200 * time.Microsecond, 64, 10},               // 10 Mbit/s: 2 packets in 2 ms, the floor
		{120 * time.Microsecond, 8, 8},                  // a smaller cap wins
		{120 * time.Microsecond, 0, pacer.DefaultBurst}, // 0: the pacer's default cap
	} {
		if got := burstFor(c.p, c.limit); got != c.want {
			t.Errorf("burstFor(%v, %d) = %d, want %d", c.p, c.limit, got, c.want)
		}
	}
}
