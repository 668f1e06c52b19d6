// Package pacertest provides a manual-clock pacer.Waiter for deterministic tests and benchmarks
// of code that paces through a Waiter.
//
// The Clock's time moves only when the test calls Advance or AdvanceTo; a Wait blocks until the
// clock reaches its deadline or Wake is called. Tests synchronise with the waiting goroutine
// through Blocked (a channel closed while a Wait is blocked) and BlockedUntil, so no real time,
// sleep or polling is involved:
//
//	clk := pacertest.NewClock(time.Unix(0, 0))
//	go run(clk)                      // code under test, calls clk.Wait(deadline)
//	<-clk.Blocked()                  // it is now blocked
//	d, _ := clk.BlockedUntil()       // on this deadline
//	clk.AdvanceTo(d)                 // release it
//
// The code under test must read the time from the Clock (Now) rather than from time.Now.
// For tests of code that reads time.Now itself, use testing/synctest with pacer.GoTimer instead.
package pacertest

import (
	"sync"
	"time"
)

// Clock is a manual clock and a pacer.Waiter on it. All methods are safe for concurrent use;
// as for every Waiter, only one goroutine may Wait at a time.
type Clock struct {
	mu       sync.Mutex // never held while blocking
	now      time.Time
	pending  bool          // a Wake is remembered
	waiting  bool          // a Wait is blocked
	deadline time.Time     // the blocked Wait's deadline; zero: Wake only
	release  chan bool     // buffered 1: ends the blocked Wait with woken
	blocked  chan struct{} // closed while a Wait is blocked; replaced when it ends
	waits    int           // number of Waits that blocked
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, release: make(chan bool, 1), blocked: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and releases a blocked Wait whose deadline it reaches.
// It panics if d is negative.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("pacertest: Advance by a negative duration")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// AdvanceTo moves the clock to t and releases a blocked Wait whose deadline it reaches.
// It panics if t is before Now.
func (c *Clock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic("pacertest: AdvanceTo moves the clock backwards")
	}
	c.setLocked(t)
}

// AdvanceToBlocked moves the clock to the blocked Wait's deadline, releasing it, and returns that
// deadline. It reports false (and changes nothing) if no Wait is blocked or the blocked one waits
// for Wake only.
func (c *Clock) AdvanceToBlocked() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.waiting || c.deadline.IsZero() {
		return time.Time{}, false
	}
	d := c.deadline
	c.setLocked(d)
	return d, true
}

func (c *Clock) setLocked(t time.Time) {
	c.now = t
	if c.waiting && !c.deadline.IsZero() && !t.Before(c.deadline) {
		c.endLocked(false)
	}
}

// endLocked releases the blocked Wait.
func (c *Clock) endLocked(woken bool) {
	c.waiting = false
	c.deadline = time.Time{}
	c.blocked = make(chan struct{})
	c.release <- woken // never blocks: buffered 1 and drained by the Wait before the next one
}

// Wait implements pacer.Waiter on the manual clock: it returns false once the clock reaches
// deadline (at once if it already has), or true when Wake is called (at once if one is pending).
// A zero deadline waits for Wake only.
func (c *Clock) Wait(deadline time.Time) (woken bool) {
	c.mu.Lock()
	if c.waiting {
		c.mu.Unlock()
		panic("pacertest: concurrent Wait")
	}
	if c.pending {
		c.pending = false
		c.mu.Unlock()
		return true
	}
	if !deadline.IsZero() && !c.now.Before(deadline) {
		c.mu.Unlock()
		return false
	}
	c.waiting, c.deadline = true, deadline
	c.waits++
	close(c.blocked)
	c.mu.Unlock()
	return <-c.release
}

// Wake implements pacer.Waiter: it ends the blocked Wait, or is remembered (once) for the next.
func (c *Clock) Wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting {
		c.endLocked(true)
		return
	}
	c.pending = true
}

// Blocked returns a channel that is closed while a Wait is blocked on the clock (already closed
// if one is blocked now). Receive from it to know that the code under test has reached its wait.
func (c *Clock) Blocked() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blocked
}

// BlockedUntil reports the deadline of the blocked Wait (zero for a Wake-only wait) and whether
// a Wait is blocked at all.
func (c *Clock) BlockedUntil() (deadline time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, c.waiting
}

// Waits returns how many Waits have blocked so far (Waits that returned at once are not counted).
func (c *Clock) Waits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}
