package pacer

import (
	"sync/atomic"
	"time"
)

// Hybrid is the default Waiter on Linux: it sleeps in the OS until deadline − margin, then spins
// on time.Now for the rest, so it is as precise as Spin while burning CPU only for the margin.
//
// The margin follows the observed wake-up tail of the OS sleep: Hybrid records how late each sleep
// woke (oversleep, ns) in a ring of the last 128 sleeps and sets the margin to the third-largest of
// them (about the 98th percentile) plus 2 µs, clamped to [3 µs, 1.5 ms]. A one-off 1–10 ms vCPU
// preemption therefore cannot hold the margin up (it needs three in 128 sleeps), while a noisier
// system raises it within a few hundred waits. It starts at 50 µs. Since only sleeps teach it,
// and a wait shorter than the margin does not sleep, a margin that saw no sleep for a second is
// halved (the ring is capped at half of it), so it comes back down after a burst of load even when
// the waits are short; a sleep that then wakes late raises it again.
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
	sleep  hybridSleeper     // platform OS sleep (waiter_hybrid_linux.go / _other.go)
	margin atomic.Int64      // ns; read by Margin from any goroutine
	tail   [hybridRing]int64 // oversleep samples, ns; Wait only
	next   int
	learnt time.Time // when the ring last changed; Wait only
}

const (
	hybridRing      = 128
	hybridRank      = 3 // margin = hybridRank-th largest oversleep in the ring
	hybridGuard     = 2 * time.Microsecond
	hybridMinMargin = 3 * time.Microsecond
	hybridMaxMargin = 1500 * time.Microsecond
	hybridStart     = 50 * time.Microsecond
	hybridForget    = time.Second           // a margin with no sleep for this long is halved
	hybridMinSleep  = 20 * time.Microsecond // shorter OS sleeps are not worth their cost
)

// NewHybrid returns a Hybrid with the starting margin of 50 µs.
func NewHybrid() *Hybrid {
	h := &Hybrid{wake: newWakeSignal()}
	h.sleep.init()
	h.learnt = time.Now()
	for i := range h.tail {
		h.tail[i] = int64(hybridStart - hybridGuard)
	}
	h.margin.Store(int64(hybridStart))
	return h
}

// Margin reports the current spin margin: how long before a deadline the OS sleep ends.
func (h *Hybrid) Margin() time.Duration { return time.Duration(h.margin.Load()) }

// Wait implements Waiter.
func (h *Hybrid) Wait(deadline time.Time) (woken bool) {
	if deadline.IsZero() {
		return h.wake.block(nil)
	}
	if h.wake.take() {
		return true
	}
	margin := time.Duration(h.margin.Load())
	now := time.Now()
	if margin > hybridMinMargin && now.Sub(h.learnt) > hybridForget {
		margin = h.forget(now, margin)
	}
	wakeAt := deadline.Add(-margin)
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

// forget halves the margin by capping every sample, and returns the new margin.
func (h *Hybrid) forget(now time.Time, margin time.Duration) time.Duration {
	limit := int64(margin/2 - hybridGuard)
	for i, v := range h.tail {
		h.tail[i] = min(v, limit)
	}
	h.learnt = now
	return h.recompute()
}

// record adds one oversleep sample and recomputes the margin.
func (h *Hybrid) record(late time.Duration) {
	h.tail[h.next] = int64(late)
	h.next = (h.next + 1) % hybridRing
	h.recompute()
}

// recompute sets the margin from the ring and returns it.
func (h *Hybrid) recompute() time.Duration {
	// The hybridRank-th largest sample, by a single pass keeping the top hybridRank.
	var top [hybridRank]int64
	for i := range top {
		top[i] = -1
	}
	for _, v := range h.tail {
		if v <= top[hybridRank-1] {
			continue
		}
		j := hybridRank - 1
		for j > 0 && v > top[j-1] {
			top[j] = top[j-1]
			j--
		}
		top[j] = v
	}
	m := time.Duration(top[hybridRank-1]) + hybridGuard
	m = min(max(m, hybridMinMargin), hybridMaxMargin)
	h.margin.Store(int64(m))
	return m
}
