package pacer_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/udtgo/udt/pacer"
	"github.com/udtgo/udt/pacer/pacertest"
)

// driveClock advances the manual clock to each blocked Wait's deadline until the pacer is idle
// (or steps run out).
func driveClock(t *testing.T, clk *pacertest.Clock, steps int) {
	t.Helper()
	for range steps {
		<-clk.Blocked()
		if _, ok := clk.AdvanceToBlocked(); !ok {
			return
		}
	}
	t.Fatalf("pacer not idle after %d waits", steps)
}

// TestPacerToleranceBatches: with a tolerance, one wake releases every packet due within it,
// none more than the tolerance before its slot, and the grid (so the rate) is unchanged.
func TestPacerToleranceBatches(t *testing.T) {
	defer goleak.VerifyNone(t)
	const tol = 25 * us
	clk := newPacerClock()
	start := clk.Now()
	p := pacer.New(clk, pacer.Config{Now: clk.Now, Tolerance: tol})
	defer p.Close()
	f := newFlowTolerant(10*us, 30, tol)
	p.Add(f).Schedule(start)
	driveClock(t, clk, 100)
	got := f.times()
	if len(got) != 30 {
		t.Fatalf("sent %d of 30", len(got))
	}
	for k, d := range got {
		slot := start.Add(time.Duration(k) * 10 * us)
		if e := d.Sub(slot); e < -tol || e > 0 {
			t.Fatalf("packet %d left %v from its slot, outside [−%v, 0]", k, e, tol)
		}
	}
	// The manual clock wakes exactly at each flow's next slot: 0, 30, 60, … each releasing the
	// slots within 25 µs of it, three per wake.
	st := p.Stats()
	if d := st.PacketsPerWake; d.Min != 3 || d.Max != 3 || d.Count != 10 {
		t.Fatalf("packets per wake %+v; want 3 in each of 10 wakes", d)
	}
	if d := got[29].Sub(start); d != 270*us {
		t.Fatalf("last packet at +%v, want +270µs (slot 290 − 20 µs)", d)
	}
}

// TestPacerToleranceManyFlows: flows due within the tolerance of one wake are all released by
// it, in order of departure.
func TestPacerToleranceManyFlows(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := newPacerClock()
	start := clk.Now()
	p := pacer.New(clk, pacer.Config{Now: clk.Now, Tolerance: 50 * us})
	defer p.Close()
	var mu sync.Mutex
	var order []int
	for i, at := range []time.Duration{100 * us, 140 * us, 151 * us, 120 * us} {
		p.Add(flowFunc(func(now time.Time, _ int) (int, time.Time) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if d := now.Sub(start); d != 100*us && d != 151*us {
				t.Errorf("flow %d released at +%v", i, d)
			}
			return 1, time.Time{}
		})).Schedule(start.Add(at))
	}
	driveClock(t, clk, 10)
	mu.Lock()
	defer mu.Unlock()
	// The wake at 100 µs takes 100, 120 and 140 (within 50 µs); 151 µs waits for its own.
	if len(order) != 4 || order[0] != 0 || order[1] != 3 || order[2] != 1 || order[3] != 2 {
		t.Fatalf("release order %v, want [0 3 1 2]", order)
	}
	// Deadline wakes only: whether the first Schedule finds the pacer already idle (a Wait that
	// Schedule ends, counted in Woken) depends on when its goroutine started.
	if st := p.Stats(); st.Wakes-st.Woken != 2 {
		t.Fatalf("wakes at a deadline %d (wakes %d, woken early %d), want 2", st.Wakes-st.Woken, st.Wakes, st.Woken)
	}
}

// TestPacerToleranceExactFlow: a flow whose Scheduler is exact, on a pacer with a tolerance, is
// called early once, sends nothing, and is then called at its own time: no busy loop.
func TestPacerToleranceExactFlow(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := newPacerClock()
	start := clk.Now()
	p := pacer.New(clk, pacer.Config{Now: clk.Now, Tolerance: 100 * us})
	defer p.Close()
	b := newFlowPeriodic(50*us, 3) // exact: 0, 50, 100
	var aCalls int
	p.Add(flowFunc(func(now time.Time, _ int) (int, time.Time) {
		aCalls++
		if aCalls > 4 {
			return 1, time.Time{}
		}
		return 1, now.Add(30 * us)
	})).Schedule(start)
	p.Add(b).Schedule(start)
	driveClock(t, clk, 20)
	checkDepartures(t, "exact flow", b.times(), start, 50*us)
	if n := b.nCalls(); n > 3+4 {
		t.Fatalf("exact flow called %d times for 3 packets (at most once early per A wake)", n)
	}
}

// tolClock is the manual clock as a TolerantWaiter: WaitTolerant returns as late as it may,
// deadline + tol, and records what it was asked.
type tolClock struct {
	*pacertest.Clock
	mu    sync.Mutex
	asked []time.Duration // tolerance per WaitTolerant; −1 for a plain Wait with a deadline
}

func (c *tolClock) WaitTolerant(deadline time.Time, tol time.Duration) bool {
	c.mu.Lock()
	c.asked = append(c.asked, tol)
	c.mu.Unlock()
	return c.Clock.Wait(deadline.Add(tol))
}

func (c *tolClock) Wait(deadline time.Time) bool {
	if !deadline.IsZero() {
		c.mu.Lock()
		c.asked = append(c.asked, -1)
		c.mu.Unlock()
	}
	return c.Clock.Wait(deadline)
}

// TestPacerTolerantWaiter: the pacer hands its tolerance to a TolerantWaiter, which may end the
// wait up to the tolerance late; the flow's Scheduler then lets out its late slot and every slot
// due within the tolerance after now. An exact pacer calls Wait.
func TestPacerTolerantWaiter(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tol := range []time.Duration{pacer.Exact, 30 * us} {
		clk := &tolClock{Clock: newPacerClock()}
		start := clk.Now()
		p := pacer.New(clk, pacer.Config{Now: clk.Now, Tolerance: tol})
		f := newFlowTolerant(20*us, 10, tol)
		p.Add(f).Schedule(start)
		driveClock(t, clk.Clock, 20)
		p.Close()
		// Exact: every 20 µs. With 30 µs: the first release takes the slots within 30 µs (0, 20);
		// then a wake 30 µs late at slot k takes k (late) and the slots up to 30 µs after now:
		// 40 60 80 100 at 70, 120 140 160 180 at 150.
		want := []time.Duration{0, 20, 40, 60, 80, 100, 120, 140, 160, 180}
		if tol > 0 {
			want = []time.Duration{0, 0, 70, 70, 70, 70, 150, 150, 150, 150}
		}
		for k, d := range f.times() {
			if d.Sub(start) != want[k]*us {
				t.Fatalf("tolerance %v: packet %d left at +%v, want +%v", tol, k, d.Sub(start), want[k]*us)
			}
		}
		clk.mu.Lock()
		for _, a := range clk.asked {
			if tol < 0 && a != -1 || tol > 0 && a != tol {
				t.Fatalf("tolerance %v: waiter asked %v", tol, clk.asked)
			}
		}
		if n := len(clk.asked); tol < 0 && n != 9 || tol > 0 && n != 2 {
			t.Fatalf("tolerance %v: %d timed waits", tol, n)
		}
		clk.mu.Unlock()
	}
}
