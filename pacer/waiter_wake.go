package pacer

import (
	"sync/atomic"
	"time"
)

// wakeSignal is the remembered, coalescing Wake shared by the backends.
//
// pending is the truth: Wake sets it and the waiter consumes it with take. ch is only a doorbell
// for waiters that block in the Go scheduler: a token in ch means "look at pending again", so a
// stale token costs one extra check and never a false wake-up, and a Wake can never be lost
// (pending is set before the token is sent, and the waiter checks pending before blocking).
type wakeSignal struct {
	pending atomic.Bool
	ch      chan struct{} // buffered 1
}

func newWakeSignal() wakeSignal { return wakeSignal{ch: make(chan struct{}, 1)} }

// wake records a Wake and rings the doorbell. It reports whether this call set pending (false:
// a Wake was already pending and this one coalesced into it). It never blocks.
func (w *wakeSignal) wake() bool {
	if w.pending.Load() || !w.pending.CompareAndSwap(false, true) {
		return false
	}
	select {
	case w.ch <- struct{}{}:
	default: // a token is already there; the waiter will re-check pending
	}
	return true
}

// take consumes a pending Wake, reporting whether there was one.
func (w *wakeSignal) take() bool {
	return w.pending.Load() && w.pending.CompareAndSwap(true, false)
}

// block waits in the Go scheduler for a Wake (zero CPU, zero wake-ups), or until done is closed
// (nil: never). It reports true in both cases: a Wake or Close ended the wait.
func (w *wakeSignal) block(done <-chan struct{}) bool {
	for {
		if w.take() {
			return true
		}
		select {
		case <-w.ch:
		case <-done:
			return true
		}
	}
}

// afterClose is Wait for a backend that was closed while something still waits on it (a Pacer
// closed after its Waiter): GoTimer's Wait on w, so that the caller gets gotimer's precision
// (about 1 ms on Linux) instead of a Wait that returns at once, which a pacer would call in a
// loop, spinning a core.
func afterClose(w *wakeSignal, deadline time.Time) bool {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return timerWait(w, t, deadline)
}
