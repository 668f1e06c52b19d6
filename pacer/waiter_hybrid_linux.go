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
	for {
		v := s.seq.Load()
		if w.take() {
			return true, 0
		}
		_, _, errno := syscall.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&s.seq)),
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

// interrupt ends a sleep in progress. Called by Wake after it set the wake flag.
func (s *hybridSleeper) interrupt() {
	s.seq.Add(1)
	if s.sleeping.Load() {
		syscall.Syscall(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&s.seq)), futexWake|futexPrivate, 1)
	}
}
