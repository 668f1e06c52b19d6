package conn

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/simnet"
	"go.uber.org/goleak"
)

// A connection whose first flight meets a path far slower than the one it then has (a receiver
// starved of CPU while its socket buffer overflows, its ACKs starved too; a radio link before its
// rate adapts) measures that slow rate and loses part of what Startup sends. Once the path is
// fast, BBR must find the new rate (ProbeBW re-probes every 2–3 s at most, growing each UP round)
// while it repairs those losses. Over a grid of slow phases (rate 1000× to 100× below the fast
// path, 2–64 packets of queue, 0.3–2 s, the reverse path slowed too) the default controller's
// 16 MiB transfer ends within a minute of the switch (1.3 s at the fast path's rate; 1.4–7.2 s
// measured, most of it the wait for a probe). TestBulkManyOneListener once stalled past its 60 s
// linger under CPU load in a state like this one's (every packet sent a repair, no rate sample
// from any, the model at the starved rate); these shapes did not reproduce it before repairs gave
// samples (TestDeliveryRepairsGiveSamples), and they keep the recovery bounded.
func TestStarvedStartThenFastPath(t *testing.T) {
	const size = 16 << 20
	fast := simnet.LinkConfig{Delay: 5 * time.Millisecond, Rate: 100e6, Overhead: 28, QueueBytes: 125_000}
	for _, slow := range []struct {
		rate  int64 // bit/s
		queue int   // bytes
		dur   time.Duration
		back  int64 // bit/s of the reverse path meanwhile (0: as fast as ever)
	}{
		{100e3, 8 * 1500, 500 * time.Millisecond, 0},
		{1e6, 16 * 1500, 500 * time.Millisecond, 0},
		{100e3, 64 * 1500, 2 * time.Second, 0},
		{100e3, 2 * 1500, 300 * time.Millisecond, 2e3},
		{100e3, 2 * 1500, time.Second, 5e3},
		{1e6, 4 * 1500, 300 * time.Millisecond, 5e3},
		{1e6, 4 * 1500, time.Second, 2e3},
	} {
		t.Run(fmt.Sprintf("%dbit-%dB-%v-back%d", slow.rate, slow.queue, slow.dur, slow.back), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fast
				s.Rate, s.QueueBytes = slow.rate, slow.queue
				p := simnet.NewPair(31, fast, fast)
				defer p.Close()
				c, srv := simConns(t, p, simConfig())
				p.AB.SetConfig(s)
				if slow.back > 0 {
					b := fast
					b.Rate, b.QueueBytes = slow.back, 200
					p.BA.SetConfig(b)
				}
				data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
				got := make(chan int64, 1)
				go func() {
					n, _ := io.Copy(io.Discard, srv)
					got <- n
				}()
				start := time.Now()
				go func() {
					c.Write(data)
					c.Close()
				}()
				time.Sleep(slow.dur)
				p.AB.SetConfig(fast)
				p.BA.SetConfig(fast)
				switched := time.Now()
				var n int64
				select {
				case n = <-got:
				case <-time.After(time.Minute):
				}
				took := time.Since(switched)
				st := c.Stats()
				t.Logf("%d bytes %v after the switch (%v in all); retransmitted %d of %d packets, timeouts %d",
					n, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), st.PktRetrans, st.PktSent, st.Timeouts)
				if n != size {
					t.Fatalf("%d bytes arrived, want %d", n, size)
				}
				srv.Close()
			})
			goleak.VerifyNone(t)
		})
	}
}
