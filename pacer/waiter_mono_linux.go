package pacer

import (
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// monoClock maps a time.Time (with its monotonic reading) to CLOCK_MONOTONIC nanoseconds, the
// clock that clock_nanosleep, futex and timerfd deadlines are given on.
//
// Go's monotonic clock on Linux is CLOCK_MONOTONIC itself, so the offset between the two is
// constant: it is measured once by bracketing one clock_gettime between two time.Now calls,
// keeping the tightest of a few brackets. The mapping is rounded up (by at most the bracket
// width, typically < 1 µs), so a kernel deadline of toMono(t) never expires before t.
type monoClock struct {
	base     time.Time
	baseMono int64 // CLOCK_MONOTONIC ns at or after base
}

func newMonoClock() monoClock {
	var c monoClock
	best := time.Duration(math.MaxInt64)
	for range 8 {
		var ts unix.Timespec
		t1 := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			panic("pacer: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux
		}
		t2 := time.Now()
		if w := t2.Sub(t1); w < best {
			best, c.base, c.baseMono = w, t1, ts.Nano()
		}
	}
	return c
}

// toMono returns CLOCK_MONOTONIC ns no earlier than the instant t.
func (c *monoClock) toMono(t time.Time) int64 { return c.baseMono + int64(t.Sub(c.base)) }

// timespec converts CLOCK_MONOTONIC ns to a Timespec.
func monoTimespec(ns int64) unix.Timespec { return unix.NsecToTimespec(ns) }
