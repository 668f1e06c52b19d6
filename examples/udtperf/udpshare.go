package main

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// udpShare lets the udt listener and the quic listener serve one UDP port. It tells their
// packets apart by peer address: a peer's kind is set by its first unambiguous packet — a UDT
// handshake (control type 0: first bytes 0x80 0x00, at least 64 bytes, spec §3.2) marks a udt
// peer; a QUIC long-header packet (first byte ≥ 0xC0, nonzero version, at least 1200 bytes as
// every client Initial is, RFC 9000 §14.1) marks a quic peer. Later packets of a peer go where
// its kind says; packets of unknown peers go to udt, which drops what it does not recognise.
// (Packet by packet the two cannot be told apart: a UDT data packet's first byte may be anything
// below 0x80, like a QUIC short header's.)
//
// The udt side reads the socket itself (no extra copy or goroutine on udt's path) and hands
// quic's packets to the quic side's queue, so quic receives only while the udt listener runs;
// the server opens and closes them together.
type udpShare struct {
	pc    *net.UDPConn
	udt   *shareUDT
	quic  *shareQUIC
	kinds map[netip.AddrPort]peerKind // touched only by the udt side's reader
}

type peerKind struct {
	quic bool
	seen time.Time
}

const (
	shareMaxPeers = 4096             // peers remembered; beyond, new peers are not classified
	shareForget   = 2 * time.Minute  // a peer silent this long is forgotten when space is needed
	shareQueue    = 1024             // quic packets waiting to be read; more are dropped
	shareMaxPkt   = 64 << 10         // largest datagram
	shareTouch    = 10 * time.Second // how often a peer's last-seen time is refreshed
)

func newUDPShare(pc *net.UDPConn) *udpShare {
	// What conn and quic-go would ask for on a socket of their own (the kernel clamps to its
	// limits); quic-go cannot size a socket it does not own and would warn about it.
	pc.SetReadBuffer(16 << 20)
	pc.SetWriteBuffer(4 << 20)
	os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
	s := &udpShare{pc: pc, kinds: make(map[netip.AddrPort]peerKind)}
	s.udt = &shareUDT{s}
	s.quic = &shareQUIC{s: s, ch: make(chan sharePkt, shareQueue), closed: make(chan struct{}), dl: make(chan struct{})}
	s.quic.pool.New = func() any { b := make([]byte, shareMaxPkt); return &b }
	return s
}

// Close closes the quic side and the socket.
func (s *udpShare) Close() error {
	s.quic.Close()
	return s.pc.Close()
}

// isQUIC classifies a datagram from peer and remembers the peer's kind.
func (s *udpShare) isQUIC(b []byte, from netip.AddrPort, now time.Time) bool {
	switch {
	case len(b) >= 64 && b[0] == 0x80 && b[1] == 0x00:
		s.remember(from, false, now)
		return false
	case len(b) >= 1200 && b[0]&0xc0 == 0xc0 && (b[1]|b[2]|b[3]|b[4]) != 0:
		s.remember(from, true, now)
		return true
	}
	k, ok := s.kinds[from]
	if ok && now.Sub(k.seen) > shareTouch {
		k.seen = now
		s.kinds[from] = k
	}
	return ok && k.quic
}

func (s *udpShare) remember(from netip.AddrPort, quic bool, now time.Time) {
	if _, ok := s.kinds[from]; !ok && len(s.kinds) >= shareMaxPeers {
		for a, k := range s.kinds {
			if now.Sub(k.seen) > shareForget {
				delete(s.kinds, a)
			}
		}
		if len(s.kinds) >= shareMaxPeers {
			return
		}
	}
	s.kinds[from] = peerKind{quic: quic, seen: now}
}

// shareUDT is the udt listener's view of the socket.
type shareUDT struct{ s *udpShare }

func (u *shareUDT) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		n, from, err := u.s.pc.ReadFromUDPAddrPort(b)
		if err != nil {
			return n, from, err
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if !u.s.isQUIC(b[:n], from, time.Now()) {
			return n, from, nil
		}
		u.s.quic.push(b[:n], from)
	}
}

func (u *shareUDT) WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error) {
	return u.s.pc.WriteToUDPAddrPort(b, to)
}

func (u *shareUDT) ReadFrom(b []byte) (int, net.Addr, error) {
	n, from, err := u.ReadFromUDPAddrPort(b)
	if err != nil {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

func (u *shareUDT) WriteTo(b []byte, to net.Addr) (int, error) { return u.s.pc.WriteTo(b, to) }
func (u *shareUDT) Close() error                               { return nil } // the share owns the socket
func (u *shareUDT) LocalAddr() net.Addr                        { return u.s.pc.LocalAddr() }
func (u *shareUDT) SetDeadline(t time.Time) error              { return u.s.pc.SetReadDeadline(t) }
func (u *shareUDT) SetReadDeadline(t time.Time) error          { return u.s.pc.SetReadDeadline(t) }
func (u *shareUDT) SetWriteDeadline(t time.Time) error         { return u.s.pc.SetWriteDeadline(t) }

// shareQUIC is the quic listener's view: datagrams queued by the udt side's reader.
type shareQUIC struct {
	s      *udpShare
	ch     chan sharePkt
	pool   sync.Pool
	closed chan struct{}
	once   sync.Once

	dlMu     sync.Mutex
	dl       chan struct{} // closed when the read deadline has passed
	dlPassed bool
	dlTimer  *time.Timer
}

type sharePkt struct {
	buf  *[]byte
	n    int
	from netip.AddrPort
}

func (q *shareQUIC) push(b []byte, from netip.AddrPort) {
	buf := q.pool.Get().(*[]byte)
	n := copy(*buf, b)
	select {
	case q.ch <- sharePkt{buf, n, from}:
	default: // quic is not keeping up: drop, as a full socket buffer would
		q.pool.Put(buf)
	}
}

func (q *shareQUIC) ReadFrom(b []byte) (int, net.Addr, error) {
	q.dlMu.Lock()
	dl := q.dl
	q.dlMu.Unlock()
	select {
	case <-dl:
		return 0, nil, &net.OpError{Op: "read", Net: "udp", Addr: q.LocalAddr(), Err: os.ErrDeadlineExceeded}
	case p := <-q.ch:
		n := copy(b, (*p.buf)[:p.n])
		q.pool.Put(p.buf)
		return n, net.UDPAddrFromAddrPort(p.from), nil
	case <-q.closed:
		return 0, nil, net.ErrClosed
	}
}

func (q *shareQUIC) WriteTo(b []byte, to net.Addr) (int, error) { return q.s.pc.WriteTo(b, to) }
func (q *shareQUIC) Close() error                               { q.once.Do(func() { close(q.closed) }); return nil }
func (q *shareQUIC) LocalAddr() net.Addr                        { return q.s.pc.LocalAddr() }
func (q *shareQUIC) SetDeadline(t time.Time) error              { return q.SetReadDeadline(t) }
func (q *shareQUIC) SetWriteDeadline(time.Time) error           { return nil }

// SetReadDeadline wakes a blocked ReadFrom when t passes (quic-go stops its reader this way).
func (q *shareQUIC) SetReadDeadline(t time.Time) error {
	q.dlMu.Lock()
	defer q.dlMu.Unlock()
	if q.dlTimer != nil {
		q.dlTimer.Stop()
		q.dlTimer = nil
	}
	if q.dlPassed {
		q.dl, q.dlPassed = make(chan struct{}), false
	}
	if t.IsZero() {
		return nil
	}
	ch := q.dl
	d := time.Until(t)
	if d <= 0 {
		close(ch)
		q.dlPassed = true
		return nil
	}
	q.dlTimer = time.AfterFunc(d, func() {
		q.dlMu.Lock()
		defer q.dlMu.Unlock()
		if q.dl == ch && !q.dlPassed {
			close(ch)
			q.dlPassed = true
		}
	})
	return nil
}
