package pacer

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Nanosleep is the Linux Waiter that sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)
// on a dedicated goroutine locked to its own OS thread, whose timer slack is set to 1 ns with
// prctl(PR_SET_TIMERSLACK) (the default 50 µs slack would otherwise be added to every wake-up;
// clock_nanosleep(2), prctl(2)). EINTR is retried.
//
// Wait hands the deadline to that thread and blocks in the Go scheduler until the thread reports
// it reached, so its lateness is the kernel's timer latency plus one cross-thread hand-off
// (tens of µs on a VM) and its CPU cost is one wake-up of each side. Wake ends a pending Wait at
// once; the thread's abandoned sleep is interrupted with a SIGURG sent to it by tgkill(2) (the
// signal Go's own scheduler uses for preemption, so it is harmless to the program), and the
// thread sleeps in slices of at most 1 ms so that even a signal lost to a race costs at most 1 ms.
// For the same reason Close never waits more than about 1 ms for the thread to end.
//
// A zero deadline blocks in the Go scheduler until Wake, with no thread involvement. Close ends a
// pending Wait (woken); a Wait after Close falls back to the Go runtime's timer (gotimer's
// precision), so that a Pacer closed after its Waiter does not spin.
type Nanosleep struct {
	wake  wakeSignal
	clock monoClock
	gen   uint64 // Wait only: the current request's generation

	req  chan nanoReq  // buffered 1: the latest request for the thread
	done chan uint64   // the thread reports the generation it completed
	want atomic.Uint64 // generation the caller still waits for; 0 when none
	busy atomic.Bool   // the thread is inside clock_nanosleep (worth signalling)
	tid  int           // the locked thread's id, for tgkill

	quit      chan struct{}
	closed    atomic.Bool
	exited    chan struct{}
	closeOnce sync.Once
}

type nanoReq struct {
	mono int64 // CLOCK_MONOTONIC ns
	gen  uint64
}

// nanoSlice bounds one clock_nanosleep call, so that a lost interrupt costs at most this long.
const nanoSlice = time.Millisecond

// NewNanosleep starts the sleeper thread and returns the waiter. Close it to end the thread.
// The error is non-nil only if the thread could not set its timer slack.
func NewNanosleep() (*Nanosleep, error) {
	n := &Nanosleep{
		wake:   newWakeSignal(),
		clock:  newMonoClock(),
		req:    make(chan nanoReq, 1),
		done:   make(chan uint64),
		quit:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	ready := make(chan error, 1)
	go n.thread(ready)
	if err := <-ready; err != nil {
		<-n.exited
		return nil, err
	}
	return n, nil
}

// thread owns the locked OS thread. It never unlocks it: when the goroutine returns, the runtime
// ends the thread, so its changed timer slack never leaks into the rest of the program.
func (n *Nanosleep) thread(ready chan<- error) {
	defer close(n.exited)
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		ready <- err
		return
	}
	n.tid = unix.Gettid()
	ready <- nil
	for {
		var r nanoReq
		select {
		case r = <-n.req:
		case <-n.quit:
			return
		}
		if !n.sleepUntil(r) {
			continue // abandoned: woken, superseded or closed
		}
		select {
		case n.done <- r.gen:
		case <-n.quit:
			return
		}
	}
}

// sleepUntil sleeps until CLOCK_MONOTONIC reaches r.mono; false if the request was abandoned.
func (n *Nanosleep) sleepUntil(r nanoReq) bool {
	for {
		if n.want.Load() != r.gen || n.closed.Load() {
			return false
		}
		now := n.clock.toMono(time.Now())
		if now >= r.mono {
			return true
		}
		ts := monoTimespec(min(r.mono, now+int64(nanoSlice)))
		n.busy.Store(true)
		if n.want.Load() == r.gen && !n.closed.Load() {
			_ = unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) // EINTR: loop
		}
		n.busy.Store(false)
	}
}

// kick interrupts the thread's clock_nanosleep, if it is in one.
func (n *Nanosleep) kick() {
	if n.busy.Load() {
		_ = unix.Tgkill(unix.Getpid(), n.tid, unix.SIGURG)
	}
}

// Wait implements Waiter.
func (n *Nanosleep) Wait(deadline time.Time) (woken bool) {
	if n.wake.take() {
		return true
	}
	if n.closed.Load() {
		return afterClose(&n.wake, deadline)
	}
	if deadline.IsZero() {
		return n.wake.block(n.quit)
	}
	for time.Now().Before(deadline) {
		n.gen++
		gen := n.gen
		n.want.Store(gen)
		select { // replace an unserved, superseded request
		case <-n.req:
		default:
		}
		n.req <- nanoReq{mono: n.clock.toMono(deadline), gen: gen}
	wait:
		for {
			select {
			case g := <-n.done:
				if g == gen {
					break wait // the monotonic clock reached deadline; re-checked by the loop
				}
			case <-n.wake.ch:
				if n.wake.take() {
					n.want.Store(0)
					n.kick()
					return true
				}
			case <-n.quit:
				return true
			}
		}
	}
	return false
}

// Wake implements Waiter.
func (n *Nanosleep) Wake() { n.wake.wake() }

// Close ends the sleeper thread, waking a pending Wait, and waits for the thread to exit (at most
// about 1 ms). It is idempotent and always returns nil.
func (n *Nanosleep) Close() error {
	n.closeOnce.Do(func() {
		n.closed.Store(true)
		close(n.quit)
		n.kick()
		<-n.exited
	})
	return nil
}
