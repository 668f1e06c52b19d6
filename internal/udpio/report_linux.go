package udpio

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// reportOOBSize is the control room for one error-queue entry: a cmsghdr, struct
// sock_extended_err (16 bytes) and the offender's sockaddr (up to 28 bytes), with room to spare.
const reportOOBSize = 128

// sizeofExtendedErr is the size of struct sock_extended_err.
const sizeofExtendedErr = 16

// errQueue is the scratch of error-queue reads, shared by all callers under its lock.
type errQueue struct {
	mu   sync.Mutex
	head [ReportHead]byte
	oob  [reportOOBSize]byte
}

func (s *sysConn) enableReports() bool { return s.setReports(1) }

func (s *sysConn) disableReports() { s.setReports(0) }

func (s *sysConn) setReports(on int) bool {
	var e4, e6 error
	cerr := s.rc.Control(func(fd uintptr) {
		// IP_RECVERR also covers the IPv4 peers of a dual-stack socket.
		e4 = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, on)
		if s.family == unix.AF_INET6 {
			e6 = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVERR, on)
		}
	})
	ok := cerr == nil && e4 == nil && e6 == nil
	s.reports.Store(ok && on == 1)
	return ok
}

// readReports drains the socket's error queue (recvmsg with MSG_ERRQUEUE|MSG_DONTWAIT). It goes
// through RawConn.Control, not a read: a read takes the descriptor's read lock, which the reader
// goroutine holds while it waits for datagrams, so a writer that drained the queue after a send
// failed with a report error (a dead peer's port unreachable) waited for a datagram that never
// came, and with it the connection's timers (seen in CI: a Write blocked for good).
func (s *sysConn) readReports(rs []Report) int {
	if !s.reports.Load() {
		return 0
	}
	q := &s.errq
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(rs) {
		var k, oobn int
		var from unix.Sockaddr
		var rerr error
		if err := s.rc.Control(func(fd uintptr) {
			k, oobn, _, from, rerr = unix.Recvmsg(int(fd), q.head[:], q.oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		}); err != nil || rerr != nil {
			break // EAGAIN: the queue is empty
		}
		r := &rs[n]
		if errno, mtu, local, ok := parseExtendedErr(q.oob[:min(oobn, reportOOBSize)]); ok {
			r.To, r.Errno, r.MTU, r.Local = addrPortOfSockaddr(from), errno, mtu, local
			r.HeadLen = copy(r.Head[:], q.head[:min(k, ReportHead)])
			n++
		}
	}
	return n
}

// addrPortOfSockaddr converts recvmsg's source address, IPv4-mapped IPv6 unmapped as ReadBatch
// does; the zero AddrPort for anything else.
func addrPortOfSockaddr(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// parseExtendedErr decodes the IP_RECVERR or IPV6_RECVERR control message of an error-queue
// entry (struct sock_extended_err, linux/errqueue.h): the error, the MTU an EMSGSIZE names, and
// whether this host raised it. ok is false without such a message or for origins other than
// ICMP, ICMPv6 and the local stack (timestamping and zero-copy notices use the queue too).
func parseExtendedErr(oob []byte) (errno syscall.Errno, mtu int, local, ok bool) {
	for {
		level, typ, data, rest, more := nextCmsg(oob)
		if !more {
			return 0, 0, false, false
		}
		oob = rest
		if (level == unix.IPPROTO_IP && typ == unix.IP_RECVERR ||
			level == unix.IPPROTO_IPV6 && typ == unix.IPV6_RECVERR) && len(data) >= sizeofExtendedErr {
			// ee_errno u32, ee_origin u8, ee_type u8, ee_code u8, ee_pad u8, ee_info u32, ee_data u32.
			errno = syscall.Errno(binary.NativeEndian.Uint32(data))
			origin := data[4]
			info := binary.NativeEndian.Uint32(data[8:])
			switch origin {
			case unix.SO_EE_ORIGIN_LOCAL, unix.SO_EE_ORIGIN_ICMP, unix.SO_EE_ORIGIN_ICMP6:
			default:
				return 0, 0, false, false
			}
			if errno == 0 || errno > 4095 {
				return 0, 0, false, false
			}
			if errno == unix.EMSGSIZE && info <= 65535 {
				mtu = int(info)
			}
			return errno, mtu, origin == unix.SO_EE_ORIGIN_LOCAL, true
		}
	}
}
