package pacer

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hybridSleeper is Hybrid's OS sleep on Linux: FUTEX_WAIT_BITSET with an absolute
// CLOCK_MONOTONIC timeout on the calling goroutine's thread (locked for the duration), with the
// thread's timer slack set to 1 ns (prctl PR_SET_TIMERSLACK; futex(2), prctl(2)). Wake bumps the
// futex word and, if a sleep is in progress, FUTEX_WAKEs it; the word's value check in the kernel
// makes this race-free. No file descriptor is held, so nothing needs closing.
//
// A sleep of up to hybridRawSleep is a raw system call: the goroutine keeps its P, as a running
// goroutine does. Through the runtime's blocking path (syscall.Syscall: sysmon retakes the P
// after 20 µs, hands it off, and the return takes it back) each sleep cost 40–60 µs of CPU more
// on this VM (3–4× the raw call), more than the pacer's whole budget per wake at 10 Mbit/s. The
// P is held no longer than the runtime lets any goroutine run before it preempts it (10 ms,
// forcePreemptNS); the runtime's preemption signal ends the futex wait with EINTR (a handled
// signal interrupts a timed futex wait, futex(2)), so stop-the-world and preemption are not held
// up by the sleep. Longer sleeps, where that cost is under 1 %, take the blocking path, and so do
// the sleeps of a waiter when GOMAXPROCS − 1 others are already sleeping raw (rawSlot): a process
// with many sockets (each with its pacer and waiter) must keep a P for everything else. Twenty
// dialed connections on a 2-P process held both Ps in raw sleeps: RTTs of 100+ ms on loopback,
// retransmission timeouts, and twenty 20 MiB transfers not done in 60 s (0.8 s with timerfd).
type hybridSleeper struct {
	seq      atomic.Uint32 // the futex word: bumped by every interrupt
	sleeping atomic.Bool
	clock    monoClock
}

const (
	futexWaitBitset = 9   // FUTEX_WAIT_BITSET: absolute timeout on CLOCK_MONOTONIC
	futexWake       = 1   // FUTEX_WAKE
	futexPrivate    = 128 // FUTEX_PRIVATE_FLAG
	futexBitsetAll  = 0xffffffff

	hybridRawSleep = 10 * time.Millisecond // the runtime's forcePreemptNS
)

func (s *hybridSleeper) init() { s.clock = newMonoClock() }

// sleep blocks until wakeAt or a Wake. It reports woken, or else how late it woke (≥ 0; −1 when
// unknown).
func (s *hybridSleeper) sleep(w *wakeSignal, wakeAt time.Time) (woken bool, late time.Duration) {
	ts := monoTimespec(s.clock.toMono(wakeAt))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Per thread; cannot fail for arg 1 (only a negative value is rejected).
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	s.sleeping.Store(true)
	defer s.sleeping.Store(false)
	futex := syscall.Syscall6
	if time.Until(wakeAt) <= hybridRawSleep && rawSlot() {
		futex = syscall.RawSyscall6
		defer rawSleepers.Add(-1)
	}
	for {
		v := s.seq.Load()
		if w.take() {
			return true, 0
		}
		_, _, errno := futex(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&s.seq)),
			futexWaitBitset|futexPrivate, uintptr(v), uintptr(unsafe.Pointer(&ts)), 0, futexBitsetAll)
		now := time.Now()
		switch errno {
		case unix.ETIMEDOUT:
			return false, max(now.Sub(wakeAt), 0)
		case 0, unix.EAGAIN, unix.EINTR:
			// Woken by interrupt, the word changed, or a signal: re-check the wake flag.
			if !now.Before(wakeAt) {
				return false, -1
			}
		default: // cannot happen with valid arguments; fall back to spinning the rest
			return false, -1
		}
	}
}

// rawSleepers counts the raw (P-holding) sleeps in progress in the process, across waiters.
var rawSleepers atomic.Int32

// rawSlot takes one of the GOMAXPROCS − 1 raw-sleep slots (none with one P), so that raw sleeps
// never hold every P: it reports whether it got one (release with rawSleepers.Add(-1)).
func rawSlot() bool {
	limit := int32(runtime.GOMAXPROCS(0)) - 1
	for {
		n := rawSleepers.Load()
		if n >= limit {
			return false
		}
		if rawSleepers.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// interrupt ends a sleep in progress. Called by Wake after it set the wake flag.
func (s *hybridSleeper) interrupt() {
	s.seq.Add(1)
	if s.sleeping.Load() {
		syscall.Syscall(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&s.seq)), futexWake|futexPrivate, 1)
	}
}
