package conn

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/stream"
	"github.com/udtgo/udt/internal/udpio"
)

// Path MTU discovery (issue 11; the search itself is internal/stream's pmtud.go).
//
// Every connection searches for the largest data packet its path carries, on by default. Its
// socket sends with Don't Fragment (Linux IP_MTU_DISCOVER = IP_PMTUDISC_DO, udpio), so a packet
// too large for the path is dropped or refused instead of fragmented. Packets start at
// basePacket bytes and the search probes up to the smaller of
//
//	min(Config.MSS, the peer's MSS from the handshake) − 28   (UDT4 counts 28 header bytes)
//	the kernel's path MTU to the peer less the IP and UDP headers (IP_MTU: the interface's
//	MTU, or less once ICMP said so; 20 bytes less for IPv6 than for IPv4), read when the kernel
//	refuses a larger packet with EMSGSIZE, which the first probe (the former) finds out
//
// so Config.MSS (default 1500) caps discovery where a path allows more: jumbo frames and
// loopback's 64 KiB only raise the size if MSS is raised too, since UDT4 peers and most paths
// assume 1500 and a 64 KiB datagram lost costs 44 packets' worth. EMSGSIZE from a send and ICMP
// "packet too big" reports (icmp.go) lower the size at once to the kernel's new path MTU; a
// retransmission timeout falls back to basePacket (a black hole). Packets cut before the size
// fell cannot be cut again (UDT4 numbers packets, not bytes) and leave with fragmentation
// allowed (udpio.WriteFragmented), as RFC 8899 §4.4 provides for a PL that cannot resegment.
//
// Where Don't Fragment cannot be set (other systems, a PacketConn that is not a *net.UDPConn)
// there is no discovery and packets stay MSS−28 bytes, as before: there the system fragments a
// datagram too large for the path instead of dropping it, and a fixed smaller size would cost an
// ACK per packet from a UDT4 receiver, which ACKs every packet shorter than the negotiated
// MSS's (spec §4.4 step 6).

// basePacket is the size of the first data packets and the floor of the search: the UDP payload
// of a 1228-byte IPv4 packet, RFC 8899 §5.1.2's recommended BASE_PLPMTU (1200 bytes), which also
// fits IPv6's 1280-byte minimum MTU (RFC 8200 §5) with 32 bytes to spare.
const basePacket = 1200

// pathMTUConfig is the discovery setup of a connection with negotiated MSS mss. The kernel's path
// MTU is not read here (udpio.MaxDatagram costs ~27 µs, a tenth of a loopback Dial): the first
// probe is MSS−28 bytes, and where the interface (or an IPv6 header) does not allow that, the
// kernel refuses it with EMSGSIZE at once and pathTooBig reads the path MTU then.
func (m *mux) pathMTUConfig(mss int) stream.PathMTUConfig {
	limit := mss - udpIPOverhead
	if !m.df {
		return stream.PathMTUConfig{Max: limit} // no discovery: MSS−28 throughout
	}
	return stream.PathMTUConfig{Discover: true, Base: min(basePacket, limit), Max: limit}
}

// ipUDPOverhead is the bytes of IP and UDP header in front of a datagram to peer.
func ipUDPOverhead(peer netip.AddrPort) int {
	if peer.Addr().Unmap().Is4() {
		return 28
	}
	return 48
}

// sendPackets sends the n packets one ReleaseViews put in sb (no lock held; the caller unpins
// them after): a batch of packets of the packet size, perhaps ended by a longer one, which is
// the path MTU probe (sent with Don't Fragment like the rest) or a packet cut before the size
// fell (sent fragmentable).
func (c *Conn) sendPackets(sb *sendScratch, n, size int, probe uint32, probing bool) {
	hdrs, pays := sb.hdrs[:n], sb.pays[:n]
	long := -1
	if k := n - 1; len(hdrs[k])+len(pays[k]) > size {
		long, hdrs, pays = k, hdrs[:k], pays[:k]
	}
	if len(hdrs) > 0 {
		c.writeData(hdrs, pays)
	}
	switch {
	case long < 0:
	case probing && binary.BigEndian.Uint32(sb.hdrs[long]) == probe:
		c.writeData(sb.hdrs[long:n], sb.pays[long:n])
	default:
		sb.one = append(append(sb.one[:0], sb.hdrs[long]...), sb.pays[long]...)
		c.mux.io.WriteFragmented(sb.one, c.peer, size+ipUDPOverhead(c.peer))
	}
}

// writeData sends data packets; a send error loses packets, which retransmission recovers. A
// report error is an earlier datagram's ICMP report delivered to this write, which then sent
// nothing more: drain the reports and send the rest again (up to reportRetries times).
// EMSGSIZE: the kernel knows the path is smaller than this packet (pathTooBig).
//
// ENOBUFS (a local queue dropped the datagram) is reported only because reports are on
// (IP_RECVERR); the kernel hides it otherwise, and the datagrams after it went as before: they
// still go, the dropped one counts as lost.
func (c *Conn) writeData(hdrs, pays [][]byte) {
	m := c.mux
	retries := 0
	for len(hdrs) > 0 {
		n, err := m.io.WriteBatchParts(hdrs, pays, c.peer)
		switch {
		case err == nil:
			return
		case errors.Is(err, syscall.EMSGSIZE):
			c.pathTooBig(len(hdrs[n])+len(pays[n]), 0)
			return
		case errors.Is(err, syscall.ENOBUFS):
			hdrs, pays = hdrs[n+1:], pays[n+1:]
		case refusedByReport(err) && retries < reportRetries:
			m.drainReports()
			hdrs, pays, retries = hdrs[n:], pays[n:], retries+1
		default:
			return
		}
	}
}

// pathTooBig tells the engine that the path is smaller than it thought: a send of a size-byte
// packet was refused (EMSGSIZE; −1: one of the current size), or an ICMP report named mtu (0:
// none). The kernel's own path MTU
// (udpio.MaxDatagram) is preferred: it has validated the ICMP message (RFC 1191 §6.3, RFC 8201
// §4). Without one (a PacketConn other than a socket), the report's MTU, or else the refused size,
// bounds the search. Call it without holding c.mu.
func (c *Conn) pathTooBig(size, mtu int) {
	md := c.mux.io.MaxDatagram(c.peer)
	if md == 0 && mtu > 0 {
		md = mtu - ipUDPOverhead(c.peer)
	}
	now := time.Now()
	c.mu.Lock()
	if size < 0 {
		size = c.ep.PacketSize()
	}
	if md > 0 {
		c.ep.OnPathMTU(now, md)
	} else {
		c.ep.OnTooBig(now, size)
	}
	fx := c.pullLocked(via{})
	c.mu.Unlock()
	c.apply(&fx)
}

// reportTooBig handles an ICMP "packet too big" report quoting a packet of this connection.
func (c *Conn) reportTooBig(r *udpio.Report) {
	size := 0
	if r.HeadLen >= packet.HeaderSize && !packet.IsControl(r.Head[:r.HeadLen]) {
		size = -1 // a data packet: at least the current size was refused
	}
	c.pathTooBig(size, r.MTU)
}

// noteSizeLocked notes a change of the packet size since the last call, if any, for the
// Logger (Info) and the Tracer (observe.go's notePathMTU, which counts in MSS: the packet plus
// the IP and UDP headers); the caller flushes after releasing c.mu. Caller holds c.mu.
func (c *Conn) noteSizeLocked() {
	size, changes, why := c.ep.PathMTUEvent()
	if changes == c.sizeChanges {
		return
	}
	now := time.Now()
	over := ipUDPOverhead(c.peer)
	c.notePathMTU(c.loggedSize+over, size+over, why, now)
	c.sizeChanges, c.loggedSize = changes, size
}
