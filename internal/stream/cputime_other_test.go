//go:build !unix

package stream

import "time"

// cpuTime is not measured on this platform: the cpu-ns/pkt metric reads 0.
func cpuTime() time.Duration { return 0 }
