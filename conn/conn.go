package conn

import (
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/stream"
	"github.com/udtgo/udt/pacer"
)

// Conn is one UDT connection: a reliable, ordered byte stream (UDT STREAM socket type). It
// implements net.Conn; all methods are safe for concurrent use.
type Conn struct {
	mux    *mux
	cfg    Config
	id     uint32 // our socket ID
	peerID uint32 // the peer's socket ID
	peer   netip.AddrPort
	raddr  *net.UDPAddr
	isn    uint32 // our first data sequence number
	mss    int    // negotiated

	hsReply    []byte // the handshake answer we sent (listener side), re-sent on a repeated request
	rendezvous bool   // made by Rendezvous: hsReply answers every handshake but a −2 (spec §3.3)
	onClose    func() // set by the Listener that made the connection, run once by Close

	mu      sync.Mutex // guards ep and the fields below
	ep      *stream.Endpoint
	depAt   time.Time // departure the data pacer has for us; zero when idle
	timerAt time.Time // when the timer pacer fires for us next; zero when none
	closed  bool      // Close was called

	dataFlow  dataFlow
	timerFlow timerFlow
	dataH     *pacer.Handle
	timerH    *pacer.Handle

	readable chan struct{} // 1-buffered: something for Read may have changed
	writable chan struct{} // 1-buffered: something for Write or Close's linger may have changed
	closing  chan struct{} // closed by Close
	dead     chan struct{} // closed when the connection broke (deadErr says why)
	deadOnce sync.Once
	deadErr  error
	wsem     chan struct{} // serialises Writes; a channel so that waiting honours deadlines

	closeOnce sync.Once
	rdl, wdl  *deadline

	foreignDrops atomic.Uint64 // datagrams for our ID from another address

	obs observer // Config.Logger and Config.Tracer (observe.go)

	// Packet-size changes already noted (pmtu.go); guarded by mu.
	sizeChanges uint64
	loggedSize  int
}

// connParams are what the handshake settled.
type connParams struct {
	id, peerID     uint32
	isn, peerISN   uint32
	mss            int
	peerFlowWindow int
	peer           netip.AddrPort
	server         bool // accepted by a Listener
}

// newConn builds an established connection on m and registers it for dispatch.
// The caller holds a mux reference for it (released by Close).
func newConn(m *mux, cfg *Config, p connParams, now time.Time) *Conn {
	c := &Conn{
		mux:      m,
		cfg:      *cfg,
		id:       p.id,
		peerID:   p.peerID,
		peer:     p.peer,
		raddr:    net.UDPAddrFromAddrPort(p.peer),
		isn:      p.isn,
		mss:      p.mss,
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
		closing:  make(chan struct{}),
		dead:     make(chan struct{}),
		wsem:     make(chan struct{}, 1),
		rdl:      newDeadline(),
		wdl:      newDeadline(),
	}
	c.dataFlow.c = c
	c.timerFlow.c = c
	var ctl congestion.Controller = cfg.Congestion()
	c.obs.init(cfg, c.traceInfo(ctl, p, now))
	engineTracer, tracePackets := c.obs.engineTracer()
	c.ep = stream.New(stream.Config{
		LocalID:         p.id,
		PeerID:          p.peerID,
		ISN:             p.isn,
		PeerISN:         p.peerISN,
		MSS:             p.mss,
		PeerFlowWindow:  p.peerFlowWindow,
		SendBuffer:      cfg.SendBuffer,
		RecvBuffer:      cfg.RecvBuffer / payloadSize(p.mss),
		Controller:      ctl,
		MaxBandwidth:    cfg.MaxBandwidth,
		IdleTimeout:     cfg.IdleTimeout,
		StrictPacing:    cfg.StrictPacing,
		Messages:        cfg.MessageMode,
		PathMTU:         m.pathMTUConfig(p.mss),
		Start:           now,
		Output:          c.output,
		Tracer:          engineTracer,
		TracePackets:    tracePackets,
		PacingTolerance: m.pacingTolerance(), // the data pacer's (the socket's first user's)
	}, now)
	c.loggedSize = c.ep.PacketSize()
	c.observeEstablished(ctl, m)
	c.dataH = m.send.Add(&c.dataFlow)
	c.timerH = m.timers.Add(&c.timerFlow)
	c.mu.Lock()
	c.afterEngineLocked()
	c.mu.Unlock()
	return c
}

// output sends one control packet for the engine (called with c.mu held).
func (c *Conn) output(b []byte) { c.mux.writeTo(b, c.peer, c.raddr) }

// afterEngineLocked propagates what the last engine call changed: departure and timer
// schedules, readiness, breakage. Caller holds c.mu.
func (c *Conn) afterEngineLocked() {
	if dep := c.ep.Departure(); !dep.IsZero() && (c.depAt.IsZero() || dep.Before(c.depAt)) {
		c.depAt = dep
		c.dataH.Schedule(dep)
	}
	if t := c.ep.NextTimer(); !t.IsZero() && (c.timerAt.IsZero() || t.Before(c.timerAt)) {
		c.timerAt = t
		c.timerH.Schedule(t)
	}
	if c.ep.CanRead() {
		signal(c.readable)
	}
	if c.ep.CanWrite() {
		signal(c.writable)
	}
	if err := c.ep.Err(); err != nil {
		c.breakLocked(connError(err))
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// breakLocked marks the connection broken by err (first error wins) and wakes every waiter.
func (c *Conn) breakLocked(err error) {
	c.deadOnce.Do(func() {
		c.deadErr = err
		close(c.dead)
		c.observeBroken(err)
	})
}

// breakWith is breakLocked for callers without c.mu.
func (c *Conn) breakWith(err error) {
	c.mu.Lock()
	c.breakLocked(err)
	c.mu.Unlock()
}

// handleDatagram is the reader goroutine's entry for a datagram addressed to our socket ID.
func (c *Conn) handleDatagram(b []byte, from netip.AddrPort, now time.Time) {
	if from != c.peer {
		c.foreignDrops.Add(1) // spec §3.1: the source must be the peer's address and port
		return
	}
	if isHandshake(b) {
		c.answerHandshake(b)
		return
	}
	c.mu.Lock()
	c.ep.HandlePacket(now, b)
	c.afterEngineLocked()
	c.noteSizeLocked(now)
	c.mu.Unlock()
	c.obs.flush()
}

// answerHandshake re-sends the handshake answer that made this connection (listener side): to a
// repeated connection request (b == nil, spec §3.2 "duplicate check"), or to a request addressed
// to our own socket ID with request type > 0 (spec §3.2, last bullet). Answers to our own requests
// that arrive after the connection is up are ignored (client side).
func (c *Conn) answerHandshake(b []byte) {
	if c.hsReply == nil {
		return
	}
	if b != nil {
		var hs packet.Handshake
		if hs.Decode(b) != nil || !c.answers(hs.ReqType) {
			return
		}
	}
	c.mux.writeTo(c.hsReply, c.peer, c.raddr)
}

// dataFlow is the connection as the data pacer sees it.
type dataFlow struct{ c *Conn }

// Release sends the data packets due at now; runs on the data pacer goroutine.
func (f *dataFlow) Release(now time.Time, max int) (int, time.Time) {
	c := f.c
	c.mu.Lock()
	size := c.ep.PacketSize()
	bufs := c.mux.carve(size, min(max, len(c.mux.sendBufs)))
	n, next := c.ep.Release(now, bufs)
	probe, probing := c.ep.ProbeSeq()
	c.depAt = next
	c.afterEngineLocked()
	next = c.depAt
	c.mu.Unlock()
	if n > 0 {
		c.sendPackets(bufs[:n], size, probe, probing)
	}
	return n, next
}

// timerFlow is the connection as the timer pacer sees it.
type timerFlow struct{ c *Conn }

// Release runs the connection's due timers (ACK, NAK, EXP); runs on the timer goroutine.
func (f *timerFlow) Release(now time.Time, _ int) (int, time.Time) {
	c := f.c
	c.mu.Lock()
	c.ep.OnTimer(now)
	c.timerAt = c.ep.NextTimer()
	c.afterEngineLocked()
	next := c.timerAt
	c.observeDrops(now, false)
	c.noteSizeLocked(now)
	c.mu.Unlock()
	c.obs.flush()
	if c.mux.reportsPending.Load() {
		c.mux.drainReports()
	}
	return 0, next
}

// Read reads stream bytes in order (in message mode: one message, see ReadMessage). It blocks
// until data arrives, the read deadline passes (os.ErrDeadlineExceeded), the peer shuts down and
// all its data has been read (bare io.EOF),
// the connection breaks (ErrPeerIdle or a socket error), or Close is called (net.ErrClosed).
// Errors other than io.EOF come inside a *net.OpError.
func (c *Conn) Read(b []byte) (int, error) {
	if c.cfg.MessageMode {
		return c.readMessage("read", b)
	}
	for {
		c.mu.Lock()
		if c.closed { // before the deadline: use after Close is net.ErrClosed, as in package net
			c.mu.Unlock()
			return 0, c.opErr("read", net.ErrClosed)
		}
		if isClosed(c.rdl.done()) {
			c.mu.Unlock()
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		n, err := c.ep.Read(b)
		if n > 0 || err != nil {
			c.afterEngineLocked()
			c.mu.Unlock()
			if err != nil && err != io.EOF { // io.EOF stays bare, as io.Reader users expect
				err = c.opErr("read", connError(err))
			}
			return n, err
		}
		if len(b) == 0 {
			c.mu.Unlock()
			return 0, nil
		}
		dead := c.deadErr
		c.mu.Unlock()
		if dead != nil {
			return 0, c.opErr("read", dead)
		}
		select {
		case <-c.readable:
		case <-c.rdl.done():
		case <-c.closing:
		case <-c.dead:
		}
	}
}

// Write writes b to the stream (in message mode: as one message that never expires and is
// delivered in order, see WriteMessage). It blocks while the send buffer is full (flow control) and
// returns once all of b is buffered, or with the count so far when the write deadline passes
// (os.ErrDeadlineExceeded), the connection breaks, the peer shut down (ErrPeerShutdown) or Close
// is called (net.ErrClosed). Errors come inside a *net.OpError.
func (c *Conn) Write(b []byte) (int, error) {
	if c.cfg.MessageMode {
		return c.writeMessage("write", b, 0, true)
	}
	if isClosed(c.closing) {
		return 0, c.opErr("write", net.ErrClosed)
	}
	select {
	case c.wsem <- struct{}{}:
	case <-c.wdl.done():
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	case <-c.closing:
		return 0, c.opErr("write", net.ErrClosed)
	}
	defer func() { <-c.wsem }()
	sent := 0
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return sent, c.opErr("write", net.ErrClosed)
		}
		if isClosed(c.wdl.done()) {
			c.mu.Unlock()
			return sent, c.opErr("write", os.ErrDeadlineExceeded)
		}
		if c.deadErr != nil {
			err := c.deadErr
			c.mu.Unlock()
			return sent, c.opErr("write", err)
		}
		if c.ep.PeerClosed() {
			c.mu.Unlock()
			return sent, c.opErr("write", ErrPeerShutdown)
		}
		n := c.ep.Write(b[sent:])
		sent += n
		if n > 0 {
			c.afterEngineLocked()
		}
		c.mu.Unlock()
		if sent == len(b) {
			return sent, nil
		}
		select {
		case <-c.writable:
		case <-c.wdl.done():
		case <-c.closing:
		case <-c.dead:
		}
	}
}

// Close closes the connection. Blocked Read and Write calls return net.ErrClosed at once; Close
// itself waits up to Config.Linger for the data already written to be acknowledged (spec §3.4),
// then sends Shutdown. It is idempotent and safe for concurrent use; only the first call lingers.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.closing)
		c.linger()
		c.finish()
	})
	return nil
}

// linger waits until everything written is acknowledged, Linger passes or the connection breaks.
func (c *Conn) linger() {
	if c.cfg.Linger < 0 {
		return
	}
	t := time.NewTimer(c.cfg.Linger)
	defer t.Stop()
	for {
		c.mu.Lock()
		done := c.ep.Flushed() || c.deadErr != nil || c.ep.PeerClosed()
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-c.writable:
		case <-c.dead:
		case <-t.C:
			return
		}
	}
}

// finish sends Shutdown, unregisters the connection and releases its mux reference.
func (c *Conn) finish() {
	now := time.Now()
	c.mu.Lock()
	broken := c.deadErr != nil
	answered := c.ep.PeerClosed()
	rtt := c.ep.Stats().RTT
	if !broken {
		c.ep.Shutdown(now)
	}
	c.mu.Unlock()
	if !broken && !answered {
		c.awaitShutdownAnswer(rtt)
	}
	c.mu.Lock()
	c.observeDrops(now, true)
	c.breakLocked(net.ErrClosed)
	c.mu.Unlock()
	c.dataH.Remove()
	c.timerH.Remove()
	c.rdl.stop()
	c.wdl.stop()
	c.mux.unregister(c)
	if c.onClose != nil {
		c.onClose()
	}
	if !broken {
		c.mux.bury(c.id, tomb{peer: c.peer, peerID: c.peerID, expires: now.Add(tombLife)})
	}
	c.mux.release()
	c.obs.close()
}

// Shutdown retries: the reference sends one Shutdown and never repeats it (spec §3.4), so a
// lost one leaves the peer waiting for its idle timeout instead of reading io.EOF. A peer of
// ours answers every Shutdown with its own; Close re-sends until that answer arrives, at most
// shutdownTries times, max(2·RTT, shutdownGap) apart (a UDT4 peer never answers: its Close
// costs the whole bound, ~0.2 s on a LAN).
const (
	shutdownTries = 8
	shutdownGap   = 20 * time.Millisecond
)

// awaitShutdownAnswer re-sends Shutdown until the peer's own Shutdown arrives or the tries run out.
func (c *Conn) awaitShutdownAnswer(rtt time.Duration) {
	gap := max(2*rtt, shutdownGap)
	t := time.NewTimer(gap)
	defer t.Stop()
	var pkt [headerSize + 4]byte
	for tries := 0; tries < shutdownTries; {
		select {
		case <-c.readable: // the engine signals readable when the peer's Shutdown arrives
		case <-t.C:
			tries++
			c.mux.writeTo(encodeShutdown(pkt[:], c.peerID), c.peer, c.raddr)
			t.Reset(gap)
		}
		c.mu.Lock()
		done := c.ep.PeerClosed() || c.ep.Err() != nil
		c.mu.Unlock()
		if done {
			return
		}
	}
}

// LocalAddr returns the local UDP address.
func (c *Conn) LocalAddr() net.Addr { return c.mux.local }

// RemoteAddr returns the peer's UDP address (a *net.UDPAddr).
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets the read and write deadlines (see net.Conn). A zero t disarms them.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

// SetReadDeadline sets the deadline for pending and future Reads.
func (c *Conn) SetReadDeadline(t time.Time) error { c.rdl.set(t); return nil }

// SetWriteDeadline sets the deadline for pending and future Writes.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wdl.set(t); return nil }

func (c *Conn) opErr(op string, err error) error {
	return opError(op, c.mux.local, c.raddr, err)
}

var _ net.Conn = (*Conn)(nil)
