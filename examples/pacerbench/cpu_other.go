//go:build !unix && !windows

package main

import "time"

// cpuTime is unavailable on this system: CPU columns read 0.
func cpuTime() time.Duration { return 0 }
