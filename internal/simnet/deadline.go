package simnet

import (
	"sync"
	"time"
)

// deadline is a settable point in time whose channel is closed while the deadline has passed,
// waking every goroutine blocked on it. Setting a new deadline while nobody has been woken keeps
// the same channel, so a blocked reader sees the change. One timer per deadline, reused.
type deadline struct {
	mu    sync.Mutex
	when  time.Time // zero: no deadline
	timer *time.Timer
	ch    chan struct{}
}

func newDeadline() *deadline { return &deadline{ch: make(chan struct{})} }

func closedChan(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// set sets the deadline; the zero time clears it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.when = t
	if d.timer != nil {
		d.timer.Stop()
	}
	closed := closedChan(d.ch)
	if !t.IsZero() {
		if dur := time.Until(t); dur <= 0 {
			if !closed {
				close(d.ch)
			}
			return
		} else if d.timer == nil {
			d.timer = time.AfterFunc(dur, d.fire)
		} else {
			d.timer.Reset(dur)
		}
	}
	if closed {
		d.ch = make(chan struct{})
	}
}

// fire is the timer callback; a stale firing (the deadline moved) does nothing.
func (d *deadline) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.when.IsZero() && !time.Now().Before(d.when) && !closedChan(d.ch) {
		close(d.ch)
	}
}

// expired reports whether the deadline has passed, by the clock: a timer callback due at the
// same instant may not have run yet.
func (d *deadline) expired() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.when.IsZero() && !time.Now().Before(d.when)
}

// wait returns a channel closed once the deadline passes.
func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}
