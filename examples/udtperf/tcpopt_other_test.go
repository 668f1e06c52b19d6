//go:build !linux

package main

import "testing"

func defaultTCPCongestion(t *testing.T) string {
	t.Skip("the kernel's TCP congestion control is read on Linux only")
	return ""
}
