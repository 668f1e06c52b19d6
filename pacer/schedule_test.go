package pacer_test

import (
	"math"
	"testing"
	"time"

	"github.com/udtgo/udt/pacer"
)

// schedT0 is the origin of the scheduler timelines; times in the tables are offsets from it.
var schedT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const us = time.Microsecond

// schedStep is one line of a timeline: at offset at, do op, expect n released and the next
// departure at offset next (noNext: the zero Time).
type schedStep struct {
	at   time.Duration
	op   func(s *pacer.Scheduler) // nil: Release(want)
	want int
	n    int
	next time.Duration
}

const noNext = time.Duration(math.MinInt64)

func runTimeline(t *testing.T, s *pacer.Scheduler, steps []schedStep) {
	t.Helper()
	for i, st := range steps {
		now := schedT0.Add(st.at)
		n := 0
		if st.op != nil {
			st.op(s)
		} else {
			n = s.Release(now, st.want)
		}
		var next time.Duration = noNext
		if nt := s.Next(); !nt.IsZero() {
			next = nt.Sub(schedT0)
		}
		if n != st.n || next != st.next {
			t.Fatalf("step %d (at %v, want %d): released %d, next %v; want %d, next %v",
				i, st.at, st.want, n, next, st.n, st.next)
		}
	}
}

func TestSchedulerCatchUpTimeline(t *testing.T) {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Burst: 4, Tolerance: pacer.Exact})
	runTimeline(t, s, []schedStep{
		{at: 0, want: 1, n: 1, next: 10 * us},      // first packet leaves at once
		{at: 5 * us, want: 1, n: 0, next: 10 * us}, // early: nothing
		{at: 10 * us, want: 1, n: 1, next: 20 * us},
		{at: 35 * us, want: 5, n: 2, next: 40 * us},      // 15 µs late: slots 20 and 30 go at once
		{at: 40 * us, want: 0, n: 0, next: 40 * us},      // nothing to send
		{at: 1000 * us, want: 10, n: 4, next: 1010 * us}, // after idle: credit bounded by the burst
		{at: 1000 * us, want: 10, n: 0, next: 1010 * us},
		{at: 1100 * us, want: 2, n: 2, next: 1090 * us}, // want-limited: credit left, next is past
		{at: 1100 * us, want: 10, n: 2, next: 1110 * us},
		{at: 1110 * us, want: 10, n: 1, next: 1120 * us}, // back on the absolute grid
		{at: 1125 * us, want: 10, n: 1, next: 1130 * us},
	})
}

func TestSchedulerBurstCapsCatchUp(t *testing.T) {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Burst: 3, Tolerance: pacer.Exact})
	runTimeline(t, s, []schedStep{
		{at: 0, want: 1, n: 1, next: 10 * us},
		{at: 100 * us, want: 100, n: 3, next: 110 * us}, // 10 slots late, 3 go: credit is 3 packets
		{at: 100 * us, want: 100, n: 0, next: 110 * us},
		{at: 125 * us, want: 100, n: 2, next: 130 * us},
	})
}

func TestSchedulerStrictTimeline(t *testing.T) {
	s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Burst: 4, Strict: true, Tolerance: pacer.Exact})
	runTimeline(t, s, []schedStep{
		{at: 0, want: 3, n: 1, next: 10 * us}, // one per decision, whatever the burst
		{at: 10 * us, want: 3, n: 1, next: 20 * us},
		{at: 25 * us, want: 3, n: 1, next: 35 * us}, // late: the next interval starts at the actual departure
		{at: 30 * us, want: 1, n: 0, next: 35 * us},
		{at: 1000 * us, want: 5, n: 1, next: 1010 * us}, // no credit after idle
		{at: 1010 * us, want: 0, n: 0, next: 1010 * us},
	})
}

func TestSchedulerRateChange(t *testing.T) {
	setI := func(d time.Duration) func(*pacer.Scheduler) {
		return func(s *pacer.Scheduler) { s.SetInterval(d) }
	}
	for _, strict := range []bool{false, true} {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Strict: strict, Tolerance: pacer.Exact})
		runTimeline(t, s, []schedStep{
			{op: setI(50 * us), next: noNext}, // before any departure: nothing to move
			{at: 0, want: 1, n: 1, next: 50 * us},
			{op: setI(10 * us), next: 10 * us},
			{at: 10 * us, want: 1, n: 1, next: 20 * us},
			{at: 20 * us, want: 1, n: 1, next: 30 * us},
			{op: setI(100 * us), next: 120 * us}, // slower: the next gap already uses the new interval
			{at: 30 * us, want: 1, n: 0, next: 120 * us},
			{at: 120 * us, want: 1, n: 1, next: 220 * us},
			{op: setI(1 * us), next: 121 * us}, // faster: no need to wait out the old 100 µs
			{at: 121 * us, want: 1, n: 1, next: 122 * us},
			{op: setI(0), next: 121 * us},                                // unlimited: Next is the last departure
			{at: 121 * us, want: 100, n: pacer.MaxBurst, next: 121 * us}, // unlimited: one GSO batch
			{op: setI(10 * us), next: 131 * us},
		})
	}
}

func TestSchedulerForcePacketPair(t *testing.T) {
	force := func(at time.Duration, n int) func(*pacer.Scheduler) {
		return func(s *pacer.Scheduler) { s.Force(schedT0.Add(at), n) }
	}
	t.Run("catch-up", func(t *testing.T) {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Tolerance: pacer.Exact})
		runTimeline(t, s, []schedStep{
			{at: 0, want: 1, n: 1, next: 10 * us}, // the probe (seq&0xF == 0)
			{op: force(0, 1), next: 20 * us},      // its partner leaves back to back, taking slot 10
			{at: 10 * us, want: 1, n: 0, next: 20 * us},
			{at: 20 * us, want: 1, n: 1, next: 30 * us}, // long-run rate unchanged
			{op: force(20*us, 0), next: 30 * us},        // n ≤ 0: nothing
			{op: force(25*us, 3), next: 60 * us},
		})
	})
	t.Run("strict", func(t *testing.T) {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Strict: true, Tolerance: pacer.Exact})
		runTimeline(t, s, []schedStep{
			{at: 0, want: 1, n: 1, next: 10 * us},
			{op: force(3*us, 1), next: 13 * us}, // one interval after the forced departure
			{at: 13 * us, want: 1, n: 1, next: 23 * us},
		})
	})
	t.Run("first", func(t *testing.T) {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 10 * us, Tolerance: pacer.Exact})
		runTimeline(t, s, []schedStep{
			{op: force(5*us, 2), next: 25 * us},
			{at: 25 * us, want: 9, n: 1, next: 35 * us},
		})
	})
}

func TestSchedulerExactFractionalRates(t *testing.T) {
	// 3 packets/s: 333 333 333.3 ns apart; the third interval ends exactly on the second.
	s := pacer.NewScheduler(pacer.SchedulerConfig{})
	s.SetPacketRate(3)
	want := []time.Duration{333333333, 666666666, time.Second, 1333333333, 1666666666, 2 * time.Second}
	now := schedT0
	if n := s.Release(now, 1); n != 1 {
		t.Fatalf("first release: %d", n)
	}
	for i, w := range want {
		if got := s.Next().Sub(schedT0); got != w {
			t.Fatalf("departure %d at %v, want %v", i+1, got, w)
		}
		if n := s.Release(s.Next(), 1); n != 1 {
			t.Fatalf("release at departure %d: %d", i+1, n)
		}
	}

	// 1 Gbit/s of 1472-byte packets: 11 776 ns apart; 10^6 departures in exactly 11.776 s.
	s = pacer.NewScheduler(pacer.SchedulerConfig{})
	s.SetRate(1e9/8, 1472)
	if s.Interval() != 11776 {
		t.Fatalf("interval %v", s.Interval())
	}
	// 700 Mbit/s: 16 822.857… ns; exact over a million packets (no accumulated rounding).
	s.SetRate(700e6/8, 1472)
	s.Release(schedT0, 1)
	sent := 1
	for sent < 1_000_000 {
		sent += s.Release(s.Next(), 1)
	}
	// departure k is at ⌊k·1472·8e9/700e6⌋ ns; k = 10^6 → 16 822 857 142.857 ns.
	if got := s.Next().Sub(schedT0); got != 16822857142 {
		t.Fatalf("departure 10^6 at %d ns, want 16822857142", got)
	}
}

func TestSchedulerExtremeRates(t *testing.T) {
	t.Run("unlimited", func(t *testing.T) {
		for _, set := range []func(*pacer.Scheduler){
			func(s *pacer.Scheduler) { s.SetRate(0, 1472) },
			func(s *pacer.Scheduler) { s.SetRate(1e6, 0) },
			func(s *pacer.Scheduler) { s.SetRate(-5, 1472) },
			func(s *pacer.Scheduler) { s.SetPacketRate(0) },
			func(s *pacer.Scheduler) { s.SetInterval(-time.Second) },
		} {
			s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: time.Second, Burst: 7, Tolerance: pacer.Exact})
			set(s)
			if s.Interval() != 0 {
				t.Fatalf("interval %v, want 0 (unlimited)", s.Interval())
			}
			for i := range 3 {
				if n := s.Release(schedT0, 100); n != 7 {
					t.Fatalf("release %d: %d, want the burst 7", i, n)
				}
			}
			if n := s.Release(schedT0, 3); n != 3 {
				t.Fatalf("release 3 of 3: %d", n)
			}
		}
	})
	t.Run("huge interval saturates", func(t *testing.T) {
		s := pacer.NewScheduler(pacer.SchedulerConfig{})
		s.SetRate(1, math.MaxInt64) // 9.2e27 ns per packet: beyond time.Duration
		if s.Interval() != math.MaxInt64 {
			t.Fatalf("interval %v", s.Interval())
		}
		if n := s.Release(schedT0, 5); n != 1 {
			t.Fatalf("first: %d", n)
		}
		if !s.Next().After(schedT0.Add(200 * 365 * 24 * time.Hour)) {
			t.Fatalf("next %v", s.Next())
		}
		for _, d := range []time.Duration{time.Hour, math.MaxInt64} {
			if n := s.Release(schedT0.Add(d), 5); n != 0 {
				t.Fatalf("at +%v: %d", d, n)
			}
		}
	})
	t.Run("sub-nanosecond interval", func(t *testing.T) {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Burst: 1000, Tolerance: pacer.Exact})
		s.SetPacketRate(4e9)                      // 0.25 ns apart
		if n := s.Release(schedT0, 1e6); n != 4 { // the schedule starts at now: 4 slots in its first ns
			t.Fatalf("first: %d", n)
		}
		// At +1 µs the credit is the burst: 1000 slots, 250 ns.
		if n := s.Release(schedT0.Add(us), 1e6); n != 1000 {
			t.Fatalf("at 1 µs: %d", n)
		}
		sent := 0
		for i := 1; i <= 1000; i++ {
			sent += s.Release(schedT0.Add(us+time.Duration(i)), 1e6)
		}
		if sent != 4000 { // 4 per ns, exactly
			t.Fatalf("1000 ns at 4/ns released %d", sent)
		}
	})
}

// TestSchedulerCoarseTimer replays a sender whose waiter cannot wake before the next 1 ms tick
// (Go's runtime timer on Linux) at 20 000 packets/s for one second: strict mode stalls near
// 1000 packets/s; catch-up with a burst that covers a tick keeps the rate.
func TestSchedulerCoarseTimer(t *testing.T) {
	for _, tc := range []struct {
		strict   bool
		burst    int
		min, max int
	}{
		// One packet at 0, then per tick at 1..999 ms: 1, 20 (all due) or 8 (the burst).
		{strict: true, burst: 64, min: 1000, max: 1000},
		{strict: false, burst: 64, min: 1 + 999*20, max: 1 + 999*20},
		{strict: false, burst: 8, min: 1 + 999*8, max: 1 + 999*8},
	} {
		s := pacer.NewScheduler(pacer.SchedulerConfig{Interval: 50 * us, Burst: tc.burst, Strict: tc.strict, Tolerance: pacer.Exact})
		now, sent := schedT0, 0
		for now.Before(schedT0.Add(time.Second)) {
			sent += s.Release(now, 1<<20)
			// Sleep until Next, rounded up to the next 1 ms tick (at least one tick).
			d := s.Next().Sub(now)
			d = max((d+time.Millisecond-1)/time.Millisecond, 1) * time.Millisecond
			now = now.Add(d)
		}
		if sent < tc.min || sent > tc.max {
			t.Errorf("strict=%v burst=%d: %d packets in 1 s, want %d..%d", tc.strict, tc.burst, sent, tc.min, tc.max)
		}
	}
}

func TestSchedulerZeroValueAndClockStepBack(t *testing.T) {
	var s pacer.Scheduler
	if !s.Next().IsZero() || s.Burst() != pacer.MaxBurst || s.Interval() != 0 || s.Strict() ||
		s.Tolerance() != pacer.DefaultTolerance {
		t.Fatalf("zero Scheduler: next %v burst %d interval %v tolerance %v", s.Next(), s.Burst(), s.Interval(), s.Tolerance())
	}
	s.SetInterval(10 * us)
	if n := s.Release(schedT0, 1); n != 1 {
		t.Fatal(n)
	}
	// A clock that steps back releases nothing and moves nothing.
	if n := s.Release(schedT0.Add(-time.Hour), 1); n != 0 {
		t.Fatalf("step back: %d", n)
	}
	if got := s.Next().Sub(schedT0); got != 10*us {
		t.Fatalf("next %v", got)
	}
}
