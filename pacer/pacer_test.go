package pacer_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/udtgo/udt/pacer"
)

// flowPeriodic is a test Flow: it sends up to total packets paced by a Scheduler, recording
// the time of every Release call and of every packet sent.
type flowPeriodic struct {
	mu       sync.Mutex
	s        *pacer.Scheduler
	total    int
	sent     int
	calls    []time.Time // now of each Release
	departed []time.Time // one entry per packet
	onRel    func(now time.Time)
}

// newFlowPeriodic paces exactly (no tolerance); newFlowTolerant with tolerance tol.
func newFlowPeriodic(interval time.Duration, total int) *flowPeriodic {
	return newFlowTolerant(interval, total, pacer.Exact)
}

func newFlowTolerant(interval time.Duration, total int, tol time.Duration) *flowPeriodic {
	return &flowPeriodic{s: pacer.NewScheduler(pacer.SchedulerConfig{Interval: interval, Tolerance: tol}), total: total}
}

// exact is the Config of the tests that check exact departures.
var exact = pacer.Config{Tolerance: pacer.Exact}

func (f *flowPeriodic) Release(now time.Time, max int) (int, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onRel != nil {
		f.onRel(now)
	}
	f.calls = append(f.calls, now)
	n := f.s.Release(now, min(max, f.total-f.sent))
	for range n {
		f.departed = append(f.departed, now)
	}
	f.sent += n
	if f.sent == f.total {
		return n, time.Time{}
	}
	return n, f.s.Next()
}

func (f *flowPeriodic) times() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.departed...)
}

func (f *flowPeriodic) nCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// firstCall returns the time the first Release was given (zero before any): its Scheduler's
// slots count from it.
func (f *flowPeriodic) firstCall() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return time.Time{}
	}
	return f.calls[0]
}

// flowFunc adapts a function to pacer.Flow.
type flowFunc func(now time.Time, max int) (int, time.Time)

func (f flowFunc) Release(now time.Time, max int) (int, time.Time) { return f(now, max) }

// flowCountingWaiter counts the Waits of the Waiter it wraps, split by idle (zero deadline).
type flowCountingWaiter struct {
	pacer.Waiter
	waits, idle atomic.Int64
}

func (w *flowCountingWaiter) Wait(deadline time.Time) bool {
	w.waits.Add(1)
	if deadline.IsZero() {
		w.idle.Add(1)
	}
	return w.Waiter.Wait(deadline)
}

func checkDepartures(t *testing.T, name string, got []time.Time, start time.Time, period time.Duration) {
	t.Helper()
	for k, d := range got {
		if want := start.Add(time.Duration(k) * period); !d.Equal(want) {
			t.Fatalf("%s: packet %d left at +%v, want +%v", name, k, d.Sub(start), want.Sub(start))
		}
	}
}

// TestPacerExactDepartures runs flows with different periods on one pacer under synctest with
// the gotimer backend, where virtual time is exact: every packet leaves exactly on schedule.
func TestPacerExactDepartures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &flowCountingWaiter{Waiter: pacer.NewGoTimer()}
		p := pacer.New(w, exact)
		defer p.Close()
		synctest.Wait()                           // the pacer is blocked idle
		start := time.Now().Add(time.Millisecond) // all queued before the first is due
		periods := []time.Duration{100 * us, 130 * us, 1 * time.Millisecond, 7 * us}
		flows := make([]*flowPeriodic, len(periods))
		for i, period := range periods {
			flows[i] = newFlowPeriodic(period, 50)
			p.Add(flows[i]).Schedule(start)
		}
		time.Sleep(time.Second)
		for i, f := range flows {
			got := f.times()
			if len(got) != 50 {
				t.Fatalf("flow %d sent %d of 50", i, len(got))
			}
			checkDepartures(t, periods[i].String(), got, start, periods[i])
		}
		st := p.Stats()
		if st.Packets != 200 || st.Lateness.Max != 0 || st.Lateness.Count != st.Releases {
			t.Fatalf("stats: %+v", st)
		}
		// At start all four flows are due at once: one wake releases 4 packets.
		if st.PacketsPerWake.Max != 4 || st.PacketsPerWake.Min != 1 {
			t.Fatalf("packets per wake: %+v", st.PacketsPerWake)
		}
		// All done: the pacer is blocked with no deadline, and stays so.
		waits := w.waits.Load()
		time.Sleep(time.Hour)
		if got := w.waits.Load(); got != waits || w.idle.Load() != 2 {
			t.Fatalf("idle pacer waited %d more times (idle blocks %d, want 2: before and after)", got-waits, w.idle.Load())
		}
		if st := p.Stats(); st.IdleBlocks != 2 {
			t.Fatalf("IdleBlocks %d", st.IdleBlocks)
		}
	})
}

// TestPacerIdleZeroWakeups counts Waits with the manual clock: an idle pacer blocks once with
// no deadline and does not wake however far the clock moves.
func TestPacerIdleZeroWakeups(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := newPacerClock()
	p := pacer.New(clk, pacer.Config{Now: clk.Now})
	<-clk.Blocked()
	if d, ok := clk.BlockedUntil(); !ok || !d.IsZero() {
		t.Fatalf("idle pacer blocked until %v (%v), want no deadline", d, ok)
	}
	clk.Advance(24 * time.Hour)
	if clk.Waits() != 1 {
		t.Fatalf("idle pacer blocked %d times, want 1", clk.Waits())
	}
	st := p.Stats()
	if st.Wakes != 0 || st.IdleBlocks != 1 {
		t.Fatalf("stats %+v", st)
	}
	p.Close()
	if st := p.Stats(); st.Wakes != 1 || st.Woken != 1 {
		t.Fatalf("after Close: %+v", st)
	}
}

// TestPacerManualClockLateness drives the pacer by hand: the pacer waits for the exact next
// departure, and a clock moved past it shows up as lateness.
func TestPacerManualClockLateness(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := newPacerClock()
	start := clk.Now()
	p := pacer.New(clk, pacer.Config{Now: clk.Now, Burst: 2, Tolerance: pacer.Exact})
	defer p.Close()
	f := newFlowPeriodic(10*us, 6)
	h := p.Add(f)
	h.Schedule(start)
	lates := []time.Duration{0, 7 * us, 0, 25 * us}
	for i, late := range lates {
		<-clk.Blocked()
		d, ok := clk.BlockedUntil()
		// After a 7 µs late wake the next slot is still on the absolute grid (30, not 37).
		if want := start.Add(time.Duration(i+1) * 10 * us); !ok || !d.Equal(want) {
			t.Fatalf("wait %d until +%v, want +%v", i, d.Sub(start), want.Sub(start))
		}
		clk.AdvanceTo(d.Add(late))
	}
	<-clk.Blocked()
	if d, _ := clk.BlockedUntil(); !d.IsZero() {
		t.Fatalf("flow done but pacer waits until %v", d)
	}
	// Departures: 0, 10, 27 (7 late), 30, 65 and 65 (25 late: slots 50 and 60, at most 2 = Burst).
	want := []time.Duration{0, 10 * us, 27 * us, 30 * us, 65 * us, 65 * us}
	got := f.times()
	if len(got) != len(want) {
		t.Fatalf("departures %v", got)
	}
	for i := range want {
		if got[i].Sub(start) != want[i] {
			t.Fatalf("departure %d at +%v, want +%v", i, got[i].Sub(start), want[i])
		}
	}
	st := p.Stats()
	if st.Lateness.Max != 25 || st.Lateness.Min != 0 || st.PacketsPerWake.Max != 2 {
		t.Fatalf("lateness %+v, packets per wake %+v", st.Lateness, st.PacketsPerWake)
	}
}

// TestPacerScheduleEarlierWakes: a flow scheduled earlier than the pending Wait's deadline
// wakes the pacer and leaves at its own time, for a new flow and for a queued one.
func TestPacerScheduleEarlierWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pacer.New(pacer.NewGoTimer(), exact)
		defer p.Close()
		start := time.Now()
		late := newFlowPeriodic(0, 1)
		p.Add(late).Schedule(start.Add(time.Hour))
		a := newFlowPeriodic(0, 1)
		ha := p.Add(a)
		time.Sleep(10 * time.Millisecond)
		ha.Schedule(start.Add(11 * time.Millisecond)) // idle → earlier than the pending hour
		ha.Schedule(start.Add(20 * time.Millisecond)) // later than queued: ignored
		b := newFlowPeriodic(0, 1)
		hb := p.Add(b)
		hb.Schedule(start.Add(30 * time.Millisecond))
		time.Sleep(5 * time.Millisecond)
		hb.Schedule(start.Add(12 * time.Millisecond)) // queued → earlier
		time.Sleep(time.Second)
		for name, c := range map[string]struct {
			f    *flowPeriodic
			want time.Duration
		}{"a": {a, 11 * time.Millisecond}, "b": {b, 15 * time.Millisecond}} {
			got := c.f.times()
			if len(got) != 1 || got[0].Sub(start) != c.want {
				t.Errorf("flow %s departed %v, want once at +%v", name, got, c.want)
			}
		}
		if late.nCalls() != 0 {
			t.Errorf("the hour flow ran early")
		}
		if st := p.Stats(); st.Woken < 2 {
			t.Errorf("Woken %d, want ≥ 2", st.Woken)
		}
	})
}

// TestPacerScheduleFromRelease: a flow reschedules itself (and another flow) from inside
// Release without deadlock; the earlier of its returned next and its Schedule wins.
func TestPacerScheduleFromRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pacer.New(pacer.NewGoTimer(), exact)
		defer p.Close()
		start := time.Now()
		other := newFlowPeriodic(0, 1)
		ho := p.Add(other)
		var h *pacer.Handle
		var calls []time.Duration
		h = p.Add(flowFunc(func(now time.Time, max int) (int, time.Time) {
			calls = append(calls, now.Sub(start))
			switch len(calls) {
			case 1:
				h.Schedule(now.Add(5 * time.Millisecond)) // idle return below: this wins
				ho.Schedule(now.Add(time.Millisecond))
				return 1, time.Time{}
			case 2:
				h.Schedule(now.Add(9 * time.Millisecond))
				return 1, now.Add(2 * time.Millisecond) // earlier than the Schedule: wins
			}
			return 1, time.Time{}
		}))
		h.Schedule(start)
		time.Sleep(time.Second)
		p.Close()
		want := []time.Duration{0, 5 * time.Millisecond, 7 * time.Millisecond}
		if len(calls) != len(want) || calls[0] != want[0] || calls[1] != want[1] || calls[2] != want[2] {
			t.Fatalf("Release at %v, want %v", calls, want)
		}
		if got := other.times(); len(got) != 1 || got[0].Sub(start) != time.Millisecond {
			t.Fatalf("other flow departed %v", got)
		}
	})
}

// TestPacerRemove covers Remove while queued (during the Wait), while Release runs on the
// pacer goroutine (Remove returns at once; that Release is the last), and from inside Release
// (no deadlock).
func TestPacerRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pacer.New(pacer.NewGoTimer(), pacer.Config{})
		defer p.Close()
		start := time.Now()

		// During the Wait for it.
		f := newFlowPeriodic(time.Millisecond, 100)
		h := p.Add(f)
		h.Schedule(start.Add(time.Millisecond))
		time.Sleep(500 * us)
		h.Remove()
		h.Remove() // idempotent
		<-h.Removed()
		h.Schedule(start)
		time.Sleep(time.Second)
		if f.nCalls() != 0 {
			t.Fatalf("removed flow released %d times", f.nCalls())
		}

		// While its Release is running on the pacer goroutine: Remove returns at once, and that
		// Release, which asks to run again at once, is the last.
		inRelease, unblock := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		h2 := p.Add(flowFunc(func(now time.Time, max int) (int, time.Time) {
			calls.Add(1)
			close(inRelease)
			<-unblock
			return 1, now // asks to run again at once: must not happen after Remove
		}))
		h2.Schedule(time.Now())
		<-inRelease
		h2.Remove() // does not wait for the Release in progress (it would block the test here)
		synctest.Wait()
		select {
		case <-h2.Removed():
			t.Fatal("Removed closed while Release was running")
		default:
		}
		close(unblock)
		<-h2.Removed() // closed once that Release has returned
		time.Sleep(time.Second)
		if calls.Load() != 1 {
			t.Fatalf("Release called %d times", calls.Load())
		}

		// From inside its own Release.
		var h3 *pacer.Handle
		var calls3 atomic.Int32
		h3 = p.Add(flowFunc(func(now time.Time, max int) (int, time.Time) {
			calls3.Add(1)
			h3.Remove()
			return 1, now.Add(time.Millisecond)
		}))
		h3.Schedule(time.Now())
		time.Sleep(time.Second)
		if calls3.Load() != 1 {
			t.Fatalf("self-removed flow released %d times", calls3.Load())
		}
	})
}

// TestPacerClose covers Close during a Wait with a deadline, during an idle Wait, from inside
// Release, and idempotence; no Release runs after Close returns, and no time passes in Close.
func TestPacerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, at := range []time.Duration{time.Hour, -1} {
			p := pacer.New(pacer.NewGoTimer(), pacer.Config{})
			f := newFlowPeriodic(time.Second, 10)
			if at >= 0 {
				p.Add(f).Schedule(time.Now().Add(at))
			}
			synctest.Wait() // the pacer is blocked in Wait
			before := time.Now()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(before); d != 0 {
				t.Fatalf("Close took %v of virtual time", d)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			p.Add(f).Schedule(time.Now()) // after Close: inert
			time.Sleep(2 * time.Hour)
			if f.nCalls() != 0 {
				t.Fatalf("Release ran %d times after Close", f.nCalls())
			}
		}

		p := pacer.New(pacer.NewGoTimer(), pacer.Config{})
		var calls int
		p.Add(flowFunc(func(now time.Time, max int) (int, time.Time) {
			calls++
			p.Close() // from inside Release: returns at once
			return 1, now
		})).Schedule(time.Now())
		time.Sleep(time.Second)
		p.Close()
		if calls != 1 {
			t.Fatalf("Release after Close from inside it: %d calls", calls)
		}
	})
}

// TestPacerStallGuard: a broken flow that sends nothing yet asks to run again at once is
// deferred by StallDelay rather than spinning the pacer.
func TestPacerStallGuard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pacer.New(pacer.NewGoTimer(), pacer.Config{})
		defer p.Close()
		var calls int
		p.Add(flowFunc(func(now time.Time, max int) (int, time.Time) {
			calls++
			return 0, now.Add(-time.Second)
		})).Schedule(time.Now())
		time.Sleep(10*pacer.StallDelay - 1)
		p.Close()
		if calls != 10 {
			t.Fatalf("%d calls in 10 stall delays", calls)
		}
		if st := p.Stats(); st.Stalls != 10 {
			t.Fatalf("Stalls %d", st.Stalls)
		}
	})
}

// TestPacerBurstAndFairness: a flow with more due than the burst is called again at once, and
// flows due at the same time take turns.
func TestPacerBurstAndFairness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pacer.New(pacer.NewGoTimer(), pacer.Config{Burst: 3, Tolerance: pacer.Exact})
		defer p.Close()
		var order []string
		// Both flows are due a microsecond ahead, so that the pacer's wake-up waits for this
		// goroutine to block (synctest advances the clock only then): due at once, the pacer
		// could serve a's three bursts before b was added ("aaabb", seen under load).
		due := time.Now().Add(time.Microsecond)
		mk := func(name string, pkts int) pacer.Flow {
			left := pkts
			return flowFunc(func(now time.Time, max int) (int, time.Time) {
				if max != 3 {
					t.Errorf("max %d, want the burst 3", max)
				}
				n := min(left, max)
				left -= n
				order = append(order, name)
				if left == 0 {
					return n, time.Time{}
				}
				return n, due // more due at once
			})
		}
		p.Add(mk("a", 7)).Schedule(due)
		p.Add(mk("b", 4)).Schedule(due)
		time.Sleep(time.Millisecond)
		p.Close() // happens-before for order
		got := ""
		for _, s := range order {
			got += s
		}
		if got != "ababa" && got != "babaa" {
			t.Fatalf("release order %q, want the flows to alternate", got)
		}
		if st := p.Stats(); st.Packets != 11 || st.PacketsPerWake.Max != 11 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestPacerRateChange shows how a connection changes its rate from another goroutine (an ACK
// handler, the congestion controller): under the flow's lock, set the rate, then Schedule the
// new Next. A faster rate moves the departure earlier at once; a slower one takes effect when
// the pacer wakes at the old time and the Scheduler holds the packet back.
func TestPacerRateChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := pacer.New(pacer.NewGoTimer(), exact)
		defer p.Close()
		start := time.Now()
		f := newFlowPeriodic(time.Millisecond, 1000)
		h := p.Add(f)
		h.Schedule(start)
		setInterval := func(d time.Duration) {
			f.mu.Lock()
			f.s.SetInterval(d)
			next := f.s.Next()
			f.mu.Unlock()
			h.Schedule(next)
		}
		time.Sleep(2500 * us) // departures at 0, 1, 2 ms
		setInterval(100 * us) // next: 2 ms + 100 µs, already past: slots 2.1 … 2.5 go at once
		time.Sleep(1050 * us) // then 2.6 … 3.5 on the new grid
		setInterval(2 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		p.Close()
		var got []time.Duration
		for _, d := range f.times() {
			got = append(got, d.Sub(start))
		}
		want := []time.Duration{0, 1000 * us, 2000 * us, 2500 * us, 2500 * us, 2500 * us, 2500 * us, 2500 * us}
		for d := 2600 * us; d <= 3500*us; d += 100 * us {
			want = append(want, d)
		}
		// Slower: one new interval after the last departure (3.5 ms), then every 2 ms.
		want = append(want, 5500*us, 7500*us)
		if len(got) != len(want) {
			t.Fatalf("departures %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("departures %v, want %v", got, want)
			}
		}
	})
}

// TestNewNilWaiterPanics: a nil Waiter is refused in New, on the caller's goroutine, instead of
// crashing the pacer's own goroutine later (found by a new user's check).
func TestNewNilWaiterPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("New(nil, …) did not panic")
		}
	}()
	pacer.New(nil, pacer.Config{})
}
