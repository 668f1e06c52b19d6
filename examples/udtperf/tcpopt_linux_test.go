package main

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func defaultTCPCongestion(t *testing.T) string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Skip(err)
	}
	return strings.TrimSpace(string(b))
}

// TestDeadPeerTimeoutSet: a tcp connection leaves dead-peer detection to the kernel
// (TCP_USER_TIMEOUT = -idle-timeout, keep-alives on), with no idle deadline of its own.
func TestDeadPeerTimeoutSet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := newTCPConn(raw.(*net.TCPConn), 7*time.Second)
	defer c.Close()
	if c.writeIdle != 0 {
		t.Errorf("write deadline fallback %v on Linux", c.writeIdle)
	}
	rc, _ := c.SyscallConn()
	var ut, ka int
	rc.Control(func(fd uintptr) {
		ut, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		ka, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
	})
	if ut != 7000 || ka != 1 {
		t.Errorf("TCP_USER_TIMEOUT %d ms, SO_KEEPALIVE %d; want 7000, 1", ut, ka)
	}
}
