package pacer_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/cputime"
	"github.com/udtgo/udt/pacer"
)

// benchJumpClock is a Waiter whose clock jumps to each deadline at once: the pacer loop then
// runs flat out on one goroutine and the benchmark measures the loop itself (heap, locking,
// Flow.Release, statistics), not a wait or a goroutine handoff.
type benchJumpClock struct {
	late time.Duration // how far past each deadline the clock jumps
	base time.Time
	ns   atomic.Int64
	wake chan struct{}
}

func newBenchJumpClock() *benchJumpClock {
	return &benchJumpClock{base: time.Now(), wake: make(chan struct{}, 1)}
}

func (c *benchJumpClock) Now() time.Time { return c.base.Add(time.Duration(c.ns.Load())) }

func (c *benchJumpClock) Wait(deadline time.Time) bool {
	select {
	case <-c.wake:
		return true
	default:
	}
	if deadline.IsZero() {
		<-c.wake
		return true
	}
	if d := int64(deadline.Sub(c.base) + c.late); d > c.ns.Load() {
		c.ns.Store(d)
	}
	return false
}

func (c *benchJumpClock) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// benchFlow sends paced by a Scheduler until the shared budget runs out, then closes done.
type benchFlow struct {
	s      *pacer.Scheduler
	budget *atomic.Int64
	done   chan struct{}
}

func (f *benchFlow) Release(now time.Time, max int) (int, time.Time) {
	n := f.s.Release(now, max)
	if left := f.budget.Add(int64(-n)); left <= 0 {
		if left+int64(n) > 0 {
			close(f.done)
		}
		return n, time.Time{}
	}
	return n, f.s.Next()
}

// BenchmarkPacer measures the whole pacer loop per packet with a clock that jumps to each
// deadline: one packet per wake (burst 1) for 1 and 100 flows (all due together), and for one
// flow with a clock 15 intervals late, 16 packets per wake (burst 16). It reports ns/op and
// allocs/op per packet; steady state allocates nothing.
func BenchmarkPacer(b *testing.B) {
	for _, bc := range []struct {
		flows, burst int
		late         time.Duration
	}{{1, 1, 0}, {100, 1, 0}, {1, 16, 15 * 11776}} {
		b.Run(fmt.Sprintf("flows=%d/burst=%d", bc.flows, bc.burst), func(b *testing.B) {
			clk := newBenchJumpClock()
			clk.late = bc.late
			p := pacer.New(clk, pacer.Config{Now: clk.Now, Burst: bc.burst})
			defer p.Close()
			var budget atomic.Int64
			budget.Store(int64(b.N))
			done := make(chan struct{})
			hs := make([]*pacer.Handle, bc.flows)
			for i := range hs {
				s := pacer.NewScheduler(pacer.SchedulerConfig{Burst: bc.burst})
				s.SetRate(1e9/8/int64(bc.flows), 1472) // 1 Gbit/s in total
				hs[i] = p.Add(&benchFlow{s: s, budget: &budget, done: done})
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Process()
			for _, h := range hs {
				h.Schedule(clk.Now())
			}
			<-done
			b.StopTimer()
			b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
			st := p.Stats()
			b.ReportMetric(st.PacketsPerWake.Mean, "pkts/wake")
		})
	}
}

// BenchmarkPacerManualClock drives the pacer with pacertest's manual clock from the benchmark
// goroutine: per packet, one handoff to the pacer goroutine and back (the cost a deterministic
// test pays per departure). Its allocation per op is pacertest's (a channel per blocked Wait),
// not the pacer's: BenchmarkPacer shows the loop itself allocates nothing.
func BenchmarkPacerManualClock(b *testing.B) {
	clk := newPacerClock()
	p := pacer.New(clk, pacer.Config{Now: clk.Now, Burst: 1})
	defer p.Close()
	var budget atomic.Int64
	budget.Store(int64(b.N))
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * time.Microsecond})
	h := p.Add(&benchFlow{s: s, budget: &budget, done: make(chan struct{})})
	b.ReportAllocs()
	h.Schedule(clk.Now())
	for range b.N {
		<-clk.Blocked()
		clk.AdvanceToBlocked()
	}
}
