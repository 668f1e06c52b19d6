package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU measures the pacing thread alone: the CPU time (CLOCK_THREAD_CPUTIME_ID) that the
// thread running the pacer's goroutine spent from one Release call to the next, summed over the
// pairs of consecutive calls made on the same thread. That is the pacer's own loop: its wait (a
// sleep, or a spin) and the send. An interval in which the goroutine moved to another thread is
// left out, and one in which it left its thread and came back counts what that thread ran in
// between. The hybrid and spin backends keep the goroutine on one thread through their waits, so
// for them it is the whole pacing thread. A backend whose wait parks the goroutine (gotimer, in the
// Go scheduler; nanosleep, on its helper thread) moves it between threads, so that many intervals
// are left out (gotimer: a third to two thirds of them at 100 Mbit/s–1 Gbit/s), and the threads
// that wake it are never counted: with fewer than threadCoverage of the intervals counted, total
// reports no figure and only the sender process's CPU stands. A reading costs two system calls
// (gettid, clock_gettime), about 9 % of the pacing thread's CPU at 100 Mbit/s if taken at every
// Release, so it is taken at every threadSample-th one (the intervals between readings still cover
// every Release but the last few).
type threadCPU struct {
	calls    int
	readings int
	last     int           // the thread of the previous reading
	lastCPU  time.Duration // its CPU clock then
	sum      time.Duration
	pairs    int
}

// threadSample is how many Release calls one reading spans: the readings' cost falls to 1/16.
const threadSample = 16

// threadCoverage is the share of the intervals between readings that must fall on one thread for
// the figure to stand for the pacing thread: an interval dropped for a move is CPU left out.
const threadCoverage = 0.9

func newThreadCPU() *threadCPU { return &threadCPU{} }

// note is called from every Release, on the pacer's goroutine.
func (t *threadCPU) note() {
	t.calls++
	if t.calls%threadSample != 1 {
		return
	}
	var ts unix.Timespec
	runtime.LockOSThread() // both readings of one thread: no preemption may move us between them
	err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	tid := unix.Gettid()
	runtime.UnlockOSThread()
	if err != nil {
		return
	}
	cpu := time.Duration(ts.Nano())
	t.readings++
	if tid == t.last {
		t.sum += cpu - t.lastCPU
		t.pairs++
	}
	t.last, t.lastCPU = tid, cpu
}

// total returns the CPU counted; ok is false when fewer than threadCoverage of the intervals
// between readings stayed on one thread.
func (t *threadCPU) total() (cpu time.Duration, ok bool) {
	return t.sum, t.readings > 1 && float64(t.pairs) >= threadCoverage*float64(t.readings-1)
}
