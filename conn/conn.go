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
	"github.com/udtgo/udt/internal/udpio"
	"github.com/udtgo/udt/pacer"
)

// Conn is one UDT connection: a reliable, ordered byte stream (UDT STREAM socket type), or
// with Config.MessageMode whole messages (UDT DGRAM; see WriteMessage). It
// implements net.Conn; all methods are safe for concurrent use. Dial, a Listener or Rendezvous
// makes one; Close ends it (see Close for what happens to unsent data), and Stats reports on it.
type Conn struct {
	// Locking: mu serialises the engine (package internal/stream, which is not safe for
	// concurrent use). Nothing blocks and no system call is made while it is held: every engine
	// call is followed by pullLocked, which takes what the call produced, and the caller then
	// unlocks and does it (apply; effects.go). The copies under mu are bounded: a Write or Read
	// step copies at most lockChunk bytes, and so does one of a message call (a larger message
	// is reserved in the send buffer, or pinned in the receive buffer, and copied lockChunk bytes
	// per hold: message.go), a release the headers of at most sendBatch packets (their payloads
	// stay in the send buffer) and at most 256 KiB of a re-cut after a packet size change
	// (stream's recutChunk), a reader batch at most readBatch datagrams.

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
	onClose    func() // set by the Listener that made the connection, run once by finish

	localOnce sync.Once
	local     net.Addr // LocalAddr's answer, found on its first call

	mu        sync.Mutex // guards ep and the fields below
	ep        *stream.Endpoint
	closed    bool   // Close was called
	finishing bool   // the engine is Done: the timer's goroutine finishes the connection
	settled   bool   // the close's outcome is known: closeErr
	closeErr  error  // nil: everything written was acknowledged (see CloseContext)
	timerGen  uint64 // ranks pulls, for arm

	sending atomic.Bool // a goroutine is between Release and the write of its packets

	dataFlow dataFlow
	dataH    *pacer.Handle // the data pacer's queue holds the engine's next departure

	timer       *time.Timer // runs onTimer at the engine's NextTimer (time.AfterFunc)
	timerQueued atomic.Bool // on the socket's timer queue (timers.go)
	armMu       sync.Mutex  // guards armedGen, armedAt and timer changes
	armedGen    uint64      // rank of the pull whose time the timer holds
	armedAt     time.Time   // the time the timer is set to (zero: stopped or fired)

	readable chan struct{} // 1-buffered: something for Read may have changed
	writable chan struct{} // 1-buffered: something for Write may have changed
	closing  chan struct{} // closed by Close
	finished chan struct{} // closed when finish is over: the connection is forgotten
	dead     chan struct{} // closed when the connection broke (deadErr says why)
	deadOnce sync.Once
	deadErr  error
	wsem     chan struct{} // serialises Writes; a channel so that waiting honours deadlines

	closeOnce  sync.Once
	finishOnce sync.Once
	rdl, wdl   *deadline

	foreignDrops atomic.Uint64 // datagrams for our ID from another address

	obs observer // Config.Logger and Config.Tracer (observe.go)

	// Packet-size changes already noted (pmtu.go); guarded by mu.
	sizeChanges uint64
	loggedSize  int

	readPin  chan struct{} // guarded by mu: a message is being read in parts; closed when done (message.go)
	holdHook func()        // tests: run after each hold of the message calls, without mu (unlock)
}

// lockChunk is the most bytes a Write, Read or message call copies per hold of the connection's
// lock: about 25 µs of memmove, so the socket's reader and pacer, which take the lock once per
// batch, never wait on an application's copy for longer than one batch of their own takes.
const lockChunk = 256 << 10

// unlock releases c.mu after a hold of the message calls, then runs holdHook if a test set one
// (it counts the bytes copied per hold, and may interrupt the call: Close).
func (c *Conn) unlock() {
	c.mu.Unlock()
	if c.holdHook != nil {
		c.holdHook()
	}
}

// connParams are what the handshake settled.
type connParams struct {
	id, peerID     uint32
	isn, peerISN   uint32
	mss            int
	peerFlowWindow int
	handshakeRTT   time.Duration // Dial's handshake round trip, 0 if unknown (congestion.Params.RTT)
	peer           netip.AddrPort
	server         bool   // accepted by a Listener
	rendezvous     bool   // made by Rendezvous (Conn.rendezvous)
	hsReply        []byte // the handshake answer, set before the connection is reachable (Conn.hsReply)
}

// newConn builds an established connection on m and registers it for dispatch.
// The caller holds a mux reference for it (released by finish).
func newConn(m *mux, cfg *Config, p connParams, now time.Time) *Conn {
	c := &Conn{
		mux:        m,
		cfg:        *cfg,
		id:         p.id,
		peerID:     p.peerID,
		peer:       p.peer,
		raddr:      net.UDPAddrFromAddrPort(p.peer),
		isn:        p.isn,
		mss:        p.mss,
		hsReply:    p.hsReply,
		rendezvous: p.rendezvous,
		readable:   make(chan struct{}, 1),
		writable:   make(chan struct{}, 1),
		closing:    make(chan struct{}),
		finished:   make(chan struct{}),
		dead:       make(chan struct{}),
		wsem:       make(chan struct{}, 1),
		rdl:        newDeadline(),
		wdl:        newDeadline(),
	}
	c.dataFlow.c = c
	c.timer = time.AfterFunc(time.Hour, c.onTimer)
	c.timer.Stop()
	var ctl congestion.Controller = cfg.Congestion()
	if ctl == nil { // a factory with nothing to offer gets the default, not no control at all
		ctl = congestion.BBRFactory()()
	}
	c.obs.init(cfg, c.traceInfo(ctl, p, now))
	engineTracer, tracePackets := c.obs.engineTracer()
	c.ep = stream.New(stream.Config{
		LocalID:         p.id,
		PeerID:          p.peerID,
		ISN:             p.isn,
		PeerISN:         p.peerISN,
		MSS:             p.mss,
		PeerFlowWindow:  p.peerFlowWindow,
		HandshakeRTT:    p.handshakeRTT,
		SendBuffer:      cfg.SendBuffer,
		RecvBuffer:      cfg.RecvBuffer / payloadSize(p.mss),
		Controller:      ctl,
		MaxBandwidth:    cfg.MaxBandwidth,
		IdleTimeout:     cfg.IdleTimeout,
		StrictPacing:    cfg.StrictPacing,
		Messages:        cfg.MessageMode,
		PathMTU:         m.pathMTUConfig(p.mss),
		Start:           now,
		Tracer:          engineTracer,
		TracePackets:    tracePackets,
		PacingTolerance: m.pacingTolerance(), // the data pacer's (the socket's first user's)
	}, now)
	c.loggedSize = c.ep.PacketSize()
	c.observeEstablished(ctl, m)
	c.dataH = m.send.Add(&c.dataFlow)
	c.mu.Lock()
	fx := c.pullLocked(via{})
	c.mu.Unlock()
	c.apply(&fx)
	return c
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

// breakWith breaks the connection and its engine after the socket failed under it.
func (c *Conn) breakWith(err error) {
	c.mu.Lock()
	c.breakLocked(err)
	c.ep.Fail(err)
	fx := c.pullLocked(via{})
	c.mu.Unlock()
	c.apply(&fx)
}

// handleBatch is the reader goroutine's entry for the datagrams of one read that are addressed to
// this connection: msgs[i] for every i ≥ first with owners[i] == c (it clears those entries). It
// takes the lock once for all of them; the control packets they produce go into the reader's
// outbox, sent after the whole read, and data they make due (an ACK opened the window, a NAK
// asked for a retransmission) leaves from the reader at once.
func (c *Conn) handleBatch(msgs []udpio.Message, owners []*Conn, first int, rs *readScratch) {
	c.mu.Lock()
	for i := first; i < len(msgs); i++ {
		if owners[i] != c {
			continue
		}
		owners[i] = nil
		m := &msgs[i]
		c.handleLocked(m.Data, m.Addr, arrivalTime(m), &rs.out)
	}
	fx := c.pullLocked(via{ob: &rs.out})
	c.mu.Unlock()
	c.apply(&fx)
}

// handleDatagram is handleBatch for one datagram (one that arrived in the same read as the
// handshake that made its connection).
func (c *Conn) handleDatagram(b []byte, from netip.AddrPort, now time.Time, rs *readScratch) {
	c.mu.Lock()
	c.handleLocked(b, from, now, &rs.out)
	fx := c.pullLocked(via{ob: &rs.out})
	c.mu.Unlock()
	c.apply(&fx)
}

// handleOne is handleDatagram for a goroutine other than the reader (Rendezvous's early datagram).
func (c *Conn) handleOne(b []byte, from netip.AddrPort, now time.Time) {
	ob := outboxes.Get().(*outbox)
	c.mu.Lock()
	c.handleLocked(b, from, now, ob)
	fx := c.pullLocked(via{ob: ob})
	c.mu.Unlock()
	c.apply(&fx)
	flushPooled(ob, c.mux.io)
}

// handleLocked hands one datagram to the engine, or answers a repeated handshake. Caller holds c.mu.
func (c *Conn) handleLocked(b []byte, from netip.AddrPort, now time.Time, ob *outbox) {
	if from != c.peer {
		c.foreignDrops.Add(1) // spec §3.1: the source must be the peer's address and port
		return
	}
	if isHandshake(b) {
		if r := c.handshakeAnswer(b); r != nil {
			ob.add(r, c.peer)
		}
		return
	}
	c.ep.HandlePacket(now, b)
}

// arrivalTime is when m arrived. The receiver's arrival-speed and packet-pair estimators (spec
// §6) need each packet's arrival time, not the time the reader got to it: datagrams that queued
// in the socket while the reader was descheduled would look back to back and inflate both
// estimates. So it is the kernel's receive stamp (udpio, SO_TIMESTAMPNS) where there is one; the
// segments of one GRO run share it, and internal/arrival treats such same-time arrivals as
// unknown spacing. Elsewhere the clock is read per packet.
func arrivalTime(m *udpio.Message) time.Time {
	if !m.Time.IsZero() {
		return m.Time
	}
	return time.Now()
}

// handshakeAnswer returns the handshake answer that made this connection (listener side) if b
// calls for it: a repeated connection request (b == nil, spec §3.2 "duplicate check"), or a
// request addressed to our own socket ID with request type > 0 (spec §3.2, last bullet). Answers
// to our own requests that arrive after the connection is up are ignored (client side).
func (c *Conn) handshakeAnswer(b []byte) []byte {
	if c.hsReply == nil {
		return nil
	}
	if b != nil {
		var hs packet.Handshake
		if hs.Decode(b) != nil || !c.answers(hs.ReqType) {
			return nil
		}
	}
	return c.hsReply
}

// answerHandshake sends the handshake answer for a repeated request now (the Listener's path;
// it holds no connection lock).
func (c *Conn) answerHandshake(b []byte) {
	if r := c.handshakeAnswer(b); r != nil {
		c.mux.writeTo(r, c.peer, c.raddr)
	}
}

// dataFlow is the connection as the data pacer sees it.
type dataFlow struct{ c *Conn }

// Release sends the data packets due at now; runs on the data pacer goroutine. The packets are
// encoded under the lock (headers into the pacer's scratch, payloads pinned in the send buffer)
// and written after it. If another goroutine is sending for the connection, it returns idle:
// that goroutine schedules what is left when done.
func (f *dataFlow) Release(now time.Time, max int) (int, time.Time) {
	c := f.c
	m := c.mux
	if !c.sending.CompareAndSwap(false, true) {
		return 0, time.Time{}
	}
	if m.sendScratch == nil { // the first data packet of the socket
		m.sendScratch = newSendScratch()
	}
	sb := m.sendScratch
	c.mu.Lock()
	size := c.ep.PacketSize()
	n, next := c.ep.ReleaseViews(now, sb.hdrs[:min(max, len(sb.hdrs))], sb.pays)
	probe, probing := c.ep.ProbeSeq()
	fx := c.pullLocked(via{ob: &m.sendOut, noSend: true})
	c.mu.Unlock()
	m.sendOut.flush(m.io) // normally empty: Release queues no control packet
	if n > 0 {
		c.sendPackets(sb, n, size, probe, probing)
		c.mu.Lock()
		fx.Writable = c.unpinLocked() || fx.Writable
		c.mu.Unlock()
		sb.reset(n)
	}
	c.sending.Store(false)
	fx.Departure = time.Time{} // next, returned to the pacer, is the departure
	c.apply(&fx)
	return n, next
}

// Read reads stream bytes in order (in message mode: one message, see ReadMessage). It blocks
// until data arrives, the read deadline passes (os.ErrDeadlineExceeded), the peer shuts down and
// all its data has been read (bare io.EOF; an error matching io.ErrUnexpectedEOF instead if it
// shut down with a hole in what arrived: its Linger passed or was negative, or a UDT4 peer's
// UDT_LINGER did), the connection breaks (ErrPeerIdle or a socket error), or Close is called
// (net.ErrClosed). In stream mode one call returns at most 256 KiB.
// Errors other than io.EOF come inside a *net.OpError.
func (c *Conn) Read(b []byte) (int, error) {
	if c.cfg.MessageMode {
		return c.readMessage("read", b)
	}
	if len(b) > lockChunk {
		b = b[:lockChunk]
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
			fx := c.pullLocked(via{}) // a window update may be queued
			c.mu.Unlock()
			c.apply(&fx)
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
// delivered in order, see WriteMessage). It blocks while the send buffer is full (flow control)
// and returns once all of b is buffered, or with the count so far when the write deadline passes
// (os.ErrDeadlineExceeded), the connection breaks, the peer shut down (ErrPeerShutdown) or Close
// is called (net.ErrClosed). Data buffered is not yet delivered: see Close and CloseContext.
// Errors come inside a *net.OpError.
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
		chunk := b[sent:min(len(b), sent+lockChunk)]
		n := c.ep.Write(chunk)
		sent += n
		var fx effects
		if n > 0 {
			fx = c.pullLocked(via{}) // the data, if due at once, leave from here
		}
		c.mu.Unlock()
		if n > 0 {
			c.apply(&fx)
		}
		if sent == len(b) {
			return sent, nil
		}
		if n == len(chunk) {
			continue // the chunk fit: there may be room for the next
		}
		select {
		case <-c.writable:
		case <-c.wdl.done():
		case <-c.closing:
		case <-c.dead:
		}
	}
}

// LocalAddr returns the local UDP address (a *net.UDPAddr). For a socket bound to the wildcard
// address it gives the socket's port at the source address the OS routes to the peer from, as
// net.DialUDP's LocalAddr does, found on the first call.
func (c *Conn) LocalAddr() net.Addr {
	c.localOnce.Do(func() { c.local = sourceFor(c.mux.local, c.raddr) })
	return c.local
}

// RemoteAddr returns the peer's UDP address (a *net.UDPAddr).
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets the read and write deadlines (see net.Conn). A zero t disarms them. After
// Close it returns a *net.OpError wrapping net.ErrClosed, as package net's connections do.
func (c *Conn) SetDeadline(t time.Time) error {
	if isClosed(c.closing) {
		return c.opErr("set", net.ErrClosed)
	}
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

// SetReadDeadline sets the deadline for pending and future Reads (errors as SetDeadline).
func (c *Conn) SetReadDeadline(t time.Time) error {
	if isClosed(c.closing) {
		return c.opErr("set", net.ErrClosed)
	}
	c.rdl.set(t)
	return nil
}

// SetWriteDeadline sets the deadline for pending and future Writes (errors as SetDeadline).
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if isClosed(c.closing) {
		return c.opErr("set", net.ErrClosed)
	}
	c.wdl.set(t)
	return nil
}

// opErr wraps err for op as package net does, naming the addresses LocalAddr and RemoteAddr
// report (the routed source, not a wildcard). Call it without c.mu: LocalAddr's first call on a
// wildcard socket makes a system call.
func (c *Conn) opErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return opError(op, c.LocalAddr(), c.raddr, err)
}

var _ net.Conn = (*Conn)(nil)
