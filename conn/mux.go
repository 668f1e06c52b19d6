package conn

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udtgo/udt/internal/udpio"
	"github.com/udtgo/udt/pacer"
)

// sendBatch is the most data packets one pacer call releases for one connection, sent as one
// GSO batch: pacer.MaxBurst (the burst rule is the pacer's; each connection's catch-up credit is
// pacer.BurstFor its rate).
const sendBatch = pacer.MaxBurst

// mux is UDT's multiplexer (spec §3.1): one UDP socket shared by at most one Listener and any
// number of connections, which it tells apart by destination socket ID. It owns three goroutines
// — the reader, the data pacer and the timer goroutine, which runs the timers of connections
// whose runtime timer fired (timers.go) — and the socket if it opened it. It lives
// while anything uses it (refs) and tears everything down when the last user goes.
type mux struct {
	pc    net.PacketConn
	udp   addrPortConn // pc's allocation-free I/O methods, when it has them (*net.UDPConn, simnet)
	io    *udpio.Conn  // batched I/O on pc: GRO/recvmmsg reads, GSO/sendmmsg writes where available
	ownPC bool         // the mux opened pc and closes it
	local net.Addr

	waiter    pacer.Waiter // the data pacer's backend
	pacerName string       // its name
	send      *pacer.Pacer // releases data packets at their departure times

	// sendScratch holds the packets of one release by the data pacer goroutine, which alone
	// uses it (allocated on the first data packet); sendOut is its outbox; scratches holds
	// *sendScratch for direct sends by other goroutines.
	sendScratch *sendScratch
	sendOut     outbox
	scratches   sync.Pool
	pktSize     int         // the largest datagram: MSS−28 bytes
	timers      *timerQueue // connections whose timer fired, for the timer goroutine
	df          bool        // datagrams leave with Don't Fragment: path MTU discovery is on (pmtu.go)

	mu       sync.RWMutex
	conns    map[uint32]*Conn           // established connections by local socket ID
	byPeer   map[peerAddrID]*Conn       // the same by peer address and socket ID (ICMP reports: connTo)
	dialers  map[uint32]*dialer         // handshakes in progress by local socket ID
	rdv      map[netip.AddrPort]*dialer // rendezvous in progress by peer address (rendezvous.go)
	tombs    map[uint32]tomb            // recently closed connections, answered with Shutdown
	listener *Listener
	refs     int
	closed   bool

	readerDone chan struct{}
	deadErr    error       // set before readerDone closes when the socket failed under us
	failing    atomic.Bool // the reader goroutine is exiting after a socket failure

	// reportsPending: a write failed with an error that means the kernel queued an ICMP report
	// (icmp.go); the next goroutine free of connection locks drains them.
	reportsPending atomic.Bool
	reportsOK      bool        // the socket has reports (EnableReports), set before the reader starts
	reportsBack    *time.Timer // turns reports back on after a flood (reportflood.go); guarded by mu

	drops     muxDrops
	sockDrops socketDrops // the kernel's drops at the socket (ovfl.go)
	obs       observer    // Config.Logger of the socket's first user (observe.go)
}

// addrPortConn is the allocation-free half of *net.UDPConn's API.
type addrPortConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// tomb remembers a closed connection for a while so that a peer still talking to it gets Shutdown.
type tomb struct {
	peer    netip.AddrPort
	peerID  uint32
	expires time.Time
}

// tombLife is how long a closed connection's ID keeps answering its peer with Shutdown.
const tombLife = 5 * time.Second

// muxDrops counts datagrams the multiplexer dropped, by reason.
type muxDrops struct {
	short       atomic.Uint64 // shorter than a UDT header
	oversized   atomic.Uint64 // longer than this socket's packet size (MSS−28)
	unknownDest atomic.Uint64 // destination socket ID not on this socket
	noListener  atomic.Uint64 // handshake to ID 0 with no Listener
}

// newMux starts a multiplexer on pc with the pacer backend cfg.Pacer.
func newMux(pc net.PacketConn, own bool, cfg *Config) (*mux, error) {
	w, err := pacer.NewWaiter(cfg.Pacer)
	if err != nil {
		if own {
			pc.Close()
		}
		return nil, err
	}
	m := &mux{
		pc:         pc,
		ownPC:      own,
		local:      pc.LocalAddr(),
		waiter:     w,
		pacerName:  cfg.Pacer,
		send:       pacer.New(w, pacer.Config{Burst: sendBatch, Tolerance: cfg.PacingTolerance}),
		conns:      make(map[uint32]*Conn),
		byPeer:     make(map[peerAddrID]*Conn),
		dialers:    make(map[uint32]*dialer),
		rdv:        make(map[netip.AddrPort]*dialer),
		tombs:      make(map[uint32]tomb),
		readerDone: make(chan struct{}),
	}
	m.udp, _ = pc.(addrPortConn)
	m.obs.initLog(cfg.Logger, "local", m.local)
	if cfg.noGRO {
		m.io = udpio.NewLazyGRO(pc)
	} else {
		m.io = udpio.New(pc)
	}
	m.reportsOK = m.io.EnableReports() // ICMP errors: icmp.go
	m.df = m.io.EnableDontFragment()   // path MTU discovery: pmtu.go
	pktSize := cfg.MSS - udpIPOverhead
	m.pktSize = pktSize
	m.scratches.New = func() any { return newSendScratch() }
	m.timers = newTimerQueue()
	go m.timers.run(m)
	if u, ok := pc.(*net.UDPConn); ok && own {
		setSocketBuffers(u, cfg)
	}
	m.initDrops()
	batch := readBatch
	if cfg.noGRO {
		batch = firstReadBatch // a socket of its own: one connection, which may never bulk-receive
	}
	go m.readLoop(pktSize, batch)
	return m, nil
}

// pacingTolerance is the data pacer's tolerance (the socket's first user's, see
// Config.PacingTolerance) as a stream.Config value: pacer.Exact for none.
func (m *mux) pacingTolerance() time.Duration {
	if t := m.send.Tolerance(); t > 0 {
		return t
	}
	return pacer.Exact
}

func closeWaiter(w pacer.Waiter) {
	if c, ok := w.(io.Closer); ok {
		c.Close()
	}
}

// setSocketBuffers asks for large kernel socket buffers (spec §3.1: UDT sets UDP_RCVBUF to 8192·MSS);
// the kernel clamps them to its limits, which is fine. Only for sockets the multiplexer opened
// itself (Listen, Dial): a caller's socket keeps the sizes its owner chose.
func setSocketBuffers(u *net.UDPConn, cfg *Config) {
	u.SetReadBuffer(max(cfg.RecvBuffer, 4<<20))
	u.SetWriteBuffer(4 << 20)
}

// acquire adds a user; it fails once the mux is torn down.
func (m *mux) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.refs++
	return true
}

// release drops a user and tears the mux down when it was the last.
func (m *mux) release() {
	m.mu.Lock()
	m.refs--
	last := m.refs == 0 && !m.closed
	if last {
		m.closed = true
	}
	m.mu.Unlock()
	if last {
		m.teardown()
	}
}

func (m *mux) teardown() {
	m.mu.Lock()
	if m.reportsBack != nil {
		m.reportsBack.Stop()
	}
	m.mu.Unlock()
	m.send.Close()
	closeWaiter(m.waiter)
	if m.ownPC {
		m.pc.Close() // also ends a timer-goroutine write blocked on a full socket
	} else {
		// A caller's socket stays open: unblock our reader with a past deadline, then restore.
		m.pc.SetReadDeadline(time.Unix(1, 0))
	}
	m.timers.close()
	if m.obs.log != nil {
		m.obs.wait()
	}
	if m.failing.Load() {
		// The reader is exiting on its own, and may be the goroutine running this teardown
		// (fail → Listener.shutdown → release): waiting for it here would deadlock.
		return
	}
	<-m.readerDone
	if !m.ownPC {
		m.pc.SetReadDeadline(time.Time{})
	}
}

// newID picks an unused random socket ID in [1, 2^31−1] (the reference uses a predictable
// decreasing counter, spec §3.1 and §8). Caller holds m.mu.
func (m *mux) newIDLocked() uint32 {
	var b [4]byte
	for {
		rand.Read(b[:])
		id := binary.BigEndian.Uint32(b[:]) & 0x7fffffff
		if id == 0 {
			continue
		}
		if _, ok := m.conns[id]; ok {
			continue
		}
		if _, ok := m.dialers[id]; ok {
			continue
		}
		if _, ok := m.tombs[id]; ok {
			continue
		}
		return id
	}
}

// randomISN returns a random 31-bit initial sequence number from crypto/rand.
var newISN = randomISN // replaced by tests that need a given ISN

func randomISN() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:]) & 0x7fffffff
}

// readBatch is how many datagrams one read may return (GRO segments or recvmmsg slots).
const readBatch = 64

func (m *mux) readLoop(pktSize, batch int) {
	defer close(m.readerDone)
	msgs := readSlots(pktSize, batch)
	var rs readScratch
	var flood reportFlood
	failures := 0
	for {
		n, err := m.io.ReadBatch(msgs)
		if err != nil {
			m.mu.RLock()
			closed := m.closed
			m.mu.RUnlock()
			if closed {
				return
			}
			if !isTransient(err) {
				m.fail(err)
				return
			}
			if now := time.Now(); isReportErr(err) && m.reportsOK && flood.on(now) {
				// An ICMP message's error, which the kernel sets as the socket's pending error
				// and hands to the next read ahead of the datagrams queued (even when the
				// report itself found no room in the error queue), not the socket's: read on
				// at once. Each such error is a new ICMP message (reading it clears it), so a
				// flood of them costs us no more than a flood of datagrams; counted as failures
				// they made the reader sleep and starved every connection on the socket. Where
				// that does not hold (no reports, or turned off) it counts as a failure.
				flood.note(m, now, max(m.drainReports(), 1))
				continue
			}
			// A transient error (ENOBUFS) is retried; one that keeps coming back is retried
			// with a growing pause instead of a busy loop.
			if failures++; failures > 8 {
				time.Sleep(time.Duration(min(failures, 100)) * time.Millisecond)
			}
			continue
		}
		failures = 0
		now := time.Now()
		m.checkDrops(now) // ovfl.go: at most a syscall per second
		flood.read(now)
		if m.reportsPending.Load() {
			m.drainReports()
		}
		m.dispatchBatch(msgs[:n], &rs)
		if n == len(msgs) && n < readBatch {
			msgs = readSlots(pktSize, min(4*n, readBatch)) // the socket is busy: read more at a time
		}
	}
}

// firstReadBatch is the read batch a socket of one connection starts with (Dial, Rendezvous): its
// slots are 4 × 1.5 KB instead of readBatch's 94 KB, allocated anew with every Dial, and it grows
// by ×4 to readBatch as soon as a read fills it.
const firstReadBatch = 4

// readSlots returns n receive slots in one arena. Each slot holds one byte more than the largest
// packet we accept, so that an oversized datagram shows as truncated instead of passing as a
// full one.
func readSlots(pktSize, n int) []udpio.Message {
	msgs := make([]udpio.Message, n)
	arena := make([]byte, n*(pktSize+1))
	for i := range msgs {
		msgs[i].Buf = arena[i*(pktSize+1) : (i+1)*(pktSize+1) : (i+1)*(pktSize+1)]
	}
	return msgs
}

// readScratch is the reader goroutine's per-read state.
type readScratch struct {
	owners [readBatch]*Conn // the established connection each datagram is for, if any
	kind   [readBatch]uint8 // for the others: otherDatagram or oversizedDatagram
	out    outbox           // what the batch's engine calls produced, sent after it
}

// Kinds of datagrams dispatchBatch does not hand to a connection in a batch.
const (
	otherDatagram     = 1 + iota // for the listener, a dialer, a tomb or nobody (dispatch)
	oversizedDatagram            // longer than this socket's packet size: dropped
)

// dispatchBatch hands the datagrams of one read to their connections, dialers or listener (spec
// §3.1): each connection's datagrams in one engine batch under one hold of its lock (in arrival
// order), the rest one by one. The control packets the engines produce leave after the whole
// batch, grouped by destination.
func (m *mux) dispatchBatch(msgs []udpio.Message, rs *readScratch) {
	owners, kind := rs.owners[:len(msgs)], rs.kind[:len(msgs)]
	m.mu.RLock()
	for i := range msgs {
		msg := &msgs[i]
		owners[i], kind[i] = nil, otherDatagram
		switch {
		case msg.Truncated:
			kind[i] = oversizedDatagram
		case msg.N >= headerSize: // shorter ones: dispatch drops them
			if dst := binary.BigEndian.Uint32(msg.Data[12:16]); dst != 0 {
				if owners[i] = m.conns[dst]; owners[i] != nil {
					kind[i] = 0 // its connection's handleBatch takes it
				}
			}
		}
	}
	m.mu.RUnlock()
	for i := range msgs {
		msg := &msgs[i]
		switch {
		case owners[i] != nil:
			owners[i].handleBatch(msgs, owners, i, rs)
		case kind[i] == oversizedDatagram:
			m.drops.oversized.Add(1)
			m.logDrop(reasonOversized)
		case kind[i] == otherDatagram:
			m.dispatch(msg.Data, msg.Addr, arrivalTime(msg), rs)
		}
		kind[i] = 0
	}
	rs.out.flush(m.io)
	clear(owners)
}

// writeTo sends one datagram; a send error is not fatal (the packet counts as lost). It may run
// under a connection's lock, so a report error only marks reports pending (see writeOnce).
func (m *mux) writeTo(b []byte, to netip.AddrPort, toAddr net.Addr) error {
	err := m.writeOnce(b, to, toAddr)
	for range reportRetries {
		if !refusedByReport(err) {
			break
		}
		// The error was an earlier datagram's ICMP report, delivered to this write, which
		// therefore did not send: send it again.
		m.reportsPending.Store(true)
		err = m.writeOnce(b, to, toAddr)
	}
	return err
}

func (m *mux) writeOnce(b []byte, to netip.AddrPort, toAddr net.Addr) error {
	var err error
	if m.udp != nil {
		_, err = m.udp.WriteToUDPAddrPort(b, to)
	} else {
		_, err = m.pc.WriteTo(b, toAddr)
	}
	return err
}

// fail marks every user broken after the socket failed under us (e.g. a caller closed it).
func (m *mux) fail(err error) {
	m.failing.Store(true)
	m.mu.Lock()
	m.deadErr = err
	conns := make([]*Conn, 0, len(m.conns))
	for _, c := range m.conns {
		conns = append(conns, c)
	}
	dialers := make([]*dialer, 0, len(m.dialers))
	for _, d := range m.dialers {
		dialers = append(dialers, d)
	}
	l := m.listener
	m.mu.Unlock()
	for _, c := range conns {
		c.breakWith(err)
	}
	for _, d := range dialers {
		d.fail(err)
	}
	if l != nil {
		l.breakWith(err)
	}
	m.obs.recordNow(slog.LevelError, "socket failed", slog.String("error", err.Error()),
		slog.Int("connections", len(conns)), slog.Bool("listener", l != nil))
	m.obs.flush()
}

// dispatch hands one datagram to its connection, dialer or listener (spec §3.1), with the
// reader's scratch.
func (m *mux) dispatch(b []byte, from netip.AddrPort, now time.Time, rs *readScratch) {
	if len(b) < headerSize {
		m.drops.short.Add(1)
		m.logDrop(reasonShort)
		return
	}
	dst := binary.BigEndian.Uint32(b[12:16])
	m.mu.RLock()
	if dst == 0 {
		if d := m.rendezvousFor(b, from); d != nil {
			m.mu.RUnlock()
			d.handleDatagram(b, from)
			return
		}
		if c := m.rendezvousConnFor(b, from); c != nil {
			m.mu.RUnlock()
			c.answerHandshake(b)
			return
		}
		l := m.listener
		m.mu.RUnlock()
		if l == nil {
			m.drops.noListener.Add(1)
			m.logDrop(reasonNoListener)
			return
		}
		l.handleHandshake(b, from, now)
		return
	}
	c := m.conns[dst]
	var d *dialer
	if c == nil {
		d = m.dialers[dst]
	}
	m.mu.RUnlock()
	switch {
	case c != nil:
		c.handleDatagram(b, from, now, rs)
	case d != nil:
		d.handleDatagram(b, from)
	default:
		m.answerTomb(dst, b, from, now)
	}
}

// answerTomb answers a packet to a recently closed connection with Shutdown, so that a peer whose
// copy of our Shutdown was lost learns of the close without waiting for its idle timeout.
func (m *mux) answerTomb(dst uint32, b []byte, from netip.AddrPort, now time.Time) {
	m.mu.Lock()
	t, ok := m.tombs[dst]
	if ok && now.After(t.expires) {
		delete(m.tombs, dst)
		ok = false
	}
	m.mu.Unlock()
	if !ok || t.peer != from || isShutdown(b) {
		m.drops.unknownDest.Add(1)
		m.logDrop(reasonUnknownDest)
		return
	}
	var pkt [headerSize + 4]byte
	m.writeTo(encodeShutdown(pkt[:], t.peerID), from, net.UDPAddrFromAddrPort(from))
}

// bury keeps a closed connection's ID answering its peer with Shutdown for tombLife, and prunes
// expired tombs.
func (m *mux) bury(id uint32, t tomb) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.tombs {
		if t.expires.Sub(v.expires) > tombLife {
			delete(m.tombs, k)
		}
	}
	if !m.closed {
		m.tombs[id] = t
	}
}

func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// addrPortOf converts a PacketConn's address to a comparable netip.AddrPort.
func addrPortOf(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.UDPAddr:
		return unmapAddrPort(a.AddrPort())
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.AddrPort{}
		}
		return unmapAddrPort(ap)
	}
}

// isTransient reports whether a read error leaves the socket usable: an ICMP-triggered
// ECONNREFUSED or EHOSTUNREACH, ENOBUFS, a truncated datagram on some systems. A closed socket or
// an expired read deadline (which only teardown sets) is not transient.
func isTransient(err error) bool {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	var se *os.SyscallError
	return errors.As(err, &se)
}

// newRegisteredConn creates an established connection with a fresh socket ID and makes it
// reachable. The caller has acquired a mux reference for it.
func (m *mux) newRegisteredConn(cfg *Config, p connParams, now time.Time) *Conn {
	m.mu.Lock()
	p.id = m.newIDLocked()
	m.conns[p.id] = nil // reserve the ID; dispatch treats nil as unknown
	m.mu.Unlock()
	c := newConn(m, cfg, p, now)
	m.mu.Lock()
	m.conns[p.id] = c
	m.byPeer[peerAddrID{c.peer, c.peerID}] = c
	m.mu.Unlock()
	return c
}

// newRegisteredConnFromDialer turns the dialer registered under p.id into an established
// connection, keeping the dialer's mux reference.
func (m *mux) newRegisteredConnFromDialer(cfg *Config, p connParams, now time.Time) *Conn {
	c := newConn(m, cfg, p, now)
	m.mu.Lock()
	delete(m.dialers, p.id)
	m.conns[p.id] = c
	m.byPeer[peerAddrID{c.peer, c.peerID}] = c
	m.mu.Unlock()
	return c
}

// unregister makes c unreachable.
func (m *mux) unregister(c *Conn) {
	m.mu.Lock()
	if m.conns[c.id] == c {
		delete(m.conns, c.id)
	}
	if k := (peerAddrID{c.peer, c.peerID}); m.byPeer[k] == c {
		delete(m.byPeer, k)
	}
	m.mu.Unlock()
}

// peerAddrID names a connection by its peer: address and socket ID.
type peerAddrID struct {
	addr netip.AddrPort
	id   uint32
}
