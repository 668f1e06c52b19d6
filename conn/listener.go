package conn

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/udtgo/udt/internal/packet"
)

// Listener accepts UDT connections on one UDP socket (spec §3.2, server side). It implements
// net.Listener; Accept returns *Conn values as net.Conn. Accepted connections share the
// listener's socket and outlive the Listener: closing it stops accepting, closes connections not
// yet accepted, and keeps the socket open for the others until the last is closed.
type Listener struct {
	mux *mux
	cfg Config
	jar *cookieJar

	acceptq chan *Conn
	closing chan struct{}
	once    sync.Once

	mu      sync.Mutex
	closed  bool                  // no more connections are queued
	byPeer  map[peerKey]peerEntry // connections made from a request, open or closed (listener_stats.go)
	pruned  time.Time             // last pruneReplays
	deadErr error

	stats listenerCounters
	obs   observer // Config.Logger (observe.go)
}

// peerKey identifies a connection request: the reference's duplicate check (spec §3.2).
type peerKey struct {
	addr   netip.AddrPort
	peerID uint32
	isn    uint32
}

// Listen announces on the local UDP address and returns a Listener. network is "udp", "udp4" or
// "udp6"; address is as for net.ListenUDP ("host:port", ":0" picks a port). A nil cfg means
// defaults. Errors come inside a *net.OpError.
func Listen(network, address string, cfg *Config) (*Listener, error) {
	r, err := cfg.resolved()
	if err != nil {
		return nil, opError("listen", nil, nil, err)
	}
	if err := checkNetwork(network); err != nil {
		return nil, opError("listen", nil, nil, err)
	}
	laddr, err := net.ResolveUDPAddr(network, address)
	if err != nil {
		return nil, opError("listen", nil, nil, err)
	}
	pc, err := net.ListenUDP(network, laddr)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) { // "listen udt ADDR: bind: …", not "listen udp ADDR: …"
			err = oe.Err
		}
		return nil, opError("listen", laddr, nil, err)
	}
	return newListener(pc, true, &r)
}

// NewListener returns a Listener on a caller's PacketConn (for sharing a socket, or for tests over
// an in-memory network). The Listener and its connections read pc until the last of them is
// over (see Conn.CloseContext), then leave it open; pc must not be read by anyone else meanwhile.
//
// What it changes on pc: nothing but its read deadline (set in the past to stop the reader at
// the end, then cleared), except that on Linux, when pc is a *net.UDPConn, it turns on UDP_GRO
// (batched reads; it stays on, so a later reader of pc may get several datagrams glued in one
// read unless it turns UDP_GRO off) and SO_TIMESTAMPNS (kernel receive times). It does not
// resize pc's kernel buffers, as Listen does for its own socket (8 MiB asked for): with the
// kernel's default of about 208 KiB a fast transfer overflows the receive buffer, which
// ListenerStats.KernelDrops, Stats.KernelDrops and a Config.Logger warning report; raise it with
// pc.SetReadBuffer (the kernel caps it at net.core.rmem_max).
func NewListener(pc net.PacketConn, cfg *Config) (*Listener, error) {
	r, err := cfg.resolved()
	if err != nil {
		return nil, opError("listen", pc.LocalAddr(), nil, err)
	}
	return newListener(pc, false, &r)
}

func newListener(pc net.PacketConn, own bool, cfg *Config) (*Listener, error) {
	m, err := newMux(pc, own, cfg)
	if err != nil {
		return nil, opError("listen", pc.LocalAddr(), nil, err)
	}
	l := &Listener{
		mux:     m,
		cfg:     *cfg,
		jar:     newCookieJar(time.Now()),
		acceptq: make(chan *Conn, cfg.Backlog),
		closing: make(chan struct{}),
		byPeer:  make(map[peerKey]peerEntry),
	}
	l.obs.initLog(cfg.Logger, "listener", m.local)
	m.acquire()
	m.mu.Lock()
	m.listener = l
	m.mu.Unlock()
	return l, nil
}

// Accept waits for and returns the next connection. After Close it returns net.ErrClosed inside
// a *net.OpError.
func (l *Listener) Accept() (net.Conn, error) { return l.AcceptUDT(context.Background()) }

// AcceptUDT is Accept returning the *Conn, with a context that can cancel the wait.
func (l *Listener) AcceptUDT(ctx context.Context) (*Conn, error) {
	checkContext(ctx)
	select {
	case c := <-l.acceptq:
		return c, nil
	default:
	}
	select {
	case c := <-l.acceptq:
		return c, nil
	case <-l.closing:
		l.mu.Lock()
		err := l.deadErr
		l.mu.Unlock()
		if err == nil {
			err = net.ErrClosed
		}
		return nil, opError("accept", l.mux.local, nil, err)
	case <-ctx.Done():
		return nil, opError("accept", l.mux.local, nil, ctx.Err())
	}
}

// Close stops listening. Connections waiting in the accept queue are closed (their peers see an
// orderly close, io.EOF: UDT4 has no reset); accepted ones, and ones made by DialContext or
// Rendezvous, are not. DialContext and Rendezvous calls still in their handshake return at once
// with an error wrapping net.ErrClosed, as later calls do. It is idempotent.
func (l *Listener) Close() error {
	l.shutdown(nil)
	return nil
}

func (l *Listener) breakWith(err error) { l.shutdown(err) }

func (l *Listener) shutdown(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.deadErr = err
		l.closed = true
		l.mu.Unlock()
		close(l.closing)
		l.mux.mu.Lock()
		if l.mux.listener == l {
			l.mux.listener = nil
		}
		l.mux.mu.Unlock()
		for {
			select {
			case c := <-l.acceptq:
				c.Close()
				continue
			default:
			}
			break
		}
		if l.obs.log != nil {
			l.obs.wait()
		}
		l.mux.release()
	})
}

// Addr returns the listener's UDP address.
func (l *Listener) Addr() net.Addr { return l.mux.local }

// forget marks c closed in the repeated-request table (called when c closes): its key is kept
// until its cookie has expired, so that a replay of its handshake makes nothing.
func (l *Listener) forget(k peerKey, c *Conn) {
	l.mu.Lock()
	if e := l.byPeer[k]; e.c == c {
		if time.Now().Before(e.replayUntil) {
			l.byPeer[k] = peerEntry{replayUntil: e.replayUntil}
		} else {
			delete(l.byPeer, k)
		}
	}
	l.mu.Unlock()
}

// handleHandshake serves one datagram addressed to socket ID 0 (spec §3.2, server side). It runs
// on the reader goroutine and keeps no state for a request until its cookie checks out.
func (l *Listener) handleHandshake(b []byte, from netip.AddrPort, now time.Time) {
	defer l.obs.flush() // after l.mu is released: lines are recorded under it, logged here
	var hs packet.Handshake
	if hs.Decode(b) != nil {
		l.stats.malformed.Add(1)
		l.logRejected(reasonBadHandshake, from, now)
		return
	}
	var out [packet.HandshakeSize]byte
	switch hs.ReqType {
	case packet.ReqConnect:
		// Step 3: echo the request with our cookie; no state is created.
		hs.Cookie = l.jar.make(from, now)
		hs.DstSocketID = hs.SocketID
		hs.Timestamp = 0
		l.stats.cookies.Add(1)
		l.mux.writeTo(encodeHandshake(out[:], &hs), from, net.UDPAddrFromAddrPort(from))
		return
	case packet.ReqResponse:
	default:
		l.stats.notServed.Add(1)
		return // rendezvous requests and anything else: not for a listener (spec §3.3)
	}
	if !l.jar.valid(from, hs.Cookie, now) {
		l.stats.badCookie.Add(1)
		l.logRejected(reasonBadCookie, from, now)
		return
	}
	if hs.Version != packet.Version || hs.SocketType != l.cfg.socketType() {
		l.stats.badVersion.Add(1)
		l.logRejected(reasonIncompatible, from, now)
		hs.SocketType = l.cfg.socketType() // tells a peer of ours why (UDT4 reads only the type 1002)
		l.reject(&hs, from)
		return
	}
	// Bounds the reference never checks (spec §8.3).
	if hs.SocketID == 0 || hs.ISN > packet.MaxSeqNo || hs.MSS < minMSS || hs.MSS > maxMSS ||
		hs.FlowWindow < minFlowWindow {
		l.stats.badField.Add(1)
		l.logRejected(reasonBadField, from, now)
		return
	}
	key := peerKey{from, hs.SocketID, hs.ISN}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.pruneReplays(now)
	if e, ok := l.byPeer[key]; ok {
		if e.c != nil {
			l.stats.repeated.Add(1)
			e.c.answerHandshake(nil) // a repeated request gets the same answer
			return
		}
		if now.Before(e.replayUntil) {
			l.stats.replayed.Add(1) // a closed connection's handshake: a replay
			return
		}
	}
	if len(l.acceptq) == cap(l.acceptq) {
		l.stats.backlog.Add(1)
		l.logRejected(reasonBacklogFull, from, now)
		l.reject(&hs, from)
		return
	}
	m := l.mux
	if !m.acquire() {
		return
	}
	mss := min(int(hs.MSS), l.cfg.MSS)
	p := connParams{
		isn:            hs.ISN, // the reference echoes the client's ISN and sends from it too (spec §3.2)
		peerISN:        hs.ISN,
		mss:            mss,
		peerFlowWindow: min(int(hs.FlowWindow), l.cfg.FlowWindow),
		peer:           from,
		peerID:         hs.SocketID,
		server:         true,
	}
	c := m.newRegisteredConn(&l.cfg, p, now)
	resp := hs
	resp.ReqType = packet.ReqResponse
	resp.SocketID = c.id
	resp.MSS = uint32(mss)
	resp.FlowWindow = uint32(l.cfg.recvWindow(mss))
	resp.SetPeerAddr(from.Addr())
	resp.DstSocketID = hs.SocketID
	resp.Timestamp = 0
	c.hsReply = encodeHandshake(make([]byte, 0, packet.HandshakeSize), &resp)
	c.onClose = func() { l.forget(key, c) }
	l.byPeer[key] = peerEntry{c: c, replayUntil: l.jar.expiry(now)}
	l.stats.accepted.Add(1)
	l.acceptq <- c // never blocks: only this goroutine sends, under l.mu, and there was room
	c.answerHandshake(nil)
}

// reject answers hs with request type 1002 (spec §3.2 steps 5 and 6).
func (l *Listener) reject(hs *packet.Handshake, from netip.AddrPort) {
	r := *hs
	r.ReqType = packet.ReqRejected
	r.DstSocketID = hs.SocketID
	r.Timestamp = 0
	var out [packet.HandshakeSize]byte
	l.mux.writeTo(encodeHandshake(out[:], &r), from, net.UDPAddrFromAddrPort(from))
}

var _ net.Listener = (*Listener)(nil)
