package pacer

import (
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// These tests check the Waiter contract for every backend in real time. They assert only
// "never early", "woken" and "no goroutine left", never how late a wait was (see the benchmarks
// for that). hang is a deadlock guard, not a timing threshold.
const hang = 20 * time.Second

// eachWaiter runs f on a fresh instance of every backend this system supports, and checks that
// closing it leaves no goroutine behind.
func eachWaiter(t *testing.T, f func(t *testing.T, w Waiter)) {
	for _, name := range WaiterNames() {
		t.Run(name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			w, err := NewWaiter(name)
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer closeWaiter(w)
			f(t, w)
		})
	}
}

func closeWaiter(w Waiter) {
	if c, ok := w.(io.Closer); ok {
		c.Close()
	}
}

// waitAsync runs w.Wait(deadline) on a new goroutine and returns the result channel.
func waitAsync(w Waiter, deadline time.Time) <-chan bool {
	c := make(chan bool, 1)
	go func() { c <- w.Wait(deadline) }()
	return c
}

func recvOrHang(t *testing.T, c <-chan bool, what string) bool {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(hang):
		t.Fatalf("%s: Wait did not return", what)
		return false
	}
}

func TestWaiterNeverEarly(t *testing.T) {
	eachWaiter(t, func(t *testing.T, w Waiter) {
		for _, d := range []time.Duration{-time.Millisecond, 0, time.Nanosecond, time.Microsecond,
			10 * time.Microsecond, 50 * time.Microsecond, 200 * time.Microsecond, 999 * time.Microsecond,
			1100 * time.Microsecond, 3 * time.Millisecond} {
			for range 5 {
				deadline := time.Now().Add(d)
				if w.Wait(deadline) {
					t.Fatalf("wait %v: woken without Wake", d)
				}
				if now := time.Now(); now.Before(deadline) {
					t.Fatalf("wait %v: returned %v before the deadline", d, deadline.Sub(now))
				}
			}
		}
	})
}

func TestWaiterWakeBeforeWait(t *testing.T) {
	eachWaiter(t, func(t *testing.T, w Waiter) {
		for _, deadline := range []time.Time{{}, time.Now().Add(time.Hour)} {
			w.Wake()
			w.Wake() // coalesces with the first
			if !recvOrHang(t, waitAsync(w, deadline), "after Wake") {
				t.Fatal("Wait after Wake reported not woken")
			}
			// The second Wake was not remembered separately: a short wait now times out.
			d := time.Now().Add(100 * time.Microsecond)
			if w.Wait(d) {
				t.Fatal("two Wakes were remembered as two")
			}
			if time.Now().Before(d) {
				t.Fatal("returned before the deadline")
			}
		}
	})
}

func TestWaiterWakeDuringWait(t *testing.T) {
	eachWaiter(t, func(t *testing.T, w Waiter) {
		for _, deadline := range []time.Time{{}, time.Now().Add(time.Hour)} {
			for _, pause := range []time.Duration{0, 100 * time.Microsecond, 5 * time.Millisecond} {
				c := waitAsync(w, deadline)
				time.Sleep(pause)
				w.Wake()
				if !recvOrHang(t, c, "Wake during Wait") {
					t.Fatal("not woken")
				}
				// Nothing is left pending after the Wake was consumed.
				d := time.Now().Add(50 * time.Microsecond)
				if w.Wait(d) || time.Now().Before(d) {
					t.Fatal("stale Wake or early return after a consumed Wake")
				}
			}
		}
	})
}

func TestWaiterConcurrentWake(t *testing.T) {
	eachWaiter(t, func(t *testing.T, w Waiter) {
		const wakers, wakes = 8, 300
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range wakers {
			wg.Go(func() {
				for range wakes {
					w.Wake()
					time.Sleep(20 * time.Microsecond)
				}
			})
		}
		go func() { wg.Wait(); close(stop) }()
		woken, timed := 0, 0
		for done := false; !done; {
			select {
			case <-stop:
				done = true
			default:
			}
			deadline := time.Now().Add(30 * time.Microsecond)
			if w.Wait(deadline) {
				woken++
			} else {
				timed++
				if time.Now().Before(deadline) {
					t.Fatal("returned before the deadline")
				}
			}
		}
		if woken == 0 {
			t.Fatal("no Wait was woken by 2400 Wakes")
		}
		// All wakers are done: at most one Wake is still remembered, then waits time out again.
		w.Wait(time.Now().Add(10 * time.Microsecond))
		if d := time.Now().Add(50 * time.Microsecond); w.Wait(d) {
			t.Fatal("more than one Wake remembered")
		}
		t.Logf("%d woken, %d timed out", woken, timed)
	})
}

func TestWaiterCloseEndsWait(t *testing.T) {
	eachWaiter(t, func(t *testing.T, w Waiter) {
		c, ok := w.(io.Closer)
		if !ok {
			t.Skip("holds no resources")
		}
		res := waitAsync(w, time.Now().Add(time.Hour))
		time.Sleep(20 * time.Millisecond) // the Wait is pending, unless the machine is very busy
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case woken := <-res:
			if !woken {
				t.Fatal("Wait ended by Close reported not woken")
			}
		case <-time.After(time.Second):
			// The goroutine reached Wait only after Close: such a Wait waits on the runtime's
			// timer for its deadline or a Wake (TestWaiterUsableAfterClose), as a Pacer's Close
			// gives it.
			t.Log("the Wait began after Close; ended by Wake")
			w.Wake()
			if !recvOrHang(t, res, "Wake after Close") {
				t.Fatal("Wait ended by Wake reported not woken")
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
	})
}

func TestNewWaiterUnknown(t *testing.T) {
	_, err := NewWaiter("nope")
	if err == nil {
		t.Fatal("no error for an unknown name")
	}
	for _, n := range WaiterNames() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %q", err, n)
		}
	}
	want := []string{"hybrid", "nanosleep", "timerfd", "spin", "gotimer"}
	if got := WaiterNames(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("WaiterNames = %v, want %v", got, want)
	}
	WaiterNames()[0] = "x"
	if WaiterNames()[0] != "hybrid" {
		t.Error("WaiterNames shares its slice")
	}
	w, err := NewWaiter("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(*Hybrid); !ok || DefaultWaiter != "hybrid" {
		t.Errorf("default waiter is %T", w)
	}
	closeWaiter(w)
}

// edge is the upper edge of the tail bucket holding v ns: what lateTail.quantile reports.
func edge(v time.Duration) time.Duration {
	low, width := histBounds(int(tailIndex(int64(v))))
	return time.Duration(low + width - 1)
}

func TestHybridMarginFollowsTail(t *testing.T) {
	h := NewHybrid()
	if got, want := h.Margin(), edge(hybridStart-hybridGuard)+hybridGuard; got != want {
		t.Fatalf("start margin %v, want %v", got, want)
	}
	us := time.Microsecond
	for range tailWindow {
		h.record(10 * us)
	}
	if got, want := h.Margin(), edge(10*us)+hybridGuard; got != want {
		t.Fatalf("steady margin %v, want %v", got, want)
	}
	// Five outliers in the window of 512 are the 1 % above the p99: the margin does not move.
	for range 5 {
		h.record(5 * time.Millisecond)
	}
	if got, want := h.Margin(), edge(10*us)+hybridGuard; got != want {
		t.Fatalf("margin after 5 outliers %v, want %v", got, want)
	}
	h.record(40 * us) // a sixth sample above: the p99 is now the lowest of the six
	if got, want := h.Margin(), edge(40*us)+hybridGuard; got != want {
		t.Fatalf("margin after a sixth high sample %v, want %v", got, want)
	}
	h.record(3 * time.Millisecond)
	if got := h.Margin(); got != hybridMaxMargin {
		t.Fatalf("margin %v, want the clamp %v", got, hybridMaxMargin)
	}
	// A tolerance absorbs the tail: the margin is what is left of it, down to a pure sleep.
	if got, want := h.margin(500*us), hybridMaxMargin-500*us; got != want {
		t.Fatalf("margin with 500 µs tolerance %v, want %v", got, want)
	}
	if got := h.margin(2 * time.Millisecond); got != 0 {
		t.Fatalf("margin with 2 ms tolerance %v, want 0 (sleep only)", got)
	}
	// The spin budget of a tolerant wait: a margin over a tenth of the wait is not spun at all.
	if got, want := h.spinMargin(20*time.Millisecond, 500*us), hybridMaxMargin-500*us; got != want {
		t.Fatalf("20 ms wait, 500 µs tolerance: margin %v, want %v", got, want)
	}
	if got := h.spinMargin(5*time.Millisecond, 500*us); got != 0 {
		t.Fatalf("5 ms wait, 500 µs tolerance: margin %v, want 0 (a 1 ms spin is over a tenth)", got)
	}
	if got, want := h.spinMargin(10*(hybridMaxMargin-500*us), 500*us), hybridMaxMargin-500*us; got != want {
		t.Fatalf("a margin of exactly a tenth of the wait: %v, want %v (spun)", got, want)
	}
	if got := h.spinMargin(time.Millisecond, 0); got != hybridMaxMargin {
		t.Fatalf("exact wait: margin %v, want %v whatever its length", got, hybridMaxMargin)
	}
	// No sleep for longer than hybridForget: each forget halves the margin (to a bucket).
	now := time.Now()
	before := h.Margin()
	h.forget(now)
	if got, want := h.Margin(), edge(before/2-hybridGuard)+hybridGuard; got != want {
		t.Fatalf("forget: margin %v, want %v", got, want)
	}
	before = h.Margin()
	h.forget(now)
	if got, want := h.Margin(), edge(before/2-hybridGuard)+hybridGuard; got != want {
		t.Fatalf("second forget: margin %v, want %v", got, want)
	}
	for range tailWindow {
		h.record(0)
	}
	if got := h.Margin(); got != hybridMinMargin {
		t.Fatalf("margin %v, want the floor %v", got, hybridMinMargin)
	}
	if got := h.margin(us); got != hybridGuard-us {
		t.Fatalf("margin with 1 µs tolerance over a zero tail %v, want %v", got, hybridGuard-us)
	}
}

// TestLateTailQuantile compares the window's p99 with the exact one of the last tailWindow
// samples, for random tails: the estimate is never below it and at most one bucket above.
func TestLateTailQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var lt lateTail
	lt.reset(0)
	var all []int64
	for step := range 5000 {
		var v int64
		switch rng.IntN(3) {
		case 0:
			v = int64(rng.ExpFloat64() * 40_000)
		case 1:
			v = int64(rng.IntN(20))
		default:
			v = int64(rng.IntN(2_000_000))
		}
		all = append(all, v)
		lt.record(v)
		if step < tailWindow || step%97 != 0 {
			continue
		}
		win := slices.Clone(all[len(all)-tailWindow:])
		slices.Sort(win)
		exact := win[tailWindow-1-5] // the p99: 5 samples (1 % of 512, rounded down) above it
		got := lt.quantile(tailQuantile)
		if got < exact || got > exact+exact/8+1 {
			t.Fatalf("step %d: p99 estimate %d, exact %d", step, got, exact)
		}
	}
	lt.capAt(1000)
	if got := lt.quantile(tailQuantile); got != int64(edge(1000)) {
		t.Fatalf("after capAt(1000): %d", got)
	}
}

// TestWaiterUsableAfterClose: a Wait after Close waits (for its deadline or a Wake) instead of
// returning at once, so that a Pacer closed after its Waiter does not spin: a new user's check
// saw 18 million wakes a second from nanosleep and timerfd.
func TestWaiterUsableAfterClose(t *testing.T) {
	eachWaiter(t, func(t *testing.T, w Waiter) {
		c, ok := w.(io.Closer)
		if !ok {
			t.Skip("holds no resources")
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		w.Wait(time.Now()) // a Wake that Close left pending (Hybrid's Close is a Wake)
		// Count Waits over a fixed time: a Wait that returns at once makes millions.
		waits := 0
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); waits++ {
			if w.Wait(time.Now().Add(10 * time.Millisecond)) {
				t.Fatal("a Wait after Close reported a Wake nobody made")
			}
		}
		if waits > 20 { // 5 at 10 ms each, and a wide margin for a loaded machine
			t.Fatalf("%d Waits of 10 ms in 50 ms after Close: they return early", waits)
		}
		for _, deadline := range []time.Time{{}, time.Now().Add(time.Hour)} { // Wake ends both
			res := waitAsync(w, deadline)
			time.Sleep(time.Millisecond)
			w.Wake()
			if !recvOrHang(t, res, "Wake after Close") {
				t.Fatalf("a Wait (deadline %v) after Close, ended by Wake, reported not woken", deadline)
			}
		}
	})
}
