// Package pacer is udt's precise-wait core: Waiter backends that block one goroutine until an
// absolute deadline, a pure release Scheduler that turns a rate into departure times, and the
// Pacer goroutine that sends each queued packet at its time for many flows at once.
//
// Why it exists: on Linux Go's runtime timer rounds every wait under 1 ms up to about 1 ms, so a
// sender that waits once per packet with it stalls near 11 Mbit/s (1472-byte packets). The backend
// that waits decides the bandwidth, so it is swappable and measured (examples/pacerbench).
package pacer

import "time"

// Waiter blocks one goroutine until an absolute deadline on the monotonic clock.
//
// Implementations are the backends constructed by NewWaiter; pacer/pacertest has a manual-clock one.
// Backends that hold OS resources (a locked thread, a timerfd) also implement io.Closer.
type Waiter interface {
	// Wait blocks until the clock reaches deadline or Wake is called, whichever comes first, and
	// reports whether a Wake ended it. It never returns before deadline unless woken. A zero
	// deadline waits for Wake alone (no wakeups, no CPU). Only one goroutine calls Wait at a time.
	Wait(deadline time.Time) (woken bool)

	// Wake ends the pending Wait early, or the next one if none is pending: one Wake is remembered
	// and further ones coalesce. It is safe from any goroutine and never blocks.
	Wake()
}

// TolerantWaiter is a Waiter that can spend less CPU on a wait that may end up to a tolerance
// after its deadline: the Pacer calls WaitTolerant instead of Wait when its Config.Tolerance is
// positive and its Waiter implements it. Hybrid does; the other backends never spin, so a
// tolerance has nothing to save in them and they keep Wait alone.
//
// The tolerance only ever makes a wait later, never earlier: the Pacer spends the early side of
// its tolerance itself, by releasing what is due within it when it wakes. A waiter that woke at
// deadline − tol would leave every packet tol early and, at high rates, wake once per packet.
type TolerantWaiter interface {
	Waiter

	// WaitTolerant is Wait with a tolerance tol ≥ 0: it never returns before deadline unless
	// woken, aims to return by deadline + tol, and spends CPU (spins) only for the part of its
	// wake-up tail that tol does not absorb, and only within its own CPU budget (Hybrid: a tenth
	// of the wait; past that it sleeps and returns late). WaitTolerant(d, 0) is Wait(d).
	WaitTolerant(deadline time.Time, tol time.Duration) (woken bool)
}
