package pacer

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Timerfd is the Linux Waiter that arms a timerfd (CLOCK_MONOTONIC, TFD_TIMER_ABSTIME) and reads
// it through the Go netpoller (timerfd_create(2)): the waiting goroutine parks like one reading a
// socket, no OS thread is held, and the kernel timer itself has no slack. Its lateness is the
// kernel's timer latency plus the netpoller's wake-up of the goroutine (tens of µs on a VM).
//
// Wake re-arms the same timer to expire at once, after setting the wake flag; Wait re-checks the
// flag after arming its own deadline, so a Wake racing with Wait is never lost, and an expiry
// that is neither the deadline nor a Wake just re-arms. A zero deadline disarms the timer and
// waits for Wake only. Close ends a pending Wait (woken); a Wait after Close falls back to the Go
// runtime's timer (gotimer's precision), so that a Pacer closed after its Waiter does not spin.
type Timerfd struct {
	wake   wakeSignal
	clock  monoClock
	f      *os.File // the timerfd, non-blocking, registered with the netpoller
	closed atomic.Bool
	buf    [8]byte // Wait only: the expiry count read from the timerfd
}

// NewTimerfd creates the timerfd. Close it to release the descriptor.
func NewTimerfd() (*Timerfd, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("pacer: timerfd_create: %w", err)
	}
	return &Timerfd{wake: newWakeSignal(), clock: newMonoClock(), f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// arm sets the timer to expire at CLOCK_MONOTONIC ns mono (absolute), or disarms it for 0.
func (t *Timerfd) arm(mono int64) error {
	var spec unix.ItimerSpec
	flags := 0
	if mono > 0 {
		spec.Value = monoTimespec(mono)
		flags = unix.TFD_TIMER_ABSTIME
	}
	return t.settime(flags, &spec)
}

// settime runs timerfd_settime under the file's reference count, so it never touches a closed
// (and possibly reused) descriptor.
func (t *Timerfd) settime(flags int, spec *unix.ItimerSpec) error {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.TimerfdSettime(int(fd), flags, spec, nil) }); err != nil {
		return err
	}
	return serr
}

// Wait implements Waiter.
func (t *Timerfd) Wait(deadline time.Time) (woken bool) {
	var mono int64
	if !deadline.IsZero() {
		mono = t.clock.toMono(deadline)
	}
	if t.wake.take() {
		return true
	}
	if t.closed.Load() {
		return afterClose(&t.wake, deadline)
	}
	for {
		if t.wake.take() || t.closed.Load() {
			return true
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return false
		}
		if err := t.arm(mono); err != nil {
			return true // closed
		}
		if t.wake.take() { // a Wake that armed before we did was overwritten: honour it here
			return true
		}
		if _, err := t.f.Read(t.buf[:]); err != nil {
			return true // closed
		}
	}
}

// Wake implements Waiter: it sets the wake flag and makes the timer expire now.
func (t *Timerfd) Wake() {
	if t.wake.wake() {
		_ = t.settime(0, &unix.ItimerSpec{Value: unix.Timespec{Nsec: 1}}) // error: closed
	}
}

// Close releases the timerfd, waking a pending Wait. It is idempotent and always returns nil.
func (t *Timerfd) Close() error {
	if t.closed.CompareAndSwap(false, true) {
		t.f.Close()
	}
	return nil
}
