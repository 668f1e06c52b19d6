package simnet

import (
	"net/netip"
	"os"
	"syscall"
)

// Path MTU and ICMP-like signals, for testing path MTU discovery and error handling.
//
// A link's MTU (LinkConfig.MTU, in datagram bytes) drops longer datagrams; LinkConfig.MTUAction
// adds what a real path may do besides: MTUReport sends the writer a "packet too big" report
// naming the link's MTU (as a router's ICMP message under RFC 1191 / RFC 8201), MTUError makes
// the write itself fail with EMSGSIZE (as a local stack that already knows the path MTU does).
// The default, MTUDrop, is a black hole. A datagram written with WriteFragmentable passes every
// MTU (as IP fragments would), counted in LinkStats.Fragmented. With SetUnreachableReports, a
// datagram to an address where no Conn is bound is answered with a "port unreachable" report.
// Reports are read with (*Conn).ReadReport, as internal/udpio reads a socket's error queue; as on
// a socket, each report also makes the next read fail once with its error (a *net.OpError around
// an *os.SyscallError), which is how a reader learns there is one.

// MTUAction is what a datagram longer than a link's MTU causes besides its drop.
type MTUAction int

const (
	// MTUDrop drops it silently: a black hole for large packets.
	MTUDrop MTUAction = iota
	// MTUReport drops it and sends the writer a report (EMSGSIZE with the MTU).
	MTUReport
	// MTUError fails the write with EMSGSIZE (inside a *net.OpError); nothing is sent.
	MTUError
)

// udp4Overhead is what a report's MTU adds to a datagram size: the IPv4 and UDP headers, so
// that the MTU is an IP packet size as an ICMP message gives it.
const udp4Overhead = 28

// maxReports bounds a Conn's queue of unread reports; later ones are dropped.
const maxReports = 64

// report is one queued ICMP-like report.
type report struct {
	to    netip.AddrPort
	errno syscall.Errno
	mtu   int
	head  [64]byte
	n     int
}

// SetUnreachableReports turns port-unreachable reports on or off for datagrams to addresses
// where no Conn is bound.
func (n *Network) SetUnreachableReports(on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unreachReports = on
}

// reportLocked queues a report about p at its writer, if it is still bound. Caller holds n.mu.
func (n *Network) reportLocked(p *packet, errno syscall.Errno, mtu int) {
	c := n.conns[p.src]
	if c == nil {
		return
	}
	r := report{to: p.dst, errno: errno, mtu: mtu}
	r.n = copy(r.head[:], p.buf)
	c.mu.Lock()
	if !c.closed && len(c.reports) < maxReports {
		c.reports = append(c.reports, r)
		c.pendingErr = errno
		select { // wake a blocked reader: it returns the pending error
		case c.ready <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
}

// takePendingErr returns and clears the error a report left for the next read, as a socket's
// pending error (SO_ERROR) is returned once. Caller holds c.mu.
func (c *Conn) takePendingErr() error {
	if c.pendingErr == 0 {
		return nil
	}
	err := os.NewSyscallError("recvfrom", c.pendingErr)
	c.pendingErr = 0
	return err
}

// tooBig reports whether a datagram of size bytes from src to dst meets a link whose MTUAction is
// MTUError and whose MTU it exceeds.
func (n *Network) tooBig(src, dst netip.Addr, size int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.lookup(src, dst) {
		if c := &l.cfg; c.MTUAction == MTUError && c.MTU > 0 && size > c.MTU {
			return true
		}
	}
	return false
}

// ReadReport takes the oldest unread report about a datagram this Conn wrote: its destination,
// its meaning (syscall.EMSGSIZE: too big, with the MTU as an IPv4 packet size; ECONNREFUSED:
// port unreachable), and the datagram's first bytes copied into head. ok is false when none is
// queued. It never blocks.
func (c *Conn) ReadReport(head []byte) (to netip.AddrPort, errno syscall.Errno, mtu, headLen int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reports) == 0 {
		return netip.AddrPort{}, 0, 0, 0, false
	}
	r := c.reports[0]
	c.reports = append(c.reports[:0], c.reports[1:]...)
	return r.to, r.errno, r.mtu, copy(head, r.head[:r.n]), true
}

// WriteFragmentable is WriteToUDPAddrPort for a datagram that may be fragmented: it passes links
// whose MTU it exceeds (and never fails with MTUError's EMSGSIZE).
func (c *Conn) WriteFragmentable(b []byte, addr netip.AddrPort) (int, error) {
	return c.writeDF(b, addr, nil, true)
}

// DontFragment reports true: other datagrams are never fragmented (the MTU stage drops them),
// as a socket with IP_PMTUDISC_DO would have it.
func (c *Conn) DontFragment() bool { return true }
