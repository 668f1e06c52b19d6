package pacer

import "time"

// GoTimer is the portable Waiter built on the Go runtime timer (time.Timer) and a wake channel.
//
// It costs no CPU while waiting, but on Linux the runtime rounds any wait below 1 ms up to about
// 1 ms (the netpoller's epoll timeout has millisecond resolution), which caps a sender that
// waits once per 1472-byte packet near 11 Mbit/s. It makes no system calls of its own and never
// spins, so under testing/synctest it is exact: Wait returns at the virtual deadline. To use it
// in a synctest bubble, construct it inside the bubble (its timer and channel belong to the
// goroutine group that created them).
//
// The zero value is not usable; call NewGoTimer.
type GoTimer struct {
	wake  wakeSignal
	timer *time.Timer // created stopped; reused by every Wait
}

// NewGoTimer returns a GoTimer. It holds no OS resources and needs no Close.
func NewGoTimer() *GoTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &GoTimer{wake: newWakeSignal(), timer: t}
}

// Wait implements Waiter.
func (g *GoTimer) Wait(deadline time.Time) (woken bool) { return timerWait(&g.wake, g.timer, deadline) }

// timerWait is GoTimer's Wait on w with timer, which must be stopped and is left stopped: the
// Go runtime's timer for the deadline, w's doorbell for Wake.
func timerWait(w *wakeSignal, timer *time.Timer, deadline time.Time) (woken bool) {
	if w.take() {
		return true
	}
	if deadline.IsZero() {
		return w.block(nil)
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	// Since Go 1.23 Reset on a stopped timer discards any stale tick, so <-C means this deadline.
	timer.Reset(d)
	defer timer.Stop()
	for {
		select {
		case <-w.ch:
			if w.take() {
				return true
			}
		case <-timer.C:
			// The runtime fires a timer at or after its when (monotonic clock), never before.
			return false
		}
	}
}

// Wake implements Waiter.
func (g *GoTimer) Wake() { g.wake.wake() }
