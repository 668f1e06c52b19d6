//go:build !linux

package main

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Elsewhere the kernel's congestion control cannot be chosen or read here, and dead-peer
// detection is keep-alives (for an idle connection) plus a write deadline of -idle-timeout
// (a write that makes no progress for that long: the peer's kernel stopped acknowledging, or
// its application stopped reading).

func tcpSocketControl(cc string) func(network, address string, c syscall.RawConn) error {
	return nil
}

func checkTCPCongestion(cc string) error {
	return errors.New("-tcp-cc is supported on Linux only")
}

func tcpCongestion(c *net.TCPConn) string { return "" }

func setDeadPeerTimeout(c *net.TCPConn, idle time.Duration) (writeIdle time.Duration) {
	c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: idle / 2, Interval: max(idle/6, time.Second), Count: 3})
	return idle
}
