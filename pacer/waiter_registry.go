package pacer

import (
	"fmt"
	"strings"
)

// DefaultWaiter is the backend name NewWaiter("") and the tools use by default: hybrid, the
// precise backend with the lowest CPU cost (on systems other than Linux its OS sleep is a
// time.Timer, whose wake-up tail the margin learns the same way).
const DefaultWaiter = "hybrid"

// waiterNames is the stable order of WaiterNames: precise first, portable last.
var waiterNames = []string{"hybrid", "nanosleep", "timerfd", "spin", "gotimer"}

// WaiterNames returns the names NewWaiter accepts, in a stable order:
// hybrid, nanosleep, timerfd, spin, gotimer. Every name is listed on every system; the
// Linux-only ones (nanosleep, timerfd) fail to construct elsewhere. The slice is a fresh copy.
func WaiterNames() []string { return append([]string(nil), waiterNames...) }

// NewWaiter constructs the backend with the given name (see WaiterNames; "" means
// DefaultWaiter). An unknown name yields an error listing the valid ones; a Linux-only backend on
// another system yields an error wrapping errors.ErrUnsupported. Backends that hold OS
// resources implement io.Closer (Hybrid, Nanosleep, Timerfd): close them when done, e.g.
// with `if c, ok := w.(io.Closer); ok { c.Close() }`. GoTimer and Spin hold nothing to close.
func NewWaiter(name string) (Waiter, error) {
	switch name {
	case "", "hybrid":
		return NewHybrid(), nil
	case "nanosleep":
		w, err := NewNanosleep()
		if err != nil {
			return nil, err // not a typed nil inside a non-nil Waiter
		}
		return w, nil
	case "timerfd":
		w, err := NewTimerfd()
		if err != nil {
			return nil, err
		}
		return w, nil
	case "spin":
		return NewSpin(), nil
	case "gotimer":
		return NewGoTimer(), nil
	}
	return nil, fmt.Errorf("pacer: unknown waiter %q (valid: %s)", name, strings.Join(waiterNames, ", "))
}
