package pacer

import (
	"sync/atomic"
	"time"
)

// Hybrid is the default Waiter on Linux: it sleeps in the OS until deadline − margin, then spins
// on time.Now for the rest, so it is as precise as Spin while burning CPU only for the margin.
//
// The margin follows the observed wake-up tail of the OS sleep: Hybrid records how late each sleep
// woke (oversleep) over its last 512 sleeps and takes their 99th percentile plus 2 µs (the p99 at
// which the pacer's precision is stated), clamped to [3 µs, 1.5 ms]. Five samples lie above that
// quantile, so a one-off 1–10 ms vCPU preemption cannot hold the margin up, while a noisier system
// raises it within a few hundred waits. It starts at about 50 µs. Since only sleeps teach it, and an
// exact wait shorter than the margin does not sleep, a margin that saw no sleep for a second is
// halved (every sample is capped at half of it), so it comes back down after a burst of load even
// when the waits are short; a sleep that then wakes late raises it again.
//
// WaitTolerant trades that spin for a tolerance: a wait that may end up to tol after its deadline
// needs a margin of only p99 + 2 µs − tol, none once the tail fits in the tolerance (then it is a
// pure OS sleep to the deadline, late by the wake-up's own lateness); the spin covers the rest of
// the tail, up to the deadline. A tolerant wait spins only if that margin is at most a tenth of
// the wait; otherwise it sleeps to the deadline: on a host whose tail is far wider than the
// tolerance (seen on a VM: a p99 oversleep of ~600 µs for 1.2 ms sleeps, where the 200 µs default
// spun up to 400 µs of every 1.2 ms at 10 Mbit/s, 12–39 % of a core in four runs) a spin the
// budget allows cannot hold the p99 anyway, and would buy only departures the tolerance already
// counts as on time.
// Those waits come late by the wake-up's own lateness, which the pacer's catch-up repays.
// Wait is WaitTolerant with no tolerance.
//
// The OS sleep is, on Linux, a futex wait with an absolute CLOCK_MONOTONIC timeout on the calling
// goroutine's own thread with PR_SET_TIMERSLACK = 1 ns (the default 50 µs slack would otherwise be
// added to every wake-up), and elsewhere a time.Timer. Wake interrupts both phases: a futex wake
// (or the wake channel) ends the sleep, and the spin checks an atomic flag on every iteration.
// A zero deadline blocks in the Go scheduler until Wake (no CPU, no wake-ups). When less than
// 20 µs would be left to sleep, Hybrid spins the whole wait: a shorter sleep saves less CPU than
// the system call, context switch and timer interrupt it costs, and only adds jitter.
//
// Side effect on Linux: the Go runtime threads Hybrid sleeps on keep a timer slack of 1 ns, which
// only makes their other timed sleeps more precise.
//
// The zero value is not usable; call NewHybrid. Hybrid holds no OS resources; its Close only
// wakes a pending Wait, and the Hybrid stays usable.
type Hybrid struct {
	wake   wakeSignal
	sleep  hybridSleeper // platform OS sleep (waiter_hybrid_linux.go / _other.go)
	tail   atomic.Int64  // ns: the p99 oversleep of the window; read by Margin from any goroutine
	late   lateTail      // oversleep samples; Wait only
	learnt time.Time     // when the window last changed; Wait only
}

const (
	hybridGuard     = 2 * time.Microsecond
	hybridMinMargin = 3 * time.Microsecond
	hybridMaxMargin = 1500 * time.Microsecond
	hybridStart     = 50 * time.Microsecond
	hybridForget    = time.Second           // a margin with no sleep for this long is halved
	hybridMinSleep  = 20 * time.Microsecond // shorter OS sleeps are not worth their cost

	// tolerantSpinShare is the most of a tolerant wait that Hybrid spins: a tenth, so that the
	// spin costs the pacing thread at most a tenth of a core, the default pacer's budget at 100
	// Mbit/s (issue 12), however wide the host's wake-up tail.
	tolerantSpinShare = 0.1
)

// NewHybrid returns a Hybrid with the starting margin of 50 µs.
func NewHybrid() *Hybrid {
	h := &Hybrid{wake: newWakeSignal()}
	h.sleep.init()
	h.learnt = time.Now()
	h.late.reset(int64(hybridStart - hybridGuard))
	h.recompute()
	return h
}

// Margin reports the current spin margin of an exact wait (Wait): how long before a deadline the
// OS sleep ends. A tolerant wait's margin is this minus its tolerance, at least zero.
func (h *Hybrid) Margin() time.Duration { return h.margin(0) }

// margin is the spin margin for a wait with tolerance tol: the part of the wake-up tail (p99 +
// guard) that tol does not absorb. With no tolerance it is clamped to [hybridMinMargin,
// hybridMaxMargin]; with one it may fall to zero (a pure sleep).
func (h *Hybrid) margin(tol time.Duration) time.Duration {
	m := min(time.Duration(h.tail.Load())+hybridGuard, hybridMaxMargin)
	if tol <= 0 {
		return max(m, hybridMinMargin)
	}
	return max(m-tol, 0)
}

// spinMargin is the margin of one wait of length wait with tolerance tol: margin(tol), or, for a
// tolerant wait whose margin is over tolerantSpinShare of its length, none (see Hybrid).
func (h *Hybrid) spinMargin(wait, tol time.Duration) time.Duration {
	m := h.margin(tol)
	if tol > 0 && float64(m) > float64(wait)*tolerantSpinShare {
		return 0
	}
	return m
}

// Wait implements Waiter.
func (h *Hybrid) Wait(deadline time.Time) (woken bool) { return h.WaitTolerant(deadline, 0) }

// WaitTolerant implements TolerantWaiter: it returns no earlier than deadline unless woken, and
// spins only for the part of its wake-up tail that tol does not absorb (see Hybrid). A tolerance
// ≤ 0 is an exact Wait.
func (h *Hybrid) WaitTolerant(deadline time.Time, tol time.Duration) (woken bool) {
	if deadline.IsZero() {
		return h.wake.block(nil)
	}
	if h.wake.take() {
		return true
	}
	tol = max(tol, 0)
	now := time.Now()
	if now.Sub(h.learnt) > hybridForget && h.Margin() > hybridMinMargin {
		h.forget(now)
	}
	wakeAt := deadline.Add(-h.spinMargin(deadline.Sub(now), tol))
	if wakeAt.Sub(now) >= hybridMinSleep {
		woken, late := h.sleep.sleep(&h.wake, wakeAt)
		if woken {
			return true
		}
		if late >= 0 { // a timed-out sleep: learn its oversleep
			h.record(late)
			h.learnt = wakeAt
		}
	}
	return spinUntil(&h.wake, deadline)
}

// Wake implements Waiter.
func (h *Hybrid) Wake() {
	if h.wake.wake() {
		h.sleep.interrupt()
	}
}

// Close implements io.Closer; Hybrid holds no resources, so it only wakes a pending Wait.
func (h *Hybrid) Close() error {
	h.Wake()
	return nil
}

// forget halves the exact margin by capping every sample at half of it.
func (h *Hybrid) forget(now time.Time) {
	h.late.capAt(int64(h.Margin()/2 - hybridGuard))
	h.learnt = now
	h.recompute()
}

// record adds one oversleep sample and recomputes the margin.
func (h *Hybrid) record(late time.Duration) {
	h.late.record(int64(late))
	h.recompute()
}

// recompute publishes the window's p99.
func (h *Hybrid) recompute() { h.tail.Store(h.late.quantile(tailQuantile)) }
