package conn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

// Rendezvous connection setup (spec §3.3): two peers, neither listening, each send the other
// handshake requests from a known local port until they agree; this is how UDT is used through
// NATs whose mappings both peers already know. As in UDT 4.11:
//
//   - both send type 0 requests every 250 ms, to socket ID 0 until they know the peer's ID;
//   - a side that has sent or received a type 0 switches to −1 and sends at once;
//   - a side that has sent −1 and receives −1 or −2 is connected; so is one that, after
//     recording the peer's handshake, receives any other packet from it (the peer is connected
//     and sending); a connected side answers every further handshake but a −2 with a −2;
//   - each side keeps its own random ISN (no echo), and a type 1 (client) request is ignored.
//
// The same rules as the client/server handshake protect it: the peer's address and port must
// match exactly (spec §3.1); its fields are bounds-checked (spec §8.3: MSS in [76, 65535], flow
// window ≥ 2 and capped at Config.FlowWindow, socket ID ≠ 0, ISN < 2^31); the negotiated MSS is
// the smaller of both sides'; our socket ID and ISN come from crypto/rand. A rendezvous has no
// listener to issue a SYN cookie, and needs none: we connect only on a −1 or −2 addressed to
// our random socket ID, which the peer can know only by receiving our request at its address,
// the very proof a cookie gives. The peer's socket ID and ISN are recorded from its first valid
// handshake, but fixed only once a handshake addressed to our socket ID proves them; until then
// a later handshake with others replaces them (anyone can send one from the peer's address, and
// a forged datagram that arrived first would otherwise make us ignore the peer until the
// timeout). While unproven, each 250 ms resend also sends a type 0 to ID 0: it reaches the
// peer's rendezvous by address, whatever we recorded, or, once the peer is connected, its
// connection, found by our address and socket ID, which answers with a −2 that proves it. For a
// peer that answers only handshakes addressed to its socket ID (UDT 4.11), a packet on the data
// path from it (it is connected) makes us re-send our −1 to each of the last 16 sockets we sent
// one to, since the record it was connected on may have been replaced. Handshakes addressed to
// our socket ID queue apart from those to ID 0, so a flood of forged ones cannot crowd them
// out. Once proven, a handshake that differs is from another socket and is ignored. A peer of
// the other mode (stream vs. message) is refused, once its handshake proves it, with a type
// 1002 answer carrying our socket type; both sides then fail with ErrModeMismatch. Departures
// from the reference: a side that connects on a −1 answers with a −2 at once, so its peer
// completes in one trip instead of at its next 250 ms resend, and the packet that completes a
// connection is not lost (UDT 4.11 drops it, spec §11.3 via the captures' README).

// Rendezvous connects to the peer at raddr, which must call Rendezvous towards laddr at about the
// same time (within the handshake timeout of each other), over a new UDP socket bound to laddr
// ("host:port" or ":port"; the peer must know it, so the port must be fixed: port 0 is an error).
// network is "udp", "udp4" or "udp6"; a nil cfg means defaults. It gives up after
// cfg.HandshakeTimeout, 30 s if unset (spec §3.3), with ErrHandshakeTimeout; a peer of the other
// mode gives an error matching ErrRejected and ErrModeMismatch; cancelling ctx aborts it with
// ctx.Err(); errors come inside a *net.OpError. The socket is closed with the connection. To run
// several rendezvous (and connections of other kinds) over one socket, use Listener.Rendezvous.
func Rendezvous(ctx context.Context, network, laddr, raddr string, cfg *Config) (*Conn, error) {
	checkContext(ctx)
	r, err := cfg.resolved()
	if err != nil {
		return nil, opError("rendezvous", nil, nil, err)
	}
	if err := checkNetwork(network); err != nil {
		return nil, opError("rendezvous", nil, nil, err)
	}
	if laddr == "" {
		return nil, opError("rendezvous", nil, nil, errors.New("Rendezvous needs a local address the peer sends to"))
	}
	la, err := net.ResolveUDPAddr(network, laddr)
	if err != nil {
		return nil, opError("rendezvous", nil, nil, err)
	}
	if la.Port == 0 {
		// The kernel would pick a port the peer cannot know, and the rendezvous could only time
		// out (RendezvousPacket takes a socket already bound, whose port can be told to the peer).
		return nil, opError("rendezvous", la, nil, errors.New("Rendezvous needs a fixed local port the peer sends to, not port 0"))
	}
	ra, err := resolveUDP(ctx, network, raddr)
	if err != nil {
		return nil, opError("rendezvous", la, nil, err)
	}
	pc, err := net.ListenUDP(network, la)
	if err != nil {
		return nil, opError("rendezvous", la, ra, err)
	}
	m, err := ownMux(pc, r)
	if err != nil {
		return nil, opError("rendezvous", la, ra, err)
	}
	return rendezvous(ctx, m, ra, &r, nil)
}

// RendezvousPacket is Rendezvous over a caller's PacketConn, which stays open after the
// connection closes and must not be read by anyone else while the connection lives.
func RendezvousPacket(ctx context.Context, pc net.PacketConn, raddr net.Addr, cfg *Config) (*Conn, error) {
	checkContext(ctx)
	m, ua, r, err := packetMux("rendezvous", pc, raddr, cfg)
	if err != nil {
		return nil, err
	}
	return rendezvous(ctx, m, ua, &r, nil)
}

// Rendezvous runs a rendezvous with the peer at address over the Listener's own UDP socket: any
// number of rendezvous (one per peer address at a time), dialled and accepted connections share
// it. The connection uses the Listener's Config; its HandshakeTimeout bounds the rendezvous (30 s
// if it was unset).
func (l *Listener) Rendezvous(ctx context.Context, network, address string) (*Conn, error) {
	checkContext(ctx)
	if err := checkNetwork(network); err != nil {
		return nil, opError("rendezvous", l.mux.local, nil, err)
	}
	raddr, err := resolveUDP(ctx, network, address)
	if err != nil {
		return nil, opError("rendezvous", l.mux.local, nil, err)
	}
	if isClosed(l.closing) || !l.mux.acquire() { // the socket may outlive the Listener
		return nil, opError("rendezvous", l.mux.local, raddr, net.ErrClosed)
	}
	defer l.mux.release() // rendezvous takes its own reference
	return rendezvous(ctx, l.mux, raddr, &l.cfg, l.closing)
}

// rendezvousFor returns the rendezvous in progress with from that a datagram addressed to socket
// ID 0 is for, or nil: any handshake from that address but a client's connection request (type
// 1, which stays the listener's). Caller holds m.mu.
func (m *mux) rendezvousFor(b []byte, from netip.AddrPort) *dialer {
	d := m.rdv[from]
	if d == nil || !isHandshake(b) || len(b) < headerSize+24 {
		return nil
	}
	if packet.ReqType(binary.BigEndian.Uint32(b[headerSize+20:])) == packet.ReqConnect {
		return nil
	}
	return d
}

// rendezvousConnFor returns the connected rendezvous whose peer, at from, sent the type 0 request b
// to socket ID 0, or nil: a peer still unproven re-sends one at each resend (see rendezvous), and
// the connection answers it with its −2, which proves it. The request's socket ID must be the
// connection's peer's, which a forger cannot know. Caller holds m.mu.
func (m *mux) rendezvousConnFor(b []byte, from netip.AddrPort) *Conn {
	if !isHandshake(b) || len(b) < headerSize+28 ||
		packet.ReqType(binary.BigEndian.Uint32(b[headerSize+20:])) != packet.ReqRendezvous {
		return nil
	}
	c := m.byPeer[peerAddrID{from, binary.BigEndian.Uint32(b[headerSize+24:])}]
	if c == nil || !c.rendezvous {
		return nil
	}
	return c
}

// answers reports whether c answers a handshake of type t addressed to it with its hsReply: a
// listener's connection a repeated request (t > 0), a rendezvous connection anything but a −2
// (spec §3.2 last bullet, §3.3).
func (c *Conn) answers(t packet.ReqType) bool {
	if c.rendezvous {
		return t != packet.ReqRendezvousResponse
	}
	return t > 0
}

// rendezvous runs the handshake of spec §3.3 on m (see the comment at the top of this file). It
// takes a reference on m for the connection and releases it if the handshake fails, so a mux
// made for this connection alone is torn down then. Closing abort (a Listener's closing; nil:
// none) ends it with net.ErrClosed.
func rendezvous(ctx context.Context, m *mux, raddr *net.UDPAddr, cfg *Config, abort <-chan struct{}) (*Conn, error) {
	fail := func(err error) (*Conn, error) {
		return nil, opError("rendezvous", m.local, raddr, err)
	}
	peer := unmapAddrPort(raddr.AddrPort())
	d := &dialer{peer: peer, replies: make(chan packet.Handshake, 8), failed: make(chan struct{}),
		early: make(chan []byte, 1), proofs: make(chan packet.Handshake, 8)}
	if !m.acquire() {
		return fail(net.ErrClosed)
	}
	m.mu.Lock()
	if m.rdv[peer] != nil {
		m.mu.Unlock()
		m.release()
		return fail(fmt.Errorf("a rendezvous with %v is already in progress on this socket", peer))
	}
	id := m.newIDLocked()
	m.dialers[id] = d
	m.rdv[peer] = d
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.dialers, id)
		if m.rdv[peer] == d {
			delete(m.rdv, peer)
		}
		m.mu.Unlock()
	}()

	isn := newISN()
	req := packet.Handshake{
		Version:    packet.Version,
		SocketType: cfg.socketType(),
		ISN:        isn,
		MSS:        uint32(cfg.MSS),
		FlowWindow: uint32(cfg.recvWindow(cfg.MSS)),
		ReqType:    packet.ReqRendezvous,
		SocketID:   id,
	}
	req.SetPeerAddr(peer.Addr())
	var (
		out      [packet.HandshakeSize]byte
		peerHS   packet.Handshake // the peer's handshake recorded (see proven)
		have     bool
		proven   bool // peerHS came addressed to our socket ID: the peer received our request
		replaced bool // an unproven record gave way to another
		// addressed are the unproven records our −1 went to, newest last (see the early case).
		addressed []rdvCandidate
		lastAsk   time.Time
	)
	send := func(h *packet.Handshake) {
		if !isClosed(abort) { // else the loop returns net.ErrClosed next: nothing more on the wire
			m.writeTo(encodeHandshake(out[:], h), peer, raddr)
		}
	}
	sendReq := func() {
		req.DstSocketID = 0
		if have {
			req.DstSocketID = peerHS.SocketID
			if !proven && req.ReqType == packet.ReqResponse {
				addressed = addCandidate(addressed, rdvCandidate{id: peerHS.SocketID, mss: req.MSS})
			}
		}
		send(&req)
	}
	connect := func() *Conn {
		mss := int(req.MSS)
		p := connParams{
			id: id, peerID: peerHS.SocketID, isn: isn, peerISN: peerHS.ISN, mss: mss,
			peerFlowWindow: min(int(peerHS.FlowWindow), cfg.FlowWindow), peer: peer,
		}
		resp := req
		resp.ReqType = packet.ReqRendezvousResponse
		resp.FlowWindow = uint32(cfg.recvWindow(mss))
		resp.DstSocketID = peerHS.SocketID
		// Set before the connection is registered: the socket's reader answers handshakes with
		// them as soon as it can see the connection.
		p.rendezvous, p.hsReply = true, encodeHandshake(make([]byte, 0, packet.HandshakeSize), &resp)
		return m.newRegisteredConnFromDialer(cfg, p, time.Now())
	}

	timeout := time.NewTimer(cfg.rdvTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(handshakeInterval)
	defer tick.Stop()
	sendReq()
	for {
		var hs packet.Handshake
		select {
		case hs = <-d.proofs:
		case hs = <-d.replies:
		case b := <-d.early:
			if !have || req.ReqType != packet.ReqResponse {
				continue // the reference completes only after recording the peer's handshake
			}
			if replaced && !proven {
				// The peer is connected (only it can address our random ID), on a −1 of ours;
				// but our record was replaced since, maybe by a forger, and the packet cannot
				// say which record is the peer's. Ask every socket our −1 went to: the peer's
				// connection answers with a −2 to our ID, which proves its record. At most every
				// fifth of a resend interval (50 ms): the peer's packets come far more often, and
				// one ask sends up to maxRdvCandidates datagrams, so at most 320 a second.
				if now := time.Now(); now.Sub(lastAsk) >= handshakeInterval/5 {
					lastAsk = now
					for _, cand := range addressed {
						ask := req
						ask.DstSocketID, ask.MSS = cand.id, cand.mss
						send(&ask)
					}
				}
				continue
			}
			c := connect()
			c.handleOne(b, peer, time.Now()) // not lost, unlike in UDT 4.11
			return c, nil
		case <-tick.C:
			sendReq()
			if have && !proven {
				// Our −1 reaches only the socket we recorded; if that was a forger's and the
				// peer's own request was lost, neither side would hear the other again. A
				// request to ID 0 reaches the peer's rendezvous by address, with our own MSS.
				fresh := req
				fresh.ReqType, fresh.DstSocketID, fresh.MSS = packet.ReqRendezvous, 0, uint32(cfg.MSS)
				send(&fresh)
			}
			continue
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
		switch hs.ReqType {
		case packet.ReqRendezvous, packet.ReqResponse, packet.ReqRendezvousResponse:
		case packet.ReqRejected:
			if hs.DstSocketID == id { // it received our request: a peer that refuses us
				m.release()
				return fail(rejection(&hs, cfg))
			}
			continue
		default: // a client's request (type 1) cannot talk to a rendezvous peer (spec §3.3)
			continue
		}
		full := hs.ReqType != packet.ReqRendezvousResponse // UDT4's −2 leaves version and type 0
		if full && hs.Version != packet.Version {
			continue
		}
		if hs.SocketID == 0 || hs.ISN > packet.MaxSeqNo || hs.MSS < minMSS || hs.MSS > maxMSS ||
			hs.FlowWindow < minFlowWindow || (hs.DstSocketID != 0 && hs.DstSocketID != id) {
			continue // bounds the reference never checks (spec §8.3)
		}
		toUs := hs.DstSocketID == id // the sender received our request (our ID is random)
		if have && (hs.SocketID != peerHS.SocketID || hs.ISN != peerHS.ISN) {
			if proven {
				continue // another socket at that address, or forged: the proven record stays
			}
			// Anyone who knows the peer's address and port can send a handshake from it, so
			// an unproven record gives way to the latest: one forged datagram before the
			// peer's own must not make us ignore the peer for good.
			have, replaced = false, true
		}
		if full && hs.SocketType != cfg.socketType() && toUs {
			rej := req
			rej.ReqType = packet.ReqRejected
			rej.DstSocketID = hs.SocketID
			// Nothing of ours answers the peer once we return (our socket may close), so a lost
			// 1002 would leave it waiting out its timeout instead of failing with the mismatch:
			// it goes rejectCopies times, and all are lost with probability p³ where one copy is
			// lost with p (30 % loss: 2.7 % instead of 30 %).
			for range rejectCopies {
				send(&rej)
			}
			m.release()
			return fail(&modeMismatchError{peer: hs.SocketType, local: cfg.socketType()})
		}
		// A peer of the other mode whose request does not yet prove it is recorded like any
		// other: our −1 then reaches it, and it refuses us with a 1002 addressed to our ID.
		if !have {
			peerHS, have = hs, true
			req.MSS = min(uint32(cfg.MSS), hs.MSS) // our −1 and −2 carry the negotiated MSS
		}
		proven = proven || toUs
		if req.ReqType == packet.ReqRendezvous || hs.ReqType == packet.ReqRendezvous {
			req.ReqType = packet.ReqResponse
			sendReq()
			continue
		}
		if !toUs {
			continue // a −1 or −2 must prove that the peer received our request
		}
		c := connect()
		if hs.ReqType == packet.ReqResponse {
			c.answerHandshake(nil) // our −2: the peer completes now, not at its next resend
		}
		return c, nil
	}
}

// rejectCopies is how many times a rendezvous that refuses its peer's mode sends the 1002 (see
// rendezvous): a duplicate is harmless, as the peer fails on the first it gets.
const rejectCopies = 3

// rdvCandidate is a socket an unproven rendezvous sent its −1 to, and the MSS that −1 carried.
type rdvCandidate struct {
	id  uint32
	mss uint32
}

// maxRdvCandidates bounds the sockets an unproven rendezvous remembers having addressed: a forger
// can make it address one per forged handshake, and the peer's is usually among the last few.
const maxRdvCandidates = 16

// addCandidate adds c to list, newest last, dropping an older entry for the same socket and the
// oldest beyond maxRdvCandidates.
func addCandidate(list []rdvCandidate, c rdvCandidate) []rdvCandidate {
	for i, o := range list {
		if o.id == c.id {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == maxRdvCandidates {
		list = append(list[:0], list[1:]...)
	}
	return append(list, c)
}
