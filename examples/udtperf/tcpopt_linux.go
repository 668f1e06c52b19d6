package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TCP socket options on Linux (tcp(7)).
//
// Dead-peer detection: the kernel's, not a read deadline. A TCP sender hears nothing from
// udtperf's receiver until the end of the transfer (the ACKs stay in the kernel), so an idle
// deadline on its reads fails every transfer longer than -idle-timeout. TCP_USER_TIMEOUT (RFC
// 5482) breaks the connection when sent data stays unacknowledged for -idle-timeout, and
// keep-alives (first after half of it, then every sixth, which TCP_USER_TIMEOUT bounds) cover a
// connection with nothing in flight: either way the peer's kernel must stay silent for
// -idle-timeout, as udt's dead-peer detection requires of its peer. A read or write then fails
// with ETIMEDOUT.

// tcpSocketControl returns a Control function for net.Dialer and net.ListenConfig that sets
// the congestion control cc ("" leaves the kernel's default; accepted connections inherit a
// listener's, tcp(7)).
func tcpSocketControl(cc string) func(network, address string, c syscall.RawConn) error {
	if cc == "" {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = setTCPCongestion(int(fd), cc) }); err != nil {
			return err
		}
		return serr
	}
}

func setTCPCongestion(fd int, cc string) error {
	if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); err != nil {
		return fmt.Errorf("TCP congestion control %q: %v (available: %s)", cc, err, availableTCPCongestion())
	}
	return nil
}

// availableTCPCongestion lists the kernel's loaded algorithms.
func availableTCPCongestion() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b)), ", ")
}

// checkTCPCongestion reports whether a TCP socket can use cc, by setting it on one.
func checkTCPCongestion(cc string) error {
	if strings.ContainsRune(cc, 0) || len(cc) >= 16 { // TCP_CA_NAME_MAX
		return fmt.Errorf("TCP congestion control %q: bad name", cc)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
	}
	defer unix.Close(fd)
	return setTCPCongestion(fd, cc)
}

// tcpCongestion returns the congestion control c uses, "" if unknown.
func tcpCongestion(c *net.TCPConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	rc.Control(func(fd uintptr) {
		name, err = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	if err != nil {
		return ""
	}
	return strings.TrimRight(name, "\x00")
}

// setDeadPeerTimeout arms the kernel's dead-peer detection on c (see above).
func setDeadPeerTimeout(c *net.TCPConn, idle time.Duration) (writeIdle time.Duration) {
	c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: idle / 2, Interval: max(idle/6, time.Second), Count: 3})
	rc, err := c.SyscallConn()
	if err == nil {
		ms := int(min(idle.Milliseconds(), 1<<31-1))
		rc.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms) })
	}
	if err != nil {
		return idle // fall back on a write deadline (see tcpConn)
	}
	return 0
}
