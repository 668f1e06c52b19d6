package conn

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

// Dial connects to a UDT listener at address (spec §3.2, client side). network is "udp", "udp4"
// or "udp6"; a nil cfg means defaults. It gives up after cfg.HandshakeTimeout with
// ErrHandshakeTimeout; a listener's refusal gives ErrRejected; a host with nothing on the port
// (ICMP port unreachable, where the OS reports it) gives an error matching
// syscall.ECONNREFUSED; all inside a *net.OpError. As in package net, an empty host or a literal
// unspecified address (":9000", "0.0.0.0:9000", "[::]:9000", a wildcard Listener's Addr) means
// the local system: its loopback address of that family. LocalAddr: see DialContext.
func Dial(network, address string, cfg *Config) (*Conn, error) {
	return DialContext(context.Background(), network, address, cfg)
}

// DialContext is Dial with a context: cancelling ctx aborts the handshake with ctx.Err(). As
// for the net package's, ctx must be non-nil (here and in every function of this package that
// takes a context: it panics otherwise).
// The connection opens its own UDP socket of the peer's family on the wildcard address and an
// ephemeral port; its LocalAddr is that port at the source address the OS routes to the peer
// from, as net.DialUDP's is (127.0.0.1 for a loopback peer, not [::]), or the wildcard where
// that lookup fails. To choose the local address, dial over your own socket with
// DialPacketContext.
func DialContext(ctx context.Context, network, address string, cfg *Config) (*Conn, error) {
	checkContext(ctx)
	r, err := cfg.resolved()
	if err != nil {
		return nil, opError("dial", nil, nil, err)
	}
	if err := checkNetwork(network); err != nil {
		return nil, opError("dial", nil, nil, err)
	}
	raddr, err := resolveUDP(ctx, network, address)
	if err != nil {
		return nil, opError("dial", nil, nil, err)
	}
	family := network
	if network == "udp" && raddr.IP.To4() != nil {
		family = "udp4" // not a dual-stack socket for an IPv4 peer
	}
	pc, err := net.ListenUDP(family, nil)
	if err != nil {
		return nil, opError("dial", nil, raddr, err)
	}
	m, err := ownMux(pc, r)
	if err != nil {
		return nil, opError("dial", nil, raddr, err)
	}
	return dial(ctx, m, raddr, &r, nil)
}

// sourceFor returns local (a wildcard address) with the IP the OS would send to raddr from,
// found by connecting a throwaway UDP socket (a route lookup: connect sends nothing), or local
// itself where that fails. It costs a few system calls, so LocalAddr runs it once, when asked,
// and not Dial.
func sourceFor(local net.Addr, raddr *net.UDPAddr) net.Addr {
	la, ok := local.(*net.UDPAddr)
	if !ok || !la.IP.IsUnspecified() {
		return local
	}
	probe, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return local
	}
	defer probe.Close()
	src, ok := probe.LocalAddr().(*net.UDPAddr)
	if !ok || src.IP.IsUnspecified() {
		return local
	}
	return &net.UDPAddr{IP: src.IP, Port: la.Port, Zone: src.Zone}
}

// ownMux runs a socket opened for one connection (Dial, Rendezvous), closed with it. Such a
// socket turns GRO on only once bulk arrives: turning it on (and off again at close) costs the
// kernel ~0.7 ms each, more than the rest of a loopback Dial. A Listener's socket, shared and
// long-lived, has GRO from the start.
func ownMux(pc *net.UDPConn, r Config) (*mux, error) {
	r.noGRO = true
	return newMux(pc, true, &r)
}

// packetMux runs a caller's PacketConn for DialPacketContext and RendezvousPacket (op names the
// call in errors): the resolved Config, the mux and raddr as a *net.UDPAddr.
func packetMux(op string, pc net.PacketConn, raddr net.Addr, cfg *Config) (*mux, *net.UDPAddr, Config, error) {
	r, err := cfg.resolved()
	if err != nil {
		return nil, nil, r, opError(op, pc.LocalAddr(), raddr, err)
	}
	ap := addrPortOf(raddr)
	if !ap.IsValid() {
		return nil, nil, r, opError(op, pc.LocalAddr(), raddr, fmt.Errorf("not a UDP address: %v", raddr))
	}
	m, err := newMux(pc, false, &r)
	if err != nil {
		return nil, nil, r, opError(op, pc.LocalAddr(), raddr, err)
	}
	return m, net.UDPAddrFromAddrPort(ap), r, nil
}

// DialPacketContext connects to raddr over a caller's PacketConn (for sharing a socket, or for
// tests over an in-memory network). pc stays open after the connection closes; it must not be
// read by anyone else while the connection lives, which is until CloseContext returns (Close
// returns before the close's delivery and Shutdown exchange, which need pc, are over). It
// changes on pc what NewListener does (UDP_GRO and SO_TIMESTAMPNS on Linux) and leaves its
// buffer sizes alone.
func DialPacketContext(ctx context.Context, pc net.PacketConn, raddr net.Addr, cfg *Config) (*Conn, error) {
	checkContext(ctx)
	m, ua, r, err := packetMux("dial", pc, raddr, cfg)
	if err != nil {
		return nil, err
	}
	return dial(ctx, m, ua, &r, nil)
}

func checkNetwork(network string) error {
	switch network {
	case "udp", "udp4", "udp6":
		return nil
	}
	return net.UnknownNetworkError(network)
}

func resolveUDP(ctx context.Context, network, address string) (*net.UDPAddr, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, network, port)
	if err != nil {
		return nil, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if (network == "udp4" && !ip.Is4()) || (network == "udp6" && ip.Is4()) {
			return nil, &net.AddrError{Err: "address family does not match network " + network, Addr: host}
		}
		if ip.IsUnspecified() {
			// As in package net, the unspecified address means the local system. The kernel sends
			// a datagram to it over loopback, and the answer comes from the loopback address:
			// dialing the unspecified one would take that answer for a stranger's (spec §3.1).
			if ip.Is4() {
				ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
			} else {
				ip = netip.IPv6Loopback()
			}
		}
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(pn))), nil
	}
	ipNet := map[string]string{"udp": "ip", "udp4": "ip4", "udp6": "ip6"}[network]
	if host == "" {
		host = "localhost"
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	return net.UDPAddrFromAddrPort(netip.AddrPortFrom(ips[0].Unmap(), uint16(pn))), nil
}

// dialer is a client handshake (or a rendezvous) in progress, registered on the mux under its
// socket ID.
type dialer struct {
	peer    netip.AddrPort
	isn     uint32 // our ISN: an ICMP report must quote it (icmp.go)
	replies chan packet.Handshake
	failed  chan struct{}
	once    sync.Once
	err     error

	early chan []byte // rendezvous only: a copy of the first other packet from the peer (spec §3.3)
	// proofs, rendezvous only, takes the handshakes addressed to our socket ID, which only the peer
	// can send: a flood of forged ones (to ID 0) fills replies, never this.
	proofs chan packet.Handshake
}

// handleDatagram takes a handshake answer from the server (reader goroutine). Anything else, or
// anything from another address, is dropped (spec §3.2 step 5); a rendezvous keeps the first
// other packet, which tells it that the peer is connected.
func (d *dialer) handleDatagram(b []byte, from netip.AddrPort) {
	if from != d.peer {
		return
	}
	if !isHandshake(b) {
		if d.early != nil && len(d.early) == 0 {
			select {
			case d.early <- append([]byte(nil), b...):
			default:
			}
		}
		return
	}
	var hs packet.Handshake
	if hs.Decode(b) != nil {
		return
	}
	ch := d.replies
	if d.proofs != nil && hs.DstSocketID != 0 {
		ch = d.proofs
	}
	select {
	case ch <- hs:
	default: // the dialer is behind; it will re-send and get another answer
	}
}

func (d *dialer) fail(err error) {
	d.once.Do(func() { d.err = err; close(d.failed) })
}

// abortErr is the error of a handshake its Listener's Close ended: net.ErrClosed, or the socket's
// failure when that is what closed the Listener.
func (d *dialer) abortErr() error {
	if isClosed(d.failed) {
		return d.err
	}
	return net.ErrClosed
}

// dial runs the client side of the handshake (spec §3.2) on m. It takes a reference on m for the
// connection and releases it if the handshake fails; a mux that dial's caller created for this
// connection alone starts with no reference, so a failure tears it down. Closing abort (a
// Listener's closing; nil: none) ends it with net.ErrClosed.
func dial(ctx context.Context, m *mux, raddr *net.UDPAddr, cfg *Config, abort <-chan struct{}) (*Conn, error) {
	fail := func(err error) (*Conn, error) {
		return nil, opError("dial", sourceFor(m.local, raddr), raddr, err) // as LocalAddr would say
	}
	peer := unmapAddrPort(raddr.AddrPort())
	isn := newISN()
	d := &dialer{peer: peer, isn: isn, replies: make(chan packet.Handshake, 4), failed: make(chan struct{})}
	if !m.acquire() {
		return fail(net.ErrClosed)
	}
	m.mu.Lock()
	id := m.newIDLocked()
	m.dialers[id] = d
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.dialers, id)
		m.mu.Unlock()
	}()

	req := packet.Handshake{
		Version:    packet.Version,
		SocketType: cfg.socketType(),
		ISN:        isn,
		MSS:        uint32(cfg.MSS),
		FlowWindow: uint32(cfg.recvWindow(cfg.MSS)),
		ReqType:    packet.ReqConnect,
		SocketID:   id,
	}
	req.SetPeerAddr(peer.Addr())
	var out [packet.HandshakeSize]byte
	// The handshake's RTT (congestion.Params.RTT): from the current request, if it was sent
	// only once, to its reply.
	var sentAt time.Time
	sends := 0
	var hsRTT time.Duration
	sample := func() {
		if sends == 1 {
			hsRTT = time.Since(sentAt)
		}
	}
	send := func() {
		if isClosed(abort) {
			return // the loop returns net.ErrClosed next: nothing more on the wire
		}
		sends++
		sentAt = time.Now()
		m.writeTo(encodeHandshake(out[:], &req), peer, raddr)
		if m.reportsPending.Load() {
			m.drainReports() // an ICMP report may be this Dial's refusal
		}
	}

	deadline := time.Now().Add(cfg.HandshakeTimeout)
	timeout := time.NewTimer(cfg.HandshakeTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(handshakeInterval)
	defer tick.Stop()
	send()
	for {
		select {
		case hs := <-d.replies:
			switch hs.ReqType {
			case packet.ReqConnect: // the cookie reply: echo the cookie with type −1 at once
				if hs.SocketID != id || hs.ISN != isn {
					continue
				}
				if req.ReqType == packet.ReqConnect {
					sample()
					sends = 0
				} // else a duplicate: the resend below makes the final reply ambiguous (Karn)
				req.Cookie = hs.Cookie
				req.ReqType = packet.ReqResponse
				send()
			case packet.ReqRejected:
				if hs.SocketID != id {
					continue
				}
				m.release()
				err := rejection(&hs, cfg)
				logDial(cfg, raddr, err)
				return fail(err)
			case packet.ReqResponse:
				p, err := checkResponse(&hs, isn, cfg)
				if err != nil {
					m.release()
					logDial(cfg, raddr, err)
					return fail(err)
				}
				sample()
				p.id, p.peer, p.handshakeRTT = id, peer, hsRTT
				return m.newRegisteredConnFromDialer(cfg, p, time.Now()), nil
			}
		case <-tick.C:
			if !time.Now().Before(deadline) {
				m.release()
				return fail(ErrHandshakeTimeout)
			}
			send()
		case <-timeout.C:
			m.release()
			return fail(ErrHandshakeTimeout)
		case <-d.failed:
			m.release()
			return fail(d.err)
		case <-ctx.Done():
			m.release()
			return fail(ctx.Err())
		case <-abort:
			m.release()
			return fail(d.abortErr())
		}
	}
}

// checkResponse validates the listener's final answer (spec §3.2 step 4, plus bounds the
// reference does not check) and returns the negotiated parameters.
func checkResponse(hs *packet.Handshake, isn uint32, cfg *Config) (connParams, error) {
	switch {
	case hs.ISN != isn:
		return connParams{}, fmt.Errorf("%w: ISN %d echoed as %d (UDT error 1004)", ErrBadHandshake, isn, hs.ISN)
	case hs.MSS < minMSS || int(hs.MSS) > cfg.MSS:
		return connParams{}, fmt.Errorf("%w: MSS %d outside [%d, %d]", ErrBadHandshake, hs.MSS, minMSS, cfg.MSS)
	case hs.FlowWindow < minFlowWindow:
		return connParams{}, fmt.Errorf("%w: flow window %d below %d", ErrBadHandshake, hs.FlowWindow, minFlowWindow)
	case hs.SocketID == 0:
		return connParams{}, fmt.Errorf("%w: socket ID 0", ErrBadHandshake)
	}
	return connParams{
		peerID:         hs.SocketID,
		isn:            isn,
		peerISN:        hs.ISN,
		mss:            int(hs.MSS),
		peerFlowWindow: min(int(hs.FlowWindow), cfg.FlowWindow),
	}, nil
}

// DialContext connects to a UDT listener at address from the Listener's own UDP socket, as UDT
// sockets that share a port do (UDT_REUSEADDR, spec §3.1): the connection uses the listener's
// multiplexer, pacer and Config. network is "udp", "udp4" or "udp6".
func (l *Listener) DialContext(ctx context.Context, network, address string) (*Conn, error) {
	checkContext(ctx)
	if err := checkNetwork(network); err != nil {
		return nil, opError("dial", l.mux.local, nil, err)
	}
	raddr, err := resolveUDP(ctx, network, address)
	if err != nil {
		return nil, opError("dial", l.mux.local, nil, err)
	}
	if isClosed(l.closing) || !l.mux.acquire() { // the socket may outlive the Listener
		return nil, opError("dial", l.mux.local, raddr, net.ErrClosed)
	}
	defer l.mux.release() // dial takes its own reference
	return dial(ctx, l.mux, raddr, &l.cfg, l.closing)
}

// checkContext panics on a nil ctx, as the net package's DialContext does: a nil context is a
// programming error, and dereferencing it later says so less clearly.
func checkContext(ctx context.Context) {
	if ctx == nil {
		panic("udt: nil context")
	}
}
