//go:build !unix

package main

import "time"

// processCPU: no getrusage here; CPU columns are n/a.
func processCPU() (time.Duration, bool) { return 0, false }
