//go:build !linux

package pacer

import (
	"errors"
	"fmt"
	"time"
)

// Nanosleep is the Linux clock_nanosleep Waiter; on this system NewNanosleep returns an error
// wrapping errors.ErrUnsupported and the type is never constructed.
type Nanosleep struct{ unsupported }

// NewNanosleep returns an error wrapping errors.ErrUnsupported: clock_nanosleep on a locked
// thread with PR_SET_TIMERSLACK is Linux-only.
func NewNanosleep() (*Nanosleep, error) {
	return nil, fmt.Errorf("pacer: nanosleep waiter needs Linux: %w", errors.ErrUnsupported)
}

// Timerfd is the Linux timerfd Waiter; on this system NewTimerfd returns an error wrapping
// errors.ErrUnsupported and the type is never constructed.
type Timerfd struct{ unsupported }

// NewTimerfd returns an error wrapping errors.ErrUnsupported: timerfd is Linux-only.
func NewTimerfd() (*Timerfd, error) {
	return nil, fmt.Errorf("pacer: timerfd waiter needs Linux: %w", errors.ErrUnsupported)
}

// unsupported gives the placeholder types the Waiter and io.Closer methods, so code that names
// them compiles everywhere.
type unsupported struct{}

func (unsupported) Wait(time.Time) bool { return true }
func (unsupported) Wake()               {}
func (unsupported) Close() error        { return nil }
