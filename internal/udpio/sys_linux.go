package udpio

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// maxBatch is the most messages one recvmmsg/sendmmsg call moves.
const maxBatch = 64

// groBuffers is the most GRO buffers (GROBufferSize each) one recvmmsg fills: up to
// groBuffers × 64 KiB of glued datagrams, or groBuffers datagrams that arrived unglued. A reader
// starts with one and doubles them while reads fill them all, so an idle socket holds 64 KiB.
const groBuffers = 8

// batchConn is the batch I/O that golang.org/x/net's ipv4.PacketConn and ipv6.PacketConn share:
// recvmmsg/sendmmsg with a control-message buffer per datagram (ipv4.Message is ipv6.Message).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// sysConn is the Linux path for a *net.UDPConn.
type sysConn struct {
	uc  *net.UDPConn
	rc  syscall.RawConn // for setsockopt
	x   batchConn       // the socket's family's x/net PacketConn
	gso atomic.Bool
	gro atomic.Bool // UDP_GRO is on: reads go through the GRO buffers
	// lazyGRO: GRO is off until a recvmmsg finds at least lazyGROBatch datagrams queued (bulk
	// arriving); then the reader turns it on, between two reads. Owned by the reader.
	lazyGRO bool
	stamps  bool // SO_TIMESTAMPNS is on: every datagram comes with an SCM_TIMESTAMPNS message
	family  int  // AF_INET or AF_INET6

	reports atomic.Bool // IP_RECVERR is on: readReports drains the error queue
	errq    errQueue
	df      atomic.Bool // IP_PMTUDISC_DO is on
	fragMu  sync.Mutex  // serialises writeFragmented's option changes

	// For tests: GSO messages sent (each up to MaxGSOSegments datagrams), sendmmsg calls made.
	gsoSends, sendCalls atomic.Uint64

	r       reader    // owned by the one ReadBatch goroutine
	scratch sync.Pool // *writer, one per concurrent WriteBatch
}

func newSys(uc *net.UDPConn, o options) batcher {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &sysConn{uc: uc, rc: rc}
	var family int
	defer func() { s.family = family }()
	var domErr, segErr, groErr, tsErr error
	cerr := rc.Control(func(fd uintptr) {
		family, domErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
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
	switch {
	case cerr != nil || domErr != nil:
		return nil
	case family == unix.AF_INET:
		s.x = ipv4.NewPacketConn(uc)
	case family == unix.AF_INET6:
		s.x = ipv6.NewPacketConn(uc)
	default:
		return nil
	}
	s.gso.Store(segErr == nil && !o.noGSO)
	s.gro.Store(!o.noGRO && !o.lazyGRO && groErr == nil)
	s.lazyGRO = !o.noGRO && o.lazyGRO
	s.stamps = !o.noStamps && tsErr == nil
	s.scratch.New = func() any { return new(writer) }
	s.r.s = s
	return s
}

func (s *sysConn) features() (gso, gro, mmsg bool) { return s.gso.Load(), s.gro.Load(), true }

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

// addrPortOfUDP converts the *net.UDPAddr x/net decoded from the kernel's sockaddr, unmapping an
// IPv4-mapped address; the zero AddrPort for anything else.
func addrPortOfUDP(a net.Addr) netip.AddrPort {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	return unmap(ua.AddrPort())
}
