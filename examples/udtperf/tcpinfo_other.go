//go:build !linux

package main

import "net"

// tcpStats: TCP_INFO is Linux-only; elsewhere the tcp row's RTT and retransmissions are n/a.
func tcpStats(c *net.TCPConn, sender bool) linkStats { return unknownStats() }
