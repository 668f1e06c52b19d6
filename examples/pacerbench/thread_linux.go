package main

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU measures the pacing thread alone: the CPU time of the OS threads on which the pacer's
// goroutine ran Release, from the kernel's per-thread run time (/proc/self/task/TID/schedstat,
// first field: ns on a CPU). The hybrid backend keeps its goroutine on one thread through its
// sleeps, so the set is one thread; a backend that parks in the Go scheduler (gotimer) may hop
// threads, and then every thread it ran on counts whole, including the time those threads spent
// on the runtime's own work (an overestimate, never an underestimate). What the pacing costs other
// threads (the runtime's netpoller woken by each send, sysmon) is in the sender process's CPU.
type threadCPU struct {
	start map[int]time.Duration // run time of every thread of the process at the start
	tids  map[int]bool          // threads Release ran on; the pacer's goroutine only
	last  int
}

func newThreadCPU() *threadCPU {
	t := &threadCPU{start: map[int]time.Duration{}, tids: map[int]bool{}}
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			if v, ok := taskRunTime(tid); ok {
				t.start[tid] = v
			}
		}
	}
	return t
}

// note records the calling thread; the pacer's goroutine calls it from every Release.
func (t *threadCPU) note() {
	if tid := unix.Gettid(); tid != t.last {
		t.last, t.tids[tid] = tid, true
	}
}

// total returns the CPU the noted threads spent since newThreadCPU; ok is false when nothing was
// noted or a thread's time cannot be read (it exited).
func (t *threadCPU) total() (cpu time.Duration, ok bool) {
	for tid := range t.tids {
		v, ok := taskRunTime(tid)
		if !ok {
			return 0, false
		}
		cpu += v - t.start[tid] // a thread created during the run starts at 0
	}
	return cpu, len(t.tids) > 0
}

// taskRunTime reads a thread's time on a CPU (sum_exec_runtime, ns) from its schedstat.
func taskRunTime(tid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0, false
	}
	f, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte(" "))
	ns, err := strconv.ParseInt(string(f), 10, 64)
	return time.Duration(ns), err == nil
}
