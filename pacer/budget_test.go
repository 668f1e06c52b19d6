package pacer_test

import (
	"testing"
	"time"

	"github.com/udtgo/udt/pacer"
)

// The default burst is 2 ms of the rate, at least 10 packets, at most one GSO batch (64).
func TestBurstFor(t *testing.T) {
	for _, c := range []struct {
		p    time.Duration
		want int
	}{
		{0, 64},                       // unpaced (slow start): one GSO batch
		{-time.Second, 64},            // unlimited
		{time.Microsecond, 64},        // 12 Gbit/s of 1500-byte packets
		{12 * time.Microsecond, 64},   // 1 Gbit/s: 167 packets in 2 ms, capped
		{120 * time.Microsecond, 17},  // 100 Mbit/s: 16.7 packets in 2 ms
		{100 * time.Microsecond, 20},  // exactly 20
		{1200 * time.Microsecond, 10}, // 10 Mbit/s: 2 packets in 2 ms, the floor
	} {
		if got := pacer.BurstFor(c.p); got != c.want {
			t.Errorf("BurstFor(%v) = %d, want %d", c.p, got, c.want)
		}
	}
}

// A Scheduler's default burst follows its interval; a configured one does not.
func TestSchedulerBurstFollowsRate(t *testing.T) {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 120 * us})
	if s.Burst() != 17 {
		t.Fatalf("burst at 120 µs: %d", s.Burst())
	}
	s.SetRate(1e9/8, 1472) // 11.776 µs
	if s.Burst() != pacer.MaxBurst {
		t.Fatalf("burst at 1 Gbit/s: %d", s.Burst())
	}
	s.SetRate(10e6/8, 1472) // 1.1776 ms
	if s.Burst() != pacer.MinBurst {
		t.Fatalf("burst at 10 Mbit/s: %d", s.Burst())
	}
	s.SetBurst(5)
	s.SetInterval(time.Microsecond)
	if s.Burst() != 5 {
		t.Fatalf("configured burst: %d", s.Burst())
	}
	s.SetBurst(0)
	if s.Burst() != pacer.MaxBurst {
		t.Fatalf("back to the rule at 1 µs: %d", s.Burst())
	}
}

func TestToleranceConfig(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{0, pacer.DefaultTolerance}, {pacer.Exact, 0}, {-time.Hour, 0}, {50 * us, 50 * us},
	} {
		if got := pacer.NewScheduler(pacer.SchedulerConfig{Tolerance: c.in}).Tolerance(); got != c.want {
			t.Errorf("Scheduler tolerance %v → %v, want %v", c.in, got, c.want)
		}
		p := pacer.New(pacer.NewGoTimer(), pacer.Config{Tolerance: c.in})
		if got := p.Tolerance(); got != c.want {
			t.Errorf("Pacer tolerance %v → %v, want %v", c.in, got, c.want)
		}
		p.Close()
	}
	if pacer.DefaultTolerance <= 0 || pacer.DefaultTolerance >= time.Millisecond {
		t.Errorf("DefaultTolerance %v is not sub-millisecond", pacer.DefaultTolerance)
	}
}

// With a tolerance every slot due by now + tolerance leaves at once; the grid does not move.
func TestSchedulerToleranceTimeline(t *testing.T) {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Burst: 8, Tolerance: 25 * us})
	runTimeline(t, s, []schedStep{
		{at: 0, want: 10, n: 3, next: 30 * us},      // slots 0, 10, 20: within 25 µs of now
		{at: 4 * us, want: 10, n: 0, next: 30 * us}, // 30 is 26 µs away: not yet
		{at: 5 * us, want: 10, n: 1, next: 40 * us}, // 30 is 25 µs away: leaves 25 µs early
		{at: 5 * us, want: 10, n: 0, next: 40 * us},
		// Late: the credit (burst 8: 70 µs) is counted back from now, so slots 40 … 110 are
		// due late (the burst caps this call), then 120 early; 130 is 30 µs off.
		{at: 100 * us, want: 20, n: 8, next: 120 * us},
		{at: 100 * us, want: 20, n: 1, next: 130 * us},
		{at: 100 * us, want: 20, n: 0, next: 130 * us},
		{at: 105 * us, want: 1, n: 1, next: 140 * us},
		{at: 140 * us, want: 20, n: 3, next: 170 * us}, // 140, 150, 160
	})
}

// In strict mode a packet let out early counts as leaving at its slot, so the rate is not
// raised; a late one starts the next interval at its actual departure, as without tolerance.
func TestSchedulerToleranceStrict(t *testing.T) {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Strict: true, Tolerance: 4 * us})
	runTimeline(t, s, []schedStep{
		{at: 0, want: 5, n: 1, next: 10 * us},
		{at: 5 * us, want: 5, n: 0, next: 10 * us},
		{at: 6 * us, want: 5, n: 1, next: 20 * us},  // 4 µs early: the grid holds
		{at: 16 * us, want: 5, n: 1, next: 30 * us}, // early again: still 10 µs apart
		{at: 45 * us, want: 5, n: 1, next: 55 * us}, // 15 µs late: not made up
	})
	// After idle, a credit of 8 counted back from now: slots 1000 − 70 … 1000 and those due
	// within 25 µs.
	s = pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Burst: 8, Tolerance: 25 * us})
	runTimeline(t, s, []schedStep{
		{at: 0, want: 1, n: 1, next: 10 * us},
		{at: 1000 * us, want: 100, n: 8, next: 1010 * us},
		{at: 1000 * us, want: 100, n: 2, next: 1030 * us},
	})
	// Over many early releases the strict rate stays at most one per interval.
	s = pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Strict: true, Tolerance: 9 * us})
	sent := 0
	for now := time.Duration(0); now < 10*time.Millisecond; now += us {
		sent += s.Release(schedT0.Add(now), 1)
	}
	if sent > 1000+1 {
		t.Fatalf("strict with tolerance sent %d in 10 ms at 10 µs", sent)
	}
}
