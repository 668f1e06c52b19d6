package udpio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// quietPollMs bounds one poll(2) wait for room in the send buffer: Close waits for a Control
// callback in progress (internal/poll.FD), so it is held up at most this long.
const quietPollMs = 5

// runtimeEpoll caches the descriptor of the runtime's epoll instance once found (0: not yet); it
// is checked again on every use, since only a registration of the socket proves which it is.
var runtimeEpoll atomic.Int32

// The runtime's registration: EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET (runtime/netpoll_epoll.go).
const netpollEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

func (s *sysConn) ownWrites() { s.owned.Store(true) }

func (s *sysConn) quietWrites() bool {
	if s.quiet.Load() {
		return true
	}
	if !s.owned.Load() || os.Getenv("UDT_NETPOLL_WRITES") == "1" {
		return false
	}
	ok := false
	// Inside Control the descriptor cannot be closed and its number reused.
	if err := s.rc.Control(func(fd uintptr) { ok = dropWriteInterest(int(fd)) }); err != nil {
		return false
	}
	s.quiet.Store(ok)
	return ok
}

// dropWriteInterest finds fd's registration with the runtime's epoll instance and takes EPOLLOUT
// out of it.
func dropWriteInterest(fd int) bool {
	if ep := int(runtimeEpoll.Load()); ep > 0 {
		if ev, data, ok := registration(ep, fd); ok {
			return modify(ep, fd, ev, data)
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false
	}
	for _, e := range ents {
		ep, err := strconv.Atoi(e.Name())
		if err != nil || ep == fd {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || l != "anon_inode:[eventpoll]" {
			continue
		}
		if ev, data, ok := registration(ep, fd); ok {
			runtimeEpoll.Store(int32(ep))
			return modify(ep, fd, ev, data)
		}
	}
	return false
}

// registration reads fd's entry in epoll instance ep from /proc/self/fdinfo (fs/eventpoll.c,
// ep_show_fdinfo: "tfd: %8d events: %8x data: %16llx ..."), and reports it only if its events are
// the runtime's (the kernel adds EPOLLERR|EPOLLHUP to every registration).
func registration(ep, fd int) (events uint32, data uint64, ok bool) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(ep))
	if err != nil {
		return 0, 0, false
	}
	events, data, ok = parseRegistration(b, fd)
	return events, data, ok && events&^(unix.EPOLLERR|unix.EPOLLHUP) == netpollEvents
}

// parseRegistration finds fd's line in an epoll instance's fdinfo.
func parseRegistration(info []byte, fd int) (events uint32, data uint64, found bool) {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || string(f[0]) != "tfd:" || string(f[2]) != "events:" || string(f[4]) != "data:" {
			continue
		}
		if n, err := strconv.Atoi(string(f[1])); err != nil || n != fd {
			continue
		}
		ev, err1 := strconv.ParseUint(string(f[3]), 16, 32)
		d, err2 := strconv.ParseUint(string(f[5]), 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		return uint32(ev), d, true
	}
	return 0, 0, false
}

// modify re-registers fd in ep without EPOLLOUT, with the same data (the runtime's pollDesc).
func modify(ep, fd int, events uint32, data uint64) bool {
	ev := unix.EpollEvent{Events: events &^ unix.EPOLLOUT}
	// epoll_event.data is 8 bytes that x/sys spells Fd and Pad, adjacent on every architecture.
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], data)
	ev.Fd = int32(binary.NativeEndian.Uint32(b[:4]))
	ev.Pad = int32(binary.NativeEndian.Uint32(b[4:]))
	return unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, fd, &ev) == nil
}

// writeFlags are the flags of the Conn's sendmmsg calls: MSG_DONTWAIT once OwnWrites was called,
// so that no write ever waits in the netpoller (x/net then returns EAGAIN instead).
func (s *sysConn) writeFlags() int {
	if s.owned.Load() {
		return unix.MSG_DONTWAIT
	}
	return 0
}

// waitWritable waits in poll(2) until the socket has room to send, for at most quietPollMs; it
// returns the PacketConn's error once it is closed.
func (s *sysConn) waitWritable() error {
	var perr error
	err := s.rc.Control(func(fd uintptr) {
		for {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			_, perr = unix.Poll(pfd, quietPollMs)
			if !errors.Is(perr, unix.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return &net.OpError{Op: "write", Net: s.uc.LocalAddr().Network(), Source: s.uc.LocalAddr(), Err: err}
	}
	return nil // a timeout or POLLOUT: the caller tries the write again
}
