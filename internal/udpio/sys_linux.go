package udpio

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxBatch is the most datagrams one recvmmsg/sendmmsg call moves.
const maxBatch = 64

// groBuffers is the most GRO buffers (GROBufferSize each) one recvmmsg fills: up to
// groBuffers × 64 KiB of glued datagrams, or groBuffers datagrams that arrived unglued. A reader
// starts with one and doubles them while reads fill them all, so an idle socket holds 64 KiB.
const groBuffers = 8

// mmsghdr is struct mmsghdr of sendmmsg(2)/recvmmsg(2): Go pads it to Msghdr's alignment as C does.
type mmsghdr struct {
	Hdr unix.Msghdr
	Len uint32
}

// sysConn is the Linux path for a *net.UDPConn.
type sysConn struct {
	uc     *net.UDPConn
	rc     syscall.RawConn
	family int // AF_INET or AF_INET6: the socket's, which decides the sockaddr we pass
	gso    atomic.Bool
	gro    atomic.Bool // UDP_GRO is on: reads go through the GRO buffers
	// lazyGRO: GRO is off until a recvmmsg finds at least lazyGROBatch datagrams queued (bulk
	// arriving); then the reader turns it on, between two reads. Owned by the reader.
	lazyGRO bool
	mmsg    bool
	stamps  bool // SO_TIMESTAMPNS is on: every datagram comes with an SCM_TIMESTAMPNS message

	// System calls made, for tests: GSO sends, sendmmsg calls.
	gsoSends, mmsgCalls atomic.Uint64

	r       reader    // owned by the one ReadBatch goroutine
	scratch sync.Pool // *writer, one per concurrent WriteBatch
	local   net.Addr  // for error values
}

func newSys(uc *net.UDPConn, o options) batcher {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &sysConn{uc: uc, rc: rc, mmsg: !o.noMMsg, local: uc.LocalAddr()}
	var domErr, segErr, groErr, tsErr error
	cerr := rc.Control(func(fd uintptr) {
		s.family, domErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
		// The option reads back 0 on a kernel that knows it (≥ 4.18), ENOPROTOOPT before.
		_, segErr = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		if !o.noGRO && !o.lazyGRO {
			groErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
		}
		// Software receive stamps (socket(7)): the kernel's time of arrival, in CLOCK_REALTIME.
		if !o.noStamps {
			tsErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}
	})
	if cerr != nil || domErr != nil || (s.family != unix.AF_INET && s.family != unix.AF_INET6) {
		return nil
	}
	s.gso.Store(segErr == nil && !o.noGSO)
	s.gro.Store(!o.noGRO && !o.lazyGRO && groErr == nil)
	s.lazyGRO = !o.noGRO && o.lazyGRO
	s.stamps = !o.noStamps && tsErr == nil
	s.scratch.New = func() any { return newWriter(s) }
	s.r.init(s)
	return s
}

func (s *sysConn) features() (gso, gro, mmsg bool) { return s.gso.Load(), s.gro.Load(), s.mmsg }

// lazyGROBatch is how many datagrams one recvmmsg must find queued before a lazy-GRO socket turns
// GRO on: a backlog that size means bulk is arriving.
const lazyGROBatch = 16

// enableGRO turns UDP_GRO on; the reader calls it between two reads, so the next read already uses
// the GRO buffers and no glued datagram can land in a caller's small buffer.
func (s *sysConn) enableGRO() {
	s.lazyGRO = false
	var err error
	if cerr := s.rc.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}); cerr == nil && err == nil {
		s.gro.Store(true)
	}
}

// sockaddr is room for either kind of socket address.
type sockaddr struct {
	raw unix.RawSockaddrInet6 // the larger of the two; a RawSockaddrInet4 overlays its start
	len uint32
}

// errAddrFamily is returned for an IPv6 destination on an IPv4 socket.
var errAddrFamily = errors.New("udpio: IPv6 destination on an IPv4 socket")

// set fills sa with ap in the socket's family (an IPv4 peer of an AF_INET6 socket as IPv4-mapped).
// ok is false for a destination the raw path cannot express (a non-numeric zone): use the
// standard library's write instead.
func (sa *sockaddr) set(family int, ap netip.AddrPort) (ok bool, err error) {
	ip := ap.Addr()
	port := ap.Port()
	if family == unix.AF_INET {
		ip = ip.Unmap()
		if !ip.Is4() {
			return false, errAddrFamily
		}
		r := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.raw))
		*r = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ip.As4()}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&r.Port))[:], port)
		sa.len = unix.SizeofSockaddrInet4
		return true, nil
	}
	var scope uint32
	if z := ip.Zone(); z != "" {
		v, err := strconv.ParseUint(z, 10, 32)
		if err != nil {
			return false, nil
		}
		scope = uint32(v)
	}
	sa.raw = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ip.As16(), Scope_id: scope}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.raw.Port))[:], port)
	sa.len = unix.SizeofSockaddrInet6
	return true, nil
}

// addrPort decodes a sockaddr the kernel wrote (n bytes of it), unmapping IPv4-mapped addresses.
func (sa *sockaddr) addrPort(n uint32) netip.AddrPort {
	switch sa.raw.Family {
	case unix.AF_INET:
		if n < unix.SizeofSockaddrInet4 {
			return netip.AddrPort{}
		}
		r := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.raw))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&r.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom4(r.Addr), port)
	case unix.AF_INET6:
		if n < unix.SizeofSockaddrInet6 {
			return netip.AddrPort{}
		}
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.raw.Port))[:])
		ip := netip.AddrFrom16(sa.raw.Addr).Unmap()
		if sa.raw.Scope_id != 0 && ip.Is6() {
			// Allocates, but only for link-local peers.
			ip = ip.WithZone(strconv.FormatUint(uint64(sa.raw.Scope_id), 10))
		}
		return netip.AddrPortFrom(ip, port)
	}
	return netip.AddrPort{}
}

// opError wraps a system call's errno as the standard library would.
func (s *sysConn) opError(op, syscallName string, errno error, to netip.AddrPort) error {
	e := &net.OpError{Op: op, Net: "udp", Source: s.local, Err: os.NewSyscallError(syscallName, errno)}
	if to.IsValid() {
		e.Addr = net.UDPAddrFromAddrPort(to)
	}
	return e
}
