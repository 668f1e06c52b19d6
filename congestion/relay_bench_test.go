package congestion_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udtgo/udt/conn"
	"github.com/udtgo/udt/internal/simnet"
	"github.com/udtgo/udt/internal/udprelay"
)

// The real-UDP counterpart of the grid's coarse-release kind (issue 10's last target): a nil-Config
// connection over loopback through internal/udprelay set up as a 100 Mbit/s bottleneck with a
// drop-tail queue of one BDP, 50 ms of delay each way (100 ms RTT) and a release in batches every
// 1 ms in both directions (a coarse-timer relay), with optional random loss on the data direction.
// The benchmark reports the goodput as a share of the link (wire bytes, as the simulations count
// them) after the start-up budget (10 RTT + 1 s), and over the whole transfer; it asserts nothing
// about wall-clock speed. The target is ≥ 90 % at 0 % loss and ≥ 85 % at 1 %.
//
//	go test ./congestion -run '^$' -bench RelayCoarse -benchtime 1x     # UDT_RELAY_TIME=20s by default

const (
	relayRate    = 100e6
	relayRTT     = 100 * time.Millisecond
	relayRelease = time.Millisecond
)

// relayResult is one transfer through the relay.
type relayResult struct {
	Share, ShareAll float64 // wire share of the link after the start-up budget, and over the whole run
	Goodput         float64 // payload Mbit/s after the start-up budget
	Sender          conn.Stats
	Relay           udprelay.Stats
}

// relayTransfer runs one nil-Config transfer of dur through the coarse-release relay.
func relayTransfer(tb testing.TB, loss float64, dur time.Duration) relayResult {
	tb.Helper()
	ln, err := conn.Listen("udp", "127.0.0.1:0", nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	relay, err := udprelay.New(ln.Addr().String(), udprelay.Config{Seed: 1,
		ToServer: udprelay.Impairment{Loss: loss, Rate: relayRate, Overhead: simOverhead,
			QueueBytes: simnet.BDP(relayRate, relayRTT), Delay: relayRTT / 2, ReleaseEvery: relayRelease},
		ToClient: udprelay.Impairment{Delay: relayRTT / 2, ReleaseEvery: relayRelease}})
	if err != nil {
		tb.Fatal(err)
	}
	defer relay.Close()

	var received atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := ln.AcceptUDT(context.Background())
		if err != nil {
			return
		}
		defer s.Close()
		buf := make([]byte, 256<<10)
		for {
			n, err := s.Read(buf)
			received.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	c, err := conn.Dial("udp", relay.Addr().String(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	stop := make(chan struct{})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		buf := make([]byte, 256<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	budget := 10*relayRTT + time.Second
	time.Sleep(budget)
	atBudget, tBudget := received.Load(), time.Now()
	time.Sleep(time.Until(start.Add(dur)))
	end, tEnd := received.Load(), time.Now()
	close(stop)
	res := relayResult{Sender: c.Stats(), Relay: relay.Stats()}
	// Close unblocks a Write waiting for buffer space and returns at once; the connection goes on
	// delivering what was written (the reader still reads) and then shuts down. Waiting for that
	// end lets the dialer's socket goroutines stop before the package's leak check.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.CloseContext(ctx); err != nil {
		tb.Logf("close: %v", err)
	}
	<-wrote
	ln.Close()
	<-done
	wire := func(payload int64, d time.Duration) float64 {
		return float64(payload) / simPayload * simMSS * 8 / d.Seconds() / relayRate
	}
	res.Share = wire(end-atBudget, tEnd.Sub(tBudget))
	res.ShareAll = wire(end, tEnd.Sub(start))
	res.Goodput = float64(end-atBudget) * 8 / tEnd.Sub(tBudget).Seconds() / 1e6
	return res
}

func BenchmarkRelayCoarse(b *testing.B) {
	dur := envDuration("UDT_RELAY_TIME", 20*time.Second)
	for _, loss := range []float64{0, 0.01} {
		b.Run("loss="+lossName(loss), func(b *testing.B) {
			var r relayResult
			for range b.N {
				r = relayTransfer(b, loss, dur)
			}
			b.ReportMetric(100*r.Share, "%link")
			b.ReportMetric(100*r.ShareAll, "%link-all")
			b.ReportMetric(r.Goodput, "Mbit/s")
			b.ReportMetric(100*float64(r.Sender.PktRetrans)/float64(max(r.Sender.PktSent, 1)), "%retrans")
			b.ReportMetric(float64(r.Relay.ToServer.DroppedQueue), "queue-drops")
			b.Logf("%v at %s loss through a 100 Mbit/s · 100 ms relay releasing every %v: %.1f %% of the link after %v (%.1f Mbit/s of payload), %.1f %% over the run; sender %d sent, %d retransmitted, %d timeouts; relay %d random losses, %d queue drops (queue high-water %d bytes)",
				dur, lossName(loss), relayRelease, 100*r.Share, 10*relayRTT+time.Second, r.Goodput, 100*r.ShareAll,
				r.Sender.PktSent, r.Sender.PktRetrans, r.Sender.Timeouts, r.Relay.ToServer.DroppedLoss,
				r.Relay.ToServer.DroppedQueue, r.Relay.ToServer.MaxQueuedBytes)
		})
	}
}

// The benchmark's path works end to end: a short nil-Config transfer through the coarse-release
// relay moves data, and the relay's rate and queue were in use. Figures are logged, not asserted
// (real time on a shared machine); the benchmark measures. Full runs only.
func TestRelayCoarseTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time transfer; full runs only")
	}
	r := relayTransfer(t, 0, 3*time.Second)
	t.Logf("3 s: %.1f %% of the link after the start-up budget, %.1f %% over the run; relay %+v", 100*r.Share, 100*r.ShareAll, r.Relay.ToServer)
	if r.ShareAll <= 0 || r.Relay.ToServer.Forwarded == 0 {
		t.Errorf("nothing moved through the relay: %+v", r.Relay.ToServer)
	}
}
