//go:build !linux

package main

import "time"

// threadCPU is the per-thread measurement of thread_linux.go; elsewhere it is unavailable and
// the table shows the sender process alone.
type threadCPU struct{}

func newThreadCPU() *threadCPU                         { return &threadCPU{} }
func (*threadCPU) note()                               {}
func (*threadCPU) total() (cpu time.Duration, ok bool) { return 0, false }
