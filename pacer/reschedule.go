package pacer

import "time"

// Reschedule moves the flow to exactly at, earlier or later; a zero at makes it idle (Release is
// not called until the next Schedule or Reschedule). Schedule only ever moves a flow earlier, so
// a flow whose owner knows its exact next time (a connection's timers: an ACK sent, a keep-alive
// postponed) would otherwise be woken at every deadline it has since given up; with Reschedule
// a postponed deadline calls no Release. The waiter is woken only when the flow becomes the
// earliest and earlier than the pending wait; a wait for a deadline that moved later still ends
// at the old time and finds nothing due.
//
// If the flow's Release is running, at is queued and the earlier of at and Release's result
// wins, as with Schedule. Safe from any goroutine, including from inside Release; a no-op after
// Remove or Close.
func (h *Handle) Reschedule(at time.Time) {
	p := h.p
	p.mu.Lock()
	if h.removed || p.closed {
		p.mu.Unlock()
		return
	}
	switch {
	case at.IsZero():
		if h.idx >= 0 {
			p.heap.remove(h.idx)
		}
		p.mu.Unlock()
		return
	case h.idx >= 0:
		if at.Equal(h.at) {
			p.mu.Unlock()
			return
		}
		h.at = at
		p.heap.fix(h.idx)
	default:
		h.at = at
		p.heap.push(h)
	}
	wake := h.idx == 0 && p.waiting && (p.waitDeadline.IsZero() || at.Before(p.waitDeadline))
	if wake {
		p.waitDeadline = at
	}
	p.mu.Unlock()
	if wake {
		p.w.Wake()
	}
}
