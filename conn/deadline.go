package conn

import (
	"sync"
	"time"
)

// deadline is a settable point in time that blocked calls select on, as net.Pipe does: setting
// it wakes every waiter whose deadline has passed, and a deadline in the past fails calls at once
// without being fatal (design §5).
type deadline struct {
	mu    sync.Mutex
	gen   uint64        // bumped by every set: a stale timer callback does nothing
	timer *time.Timer   // pending expiry, nil if none
	ch    chan struct{} // closed while the deadline has passed
}

func newDeadline() *deadline { return &deadline{ch: make(chan struct{})} }

// set arms the deadline at t; the zero time disarms it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	expired := isClosed(d.ch)
	if t.IsZero() {
		if expired {
			d.ch = make(chan struct{})
		}
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		if !expired {
			close(d.ch)
		}
		return
	}
	if expired {
		d.ch = make(chan struct{})
	}
	gen, ch := d.gen, d.ch
	d.timer = time.AfterFunc(wait, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen == gen && !isClosed(ch) {
			close(ch)
		}
	})
}

// done returns a channel that is closed once the deadline has passed.
func (d *deadline) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

// stop releases the timer.
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
