package main

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unpolledSender is -unpolled's sending socket: a UDP socket(2) that is never handed to package
// net, so the Go runtime's netpoller does not watch it. Package net registers every socket with
// its epoll instance for readability and writability, edge-triggered (EPOLLIN|EPOLLOUT|EPOLLET),
// and on Linux each datagram the kernel frees after sending signals write space (sock_wfree), so
// every send wakes a runtime thread blocked in epoll_wait whenever a P is idle. The difference
// between a run with and without -unpolled is what those wake-ups cost the sender; the pacer
// is the same in both.
type unpolledSender struct {
	fd  int
	to  unix.Sockaddr
	oob []byte
}

func newUnpolledSender(to netip.AddrPort) (*unpolledSender, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<20) // as the polled socket's
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	s := &unpolledSender{fd: fd, to: &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().As4()},
		oob: make([]byte, unix.CmsgSpace(2))}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&s.oob[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&s.oob[unix.CmsgLen(0)])) = datagram // native byte order (udp(7))
	return s, nil
}

// send sends b, n datagrams of datagram bytes back to back, as one GSO send when n > 1 (as the
// polled path's WriteBatch does); errors lose datagrams, as there.
func (s *unpolledSender) send(b []byte, n int) {
	var oob []byte
	if n > 1 {
		oob = s.oob
	}
	_, _ = unix.SendmsgN(s.fd, b[:n*datagram], oob, s.to, unix.MSG_DONTWAIT)
}

func (s *unpolledSender) Close() error { return unix.Close(s.fd) }
