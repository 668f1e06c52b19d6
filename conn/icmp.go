package conn

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/udpio"
)

// ICMP errors (issue: a closed port must not cost a whole handshake timeout).
//
// Every socket turns on the kernel's error reports (Linux IP_RECVERR / IPV6_RECVERR, see
// udpio.Conn.EnableReports): an ICMP error about a datagram we sent is queued with the
// datagram's destination and the start of the datagram itself, which names the connection it
// belonged to. What is done with each:
//
//   - Port unreachable (ECONNREFUSED) for a handshake request of a Dial in progress, quoting that
//     Dial's socket ID and ISN (62 random bits an off-path forger cannot guess) and sent to its
//     peer: the Dial fails at once with an error matching syscall.ECONNREFUSED, as a TCP connect
//     does on a RST (RFC 1122 §4.2.3.9 counts port unreachable among the hard errors).
//   - Port unreachable for a packet of an established connection (quoting the peer's socket ID,
//     sent to its address): a hint only, since anyone who sees the path can forge one. The
//     connection is not ended; its dead-peer timer is shortened (stream.Endpoint.OnUnreachable):
//     if nothing at all arrives from the peer within two keep-alive intervals plus one
//     retransmission timeout of the report (2.1 s with the defaults instead of Config.IdleTimeout),
//     it breaks with an error that matches both ErrPeerIdle and syscall.ECONNREFUSED. A live peer
//     sends at least that often, so a forged report cannot end a working connection.
//   - Other unreachable codes (host, network) are ignored: they are soft errors (RFC 1122).
//   - Packet too big / fragmentation needed (EMSGSIZE): see pmtu.go.
//
// Reports that match nothing are dropped. The kernel has already checked that an ICMP message
// quotes a datagram of this socket (its ports); at most maxReports are taken per drain, and a
// flood of them turns the socket's reports off for a while (reportflood.go). A report is matched
// to its connection by a map lookup (connTo); "fragmentation needed" still costs a probe socket
// (pathTooBig, about 8 µs).

// maxReports bounds the reports one drain takes: the error queue then gives no more work per
// read than a full batch of datagrams.
const maxReports = 64

// refusedError is the error of a Dial whose peer's host answered "port unreachable".
type refusedError struct{}

func (refusedError) Error() string {
	return "udt: connection refused: the peer's host reported port unreachable"
}
func (refusedError) Unwrap() error { return syscall.ECONNREFUSED }

// isReportErr reports whether a socket error means the kernel queued an ICMP report.
func isReportErr(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EMSGSIZE)
}

// refusedByReport reports whether a write failed only because an earlier datagram's ICMP report
// was pending on the socket (the kernel hands it to the next read or write, which then sends
// nothing): the write may go again. EMSGSIZE is not such a refusal: it is the path's answer to
// the datagram being written (pathTooBig).
func refusedByReport(err error) bool {
	return err != nil && isReportErr(err) && !errors.Is(err, syscall.EMSGSIZE)
}

// drainReports takes the socket's queued error reports, at most maxReports, hands each to its
// dialer or connection and returns how many it took. Call it without holding any connection's
// lock.
func (m *mux) drainReports() (taken int) {
	m.reportsPending.Store(false)
	var rs [16]udpio.Report
	for taken < maxReports {
		n := m.io.ReadReports(rs[:])
		now := time.Now()
		for i := range rs[:n] {
			m.report(&rs[i], now)
		}
		taken += n
		if n < len(rs) {
			break
		}
	}
	return taken
}

// report dispatches one error report by the datagram it quotes (spec §1.1 header, §2.1 handshake).
func (m *mux) report(r *udpio.Report, now time.Time) {
	head := r.Head[:r.HeadLen]
	if len(head) < headerSize {
		return
	}
	dst := binary.BigEndian.Uint32(head[12:16])
	if dst == 0 { // a handshake request of ours: a Dial's
		var hs packet.Handshake
		// Either request of a Dial: the first (type 1) or the one echoing the cookie (type −1,
		// spec §3.2 step 3), whose refusal means the listener's socket went away between its two
		// answers. A rendezvous (type 0, and −1 from a rendezvous dialer) expects refusals
		// while its peer is not up yet, so it never fails on one.
		if r.Errno != syscall.ECONNREFUSED || !isHandshake(head) || hs.Decode(head) != nil ||
			(hs.ReqType != packet.ReqConnect && hs.ReqType != packet.ReqResponse) {
			return
		}
		m.mu.RLock()
		d := m.dialers[hs.SocketID]
		m.mu.RUnlock()
		if d != nil && d.early == nil && d.peer == r.To && d.isn == hs.ISN {
			d.fail(refusedError{})
		}
		return
	}
	c := m.connTo(r.To, dst)
	if c == nil {
		return
	}
	switch r.Errno {
	case syscall.ECONNREFUSED:
		c.mu.Lock()
		c.ep.OnUnreachable(now)
		fx := c.pullLocked(via{})
		c.mu.Unlock()
		c.apply(&fx)
	case syscall.EMSGSIZE:
		c.reportTooBig(r)
	}
}

// connTo finds the established connection whose peer is at `to` with socket ID peerID: a map
// lookup (a scan of the socket's connections cost 67 µs a report at 5 000).
func (m *mux) connTo(to netip.AddrPort, peerID uint32) *Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byPeer[peerAddrID{to, peerID}]
}
