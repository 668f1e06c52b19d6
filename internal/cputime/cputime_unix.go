//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process returns the user+system CPU time of the process, all threads (getrusage(2),
// RUSAGE_SELF), or 0 if it cannot be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
