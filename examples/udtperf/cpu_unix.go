//go:build unix

package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the CPU time (user + system) this process has used so far, from
// getrusage(RUSAGE_SELF): all threads, so the transport's goroutines count wherever they ran.
func processCPU() (time.Duration, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
