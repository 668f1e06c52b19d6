package pacer

import "time"

// Spin is the Waiter that busy-loops on time.Now until the deadline, checking for Wake on every
// iteration (an atomic load). Its lateness is the cost of one time.Now call (tens of ns), at the
// price of a whole CPU for the length of every wait; it exists as the precision reference and for
// the final phase of Hybrid. A zero deadline does not spin: it blocks in the Go scheduler until
// Wake.
//
// The zero value is not usable; call NewSpin.
type Spin struct {
	wake wakeSignal
}

// NewSpin returns a Spin. It holds no OS resources and needs no Close.
func NewSpin() *Spin { return &Spin{wake: newWakeSignal()} }

// Wait implements Waiter.
func (s *Spin) Wait(deadline time.Time) (woken bool) {
	if deadline.IsZero() {
		return s.wake.block(nil)
	}
	return spinUntil(&s.wake, deadline)
}

// Wake implements Waiter.
func (s *Spin) Wake() { s.wake.wake() }

// spinUntil loops until time.Now reaches deadline or a Wake is pending.
func spinUntil(w *wakeSignal, deadline time.Time) (woken bool) {
	for {
		if w.take() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
	}
}
