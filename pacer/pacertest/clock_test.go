package pacertest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/udtgo/udt/pacer"
	"github.com/udtgo/udt/pacer/pacertest"
	"go.uber.org/goleak"
)

var _ pacer.Waiter = (*pacertest.Clock)(nil)

var t0 = time.Unix(1000, 0)

func waitAsync(c *pacertest.Clock, d time.Time) <-chan bool {
	r := make(chan bool, 1)
	go func() { r <- c.Wait(d) }()
	return r
}

func TestAdvanceReleasesAtDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := pacertest.NewClock(t0)
	if _, ok := c.BlockedUntil(); ok {
		t.Fatal("blocked before any Wait")
	}
	r := waitAsync(c, t0.Add(100*time.Microsecond))
	<-c.Blocked()
	if d, ok := c.BlockedUntil(); !ok || !d.Equal(t0.Add(100*time.Microsecond)) {
		t.Fatalf("BlockedUntil = %v, %v", d, ok)
	}
	c.Advance(99 * time.Microsecond)
	select {
	case <-r:
		t.Fatal("released before the deadline")
	default:
	}
	if _, ok := c.BlockedUntil(); !ok {
		t.Fatal("no longer blocked at 99µs")
	}
	c.Advance(time.Microsecond)
	if woken := <-r; woken {
		t.Fatal("deadline reported as woken")
	}
	if !c.Now().Equal(t0.Add(100 * time.Microsecond)) {
		t.Fatalf("Now = %v", c.Now())
	}
	if c.Waits() != 1 {
		t.Fatalf("Waits = %d", c.Waits())
	}
	// Past or current deadline: returns at once without blocking.
	if c.Wait(c.Now()) || c.Wait(t0) || c.Waits() != 1 {
		t.Fatal("a reached deadline blocked or reported woken")
	}
}

func TestWake(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := pacertest.NewClock(t0)
	c.Wake()
	c.Wake()
	if !c.Wait(t0.Add(time.Hour)) {
		t.Fatal("pending Wake not honoured")
	}
	for _, d := range []time.Time{{}, t0.Add(time.Hour)} {
		r := waitAsync(c, d)
		<-c.Blocked()
		c.Wake()
		if !<-r {
			t.Fatal("Wake during Wait not reported")
		}
	}
	// Nothing remembered: the next Wait blocks until the clock reaches it.
	r := waitAsync(c, t0.Add(time.Second))
	<-c.Blocked()
	if d, ok := c.AdvanceToBlocked(); !ok || !d.Equal(t0.Add(time.Second)) {
		t.Fatalf("AdvanceToBlocked = %v, %v", d, ok)
	}
	if <-r {
		t.Fatal("stale Wake")
	}
	// A zero-deadline Wait is not released by time.
	r = waitAsync(c, time.Time{})
	<-c.Blocked()
	if _, ok := c.AdvanceToBlocked(); ok {
		t.Fatal("AdvanceToBlocked released a Wake-only wait")
	}
	c.Advance(time.Hour)
	select {
	case <-r:
		t.Fatal("zero deadline released by Advance")
	default:
	}
	c.Wake()
	<-r
}

func TestBackwardsPanics(t *testing.T) {
	c := pacertest.NewClock(t0)
	for name, f := range map[string]func(){
		"Advance":   func() { c.Advance(-1) },
		"AdvanceTo": func() { c.AdvanceTo(t0.Add(-1)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s backwards did not panic", name)
				}
			}()
			f()
		}()
	}
}

// A paced loop tested with the manual clock: three sends 250 µs apart, exactly.
func ExampleClock() {
	clk := pacertest.NewClock(time.Unix(0, 0))
	sent := make(chan time.Duration, 3)
	go func() {
		next := clk.Now()
		for range 3 {
			next = next.Add(250 * time.Microsecond)
			clk.Wait(next)
			sent <- clk.Now().Sub(time.Unix(0, 0))
		}
	}()
	for range 3 {
		<-clk.Blocked()
		clk.AdvanceToBlocked()
		fmt.Println(<-sent)
	}
	// Output:
	// 250µs
	// 500µs
	// 750µs
}
