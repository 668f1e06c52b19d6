package udpio

import (
	"net/netip"
	"syscall"
)

// ReportHead is how many bytes of the offending datagram a Report keeps.
const ReportHead = 64

// Report is an error that the network or this host's stack raised about a datagram the socket
// sent: on Linux, an entry of the socket's error queue once EnableReports turned IP_RECVERR /
// IPV6_RECVERR on (ip(7), ipv6(7)), which carries the ICMP message's meaning (RFC 792, RFC 4443)
// and quotes the start of the datagram that caused it. An ICMP message can be forged by anyone
// on the path; treat a Report as a hint, and check its Head against what you sent.
type Report struct {
	// To is where the datagram that caused the error was going (IPv4-mapped addresses unmapped).
	To netip.AddrPort
	// Errno is the error's meaning: ECONNREFUSED for "port unreachable", EHOSTUNREACH or
	// ENETUNREACH for other unreachable codes, EMSGSIZE for "fragmentation needed" (IPv4) or
	// "packet too big" (IPv6) and for a send this host refused as larger than its path MTU.
	Errno syscall.Errno
	// MTU is, with EMSGSIZE, the path MTU in bytes (the largest IP packet, headers included) the
	// message names; 0 when it names none.
	MTU int
	// Local reports an error this host's stack raised (SO_EE_ORIGIN_LOCAL) rather than an ICMP
	// message from the network.
	Local bool
	// Head holds the first HeadLen bytes (at most ReportHead) of the datagram's payload.
	Head    [ReportHead]byte
	HeadLen int
}

// reportSource is a PacketConn that reports ICMP-like errors itself: internal/simnet's Conn.
type reportSource interface {
	ReadReport(head []byte) (to netip.AddrPort, errno syscall.Errno, mtu int, headLen int, ok bool)
}

// fragmenter is a PacketConn that can send one datagram with fragmentation allowed.
type fragmenter interface {
	WriteFragmentable(b []byte, to netip.AddrPort) (int, error)
}

// EnableReports turns the socket's error reports on (Linux IP_RECVERR and IPV6_RECVERR) so that
// ReadReports returns them; it reports whether reports are available (always for a PacketConn
// that offers them itself, such as internal/simnet's). With reports on, a datagram the network
// rejects makes the socket's next read or write fail once with the error (ECONNREFUSED, say),
// which is how a reader learns that ReadReports has something.
func (c *Conn) EnableReports() bool { return c.b.enableReports() }

// DisableReports turns the socket's error reports off again: the kernel then neither queues
// ICMP errors for an unconnected socket nor fails its reads and writes with them (a defence
// against a flood of them, see conn's mux). A PacketConn that offers reports itself keeps them.
func (c *Conn) DisableReports() { c.b.disableReports() }

// ReadReports fills rs with the reports queued since the last call and returns how many; it
// never blocks. Safe for concurrent use.
func (c *Conn) ReadReports(rs []Report) int {
	if len(rs) == 0 {
		return 0
	}
	return c.b.readReports(rs)
}

// EnableDontFragment makes every datagram leave with the IPv4 Don't Fragment bit and never be
// fragmented by this host (Linux IP_MTU_DISCOVER / IPV6_MTU_DISCOVER = PMTUDISC_DO, RFC 1191,
// RFC 8201): a datagram larger than the kernel's path MTU for its destination then fails with
// EMSGSIZE instead of being fragmented. It reports whether the platform does it; elsewhere the
// system's default (usually fragmentation) stays.
func (c *Conn) EnableDontFragment() bool { return c.b.enableDontFragment() }

// MaxDatagram returns the largest UDP payload in bytes that the kernel would send to `to` in one
// IP packet: its path MTU for that destination (the route's MTU, lowered by ICMP messages it
// accepted; Linux IP_MTU / IPV6_MTU on a connected probe socket) less the IP and UDP headers. 0
// means unknown (other systems, other PacketConns). It makes a few system calls: call it when
// a connection starts or after an EMSGSIZE, not per datagram.
func (c *Conn) MaxDatagram(to netip.AddrPort) int { return c.b.maxDatagram(to) }

// WriteFragmented sends one datagram that may be fragmented by this host into IP packets of at
// most mtu bytes (the caller's path MTU; used on IPv6, where routers never fragment) or by
// routers on an IPv4 path (Don't Fragment clear). It is for data that cannot be cut again
// after a path's MTU fell (RFC 8899 §4.4); every other datagram should fit the path. On Linux
// it turns Don't Fragment off for the one send and back on after it: callers must not send
// packets that rely on Don't Fragment (path MTU probes) from another goroutine meanwhile.
func (c *Conn) WriteFragmented(b []byte, to netip.AddrPort, mtu int) error {
	return c.b.writeFragmented(b, to, mtu)
}

// Reports and fragmentation on the portable path: what the PacketConn offers, if anything.

func (p *portable) enableReports() bool {
	_, ok := p.pc.(reportSource)
	return ok
}

func (p *portable) disableReports() {}

func (p *portable) readReports(rs []Report) int {
	src, ok := p.pc.(reportSource)
	if !ok {
		return 0
	}
	n := 0
	for n < len(rs) {
		r := &rs[n]
		to, errno, mtu, hl, ok := src.ReadReport(r.Head[:])
		if !ok {
			break
		}
		r.To, r.Errno, r.MTU, r.Local, r.HeadLen = unmap(to), errno, mtu, false, hl
		n++
	}
	return n
}

// dontFragmenter is a PacketConn that never fragments (internal/simnet's Conn).
type dontFragmenter interface{ DontFragment() bool }

func (p *portable) enableDontFragment() bool {
	d, ok := p.pc.(dontFragmenter)
	return ok && d.DontFragment()
}

func (p *portable) maxDatagram(netip.AddrPort) int { return 0 }

func (p *portable) writeFragmented(b []byte, to netip.AddrPort, _ int) error {
	if f, ok := p.pc.(fragmenter); ok {
		_, err := f.WriteFragmentable(b, to)
		return err
	}
	_, err := p.writeBatch([][]byte{b}, nil, to)
	return err
}
