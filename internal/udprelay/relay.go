// Package udprelay is a lossy UDP relay on real sockets, for tests of the transport over real
// UDP: clients send to the relay's address, the relay forwards to a fixed server and the
// server's answers back to each client, dropping, duplicating, rate-limiting (a serial link with
// a drop-tail queue), delaying, releasing in batches on a coarse tick and reordering datagrams on
// the way, and counting what it did.
//
// Each client address gets its own upstream socket (like a NAT mapping), so the server sees one
// distinct source per client and many clients can share a relay. Every goroutine (one reader
// for the client side, one per client mapping, one delay line) ends on Close.
//
// For deterministic, time-exact tests use internal/simnet under testing/synctest instead; the
// relay runs on the real clock and the real network stack.
package udprelay

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Impairment configures one direction. The zero value forwards everything at once.
// Stages apply in this order: Drop rule, Loss, Duplicate, Rate (a drop-tail queue), Delay,
// ReleaseEvery, Reorder.
type Impairment struct {
	// Drop is a rule: it sees each datagram (do not retain or modify b) and drops it when it
	// returns true; simnet.DropUDTControl(simnet.UDTNAK) drops every UDT NAK. Called with the
	// direction locked: it needs no locking of its own for state used only by this direction.
	Drop func(b []byte) bool
	// Loss is the probability in [0, 1] that a datagram is dropped; 1 blackholes the direction.
	Loss float64
	// Duplicate is the probability that a datagram is sent twice (back to back).
	Duplicate float64
	// Rate, if positive, limits the direction to Rate bit/s: datagrams leave one after another,
	// each taking (len + Overhead)·8/Rate seconds, as from a serial bottleneck link, behind a
	// drop-tail queue of QueueBytes; a datagram that does not fit is dropped (DroppedQueue).
	Rate int64
	// Overhead is added to each datagram's length for the Rate only: 28 counts the IPv4 and UDP
	// headers, as a link would. Default 0.
	Overhead int
	// QueueBytes limits the Rate's queue (the datagrams waiting and the one being sent), in
	// bytes of datagram. Default (with a Rate): 100 ms at the Rate.
	QueueBytes int
	// Delay holds every datagram this long before it is sent (a constant one-way delay).
	Delay time.Duration
	// ReleaseEvery, if positive, holds each datagram (after the Rate and the Delay) until the
	// next multiple of ReleaseEvery since the relay started, and sends those held together: a relay or
	// router that forwards on a coarse timer tick. On the real clock the release comes up to one
	// timer slack later (about a millisecond with Go's runtime timer on Linux).
	ReleaseEvery time.Duration
	// Reorder is the probability that a datagram is held back so that later ones overtake it.
	Reorder float64
	// ReorderPackets, if positive, holds a reordered datagram until that many later datagrams
	// of this direction have been sent (or ReorderDelay passes, default 100 ms, if traffic
	// stops). If zero, a reordered datagram is held for ReorderDelay instead (default 5 ms).
	ReorderPackets int
	// ReorderDelay: see ReorderPackets.
	ReorderDelay time.Duration
}

// Config configures a Relay. The zero value is a perfect relay on 127.0.0.1.
type Config struct {
	// Listen is the client-side address, default "127.0.0.1:0" ("[::1]:0" for an IPv6 server).
	// It must be loopback or in 198.18.0.0/15.
	Listen string
	// Seed seeds the random choices (two PCG streams, one per direction). Runs repeat exactly
	// only if datagrams arrive in the same order.
	Seed uint64
	// ToServer and ToClient impair each direction.
	ToServer, ToClient Impairment
	// MaxClients limits the client mappings (one socket and goroutine each); datagrams from
	// further clients are dropped and counted. Default 256.
	MaxClients int
}

// DirStats counts one direction.
type DirStats struct {
	Received, ReceivedBytes   uint64 // datagrams read
	Forwarded, ForwardedBytes uint64 // datagrams written, duplicates included
	DroppedRule               uint64 // dropped by the Drop rule
	DroppedLoss               uint64 // dropped at random
	DroppedQueue              uint64 // dropped at the Rate's full queue
	MaxQueuedBytes            int    // the Rate queue's high-water mark, bytes
	Duplicated                uint64 // extra copies sent
	Reordered                 uint64 // datagrams held back
	Errors                    uint64 // write errors (the datagram is lost) and refused clients
}

// Dropped is the number of datagrams dropped on purpose (rule, loss and the Rate's queue).
func (s DirStats) Dropped() uint64 { return s.DroppedRule + s.DroppedLoss + s.DroppedQueue }

// Stats is a Relay's counters.
type Stats struct{ ToServer, ToClient DirStats }

// Relay forwards datagrams between clients and one server. Methods are safe for concurrent use.
type Relay struct {
	server netip.AddrPort
	front  *net.UDPConn
	max    int

	toServer, toClient *direction
	delay              *delayLine

	mu       sync.Mutex
	sessions map[netip.AddrPort]*session
	closed   bool

	wg   sync.WaitGroup
	done chan struct{}
}

type session struct {
	client netip.AddrPort
	up     *net.UDPConn // connected to the server
}

// socketBuffer is the SO_RCVBUF/SO_SNDBUF the relay asks for, in bytes.
const socketBuffer = 4 << 20

var benchmarking = netip.MustParsePrefix("198.18.0.0/15")

func allowed(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || benchmarking.Contains(a)
}

// New starts a relay to server ("host:port", an IP literal on loopback or in 198.18.0.0/15).
// Clients send to Addr().
func New(server string, cfg Config) (*Relay, error) {
	srv, err := netip.ParseAddrPort(server)
	if err != nil {
		return nil, fmt.Errorf("udprelay: server address: %w", err)
	}
	srv = netip.AddrPortFrom(srv.Addr().Unmap(), srv.Port())
	if !allowed(srv.Addr()) {
		return nil, fmt.Errorf("udprelay: server %v is not loopback or 198.18.0.0/15", srv)
	}
	listen := cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
		if srv.Addr().Is6() {
			listen = "[::1]:0"
		}
	}
	la, err := netip.ParseAddrPort(listen)
	if err != nil {
		return nil, fmt.Errorf("udprelay: listen address: %w", err)
	}
	if !allowed(la.Addr()) {
		return nil, fmt.Errorf("udprelay: listen address %v is not loopback or 198.18.0.0/15", la)
	}
	front, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(la))
	if err != nil {
		return nil, err
	}
	front.SetReadBuffer(socketBuffer) // best effort: the kernel caps it at net.core.rmem_max
	front.SetWriteBuffer(socketBuffer)
	r := &Relay{
		server:   srv,
		front:    front,
		max:      cfg.MaxClients,
		sessions: make(map[netip.AddrPort]*session),
		done:     make(chan struct{}),
		toServer: newDirection(cfg.ToServer, cfg.Seed, 1),
		toClient: newDirection(cfg.ToClient, cfg.Seed, 2),
	}
	if r.max <= 0 {
		r.max = 256
	}
	r.delay = newDelayLine(r.done)
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.delay.run() }()
	go func() { defer r.wg.Done(); r.readClients() }()
	return r, nil
}

// Addr is the address clients send to.
func (r *Relay) Addr() *net.UDPAddr { return r.front.LocalAddr().(*net.UDPAddr) }

// Server is the address datagrams are forwarded to.
func (r *Relay) Server() netip.AddrPort { return r.server }

// SetImpairment replaces both directions' impairments; datagrams already held keep theirs.
func (r *Relay) SetImpairment(toServer, toClient Impairment) {
	r.toServer.set(toServer)
	r.toClient.set(toClient)
}

// Stats returns the counters.
func (r *Relay) Stats() Stats {
	return Stats{ToServer: r.toServer.stats(), ToClient: r.toClient.stats()}
}

// Clients returns the number of client mappings.
func (r *Relay) Clients() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// Close stops the relay: it closes every socket, discards held datagrams and waits for all its
// goroutines to end. A second Close returns net.ErrClosed.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return net.ErrClosed
	}
	r.closed = true
	close(r.done)
	err := r.front.Close()
	for _, s := range r.sessions {
		s.up.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// readClients reads datagrams from clients and forwards them upstream.
func (r *Relay) readClients() {
	buf := make([]byte, 1<<16)
	for {
		n, from, err := r.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP errors reported on the socket: keep relaying
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		s := r.session(from)
		if s == nil {
			r.toServer.refused()
			continue
		}
		r.toServer.process(buf[:n], r.delay, func(b []byte) error {
			_, err := s.up.Write(b)
			return err
		})
	}
}

// session returns the mapping for client, creating it (and its reader) if needed; nil if the
// relay is closed, full, or the upstream socket cannot be opened.
func (r *Relay) session(client netip.AddrPort) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[client]; s != nil || r.closed {
		return s
	}
	if len(r.sessions) >= r.max {
		return nil
	}
	local := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	if r.server.Addr().Is6() {
		local = &net.UDPAddr{IP: net.IPv6loopback}
	}
	if !r.server.Addr().IsLoopback() {
		local = nil
	}
	up, err := net.DialUDP("udp", local, net.UDPAddrFromAddrPort(r.server))
	if err != nil {
		return nil
	}
	up.SetReadBuffer(socketBuffer)
	up.SetWriteBuffer(socketBuffer)
	s := &session{client: client, up: up}
	r.sessions[client] = s
	r.wg.Add(1)
	go func() { defer r.wg.Done(); r.readServer(s) }()
	return s
}

// readServer reads the server's datagrams for one client and forwards them to it.
func (r *Relay) readServer(s *session) {
	buf := make([]byte, 1<<16)
	for {
		n, err := s.up.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ECONNREFUSED while the server is not up yet
		}
		r.toClient.process(buf[:n], r.delay, func(b []byte) error {
			_, err := r.front.WriteToUDPAddrPort(b, s.client)
			return err
		})
	}
}

// direction is the impairment state of one direction.
type direction struct {
	mu    sync.Mutex
	imp   Impairment
	rng   *rand.Rand
	held  []*held
	q     shaper
	epoch time.Time // the origin of ReleaseEvery's ticks
	st    DirStats
}

// held is a reordered datagram waiting for later ones to overtake it.
type held struct {
	b        []byte
	send     func([]byte) error
	left     int       // later datagrams still to pass
	deadline time.Time // released then at the latest
}

func newDirection(imp Impairment, seed, stream uint64) *direction {
	return &direction{imp: imp, rng: rand.New(rand.NewPCG(seed, stream)), epoch: time.Now()}
}

func (d *direction) set(imp Impairment) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.imp = imp
}

func (d *direction) stats() DirStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

func (d *direction) refused() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Received++
	d.st.Errors++
}

func (d *direction) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	return p >= 1 || d.rng.Float64() < p
}

// process runs one received datagram through the impairments. b is only borrowed.
func (d *direction) process(b []byte, dl *delayLine, send func([]byte) error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Received++
	d.st.ReceivedBytes += uint64(len(b))
	imp := &d.imp
	if imp.Drop != nil && imp.Drop(b) {
		d.st.DroppedRule++
		return
	}
	if d.chance(imp.Loss) {
		d.st.DroppedLoss++
		return
	}
	copies := 1
	if d.chance(imp.Duplicate) {
		copies = 2
		d.st.Duplicated++
	}
	now := time.Now()
	for range copies {
		at := now
		if imp.Rate > 0 {
			dep, ok := d.q.admit(now, len(b), imp)
			if !ok {
				d.st.DroppedQueue++
				continue
			}
			d.st.MaxQueuedBytes = max(d.st.MaxQueuedBytes, d.q.bytes)
			at = dep
		}
		at = at.Add(imp.Delay)
		if imp.ReleaseEvery > 0 {
			at = nextTick(at, d.epoch, imp.ReleaseEvery)
		}
		if at.After(now) {
			c := append([]byte(nil), b...)
			dl.add(at, func() { d.emitLocked(c, dl, send) }, &d.mu)
			continue
		}
		d.emitLocked(b, dl, send)
	}
}

// emitLocked applies reordering and sends. Caller holds d.mu.
func (d *direction) emitLocked(b []byte, dl *delayLine, send func([]byte) error) {
	imp := &d.imp
	if d.chance(imp.Reorder) {
		d.st.Reordered++
		c := append([]byte(nil), b...)
		if imp.ReorderPackets > 0 {
			wait := imp.ReorderDelay
			if wait <= 0 {
				wait = 100 * time.Millisecond
			}
			h := &held{b: c, send: send, left: imp.ReorderPackets, deadline: time.Now().Add(wait)}
			d.held = append(d.held, h)
			dl.add(h.deadline, func() { d.releaseLocked(time.Now()) }, &d.mu)
			return
		}
		wait := imp.ReorderDelay
		if wait <= 0 {
			wait = 5 * time.Millisecond
		}
		dl.add(time.Now().Add(wait), func() { d.sendLocked(c, send) }, &d.mu)
		return
	}
	d.sendLocked(b, send)
	if len(d.held) > 0 {
		for _, h := range d.held {
			h.left--
		}
		d.releaseLocked(time.Now())
	}
}

// releaseLocked sends held datagrams whose turn or deadline has come. Caller holds d.mu.
func (d *direction) releaseLocked(now time.Time) {
	kept := d.held[:0]
	for _, h := range d.held {
		if h.left <= 0 || !now.Before(h.deadline) {
			d.sendLocked(h.b, h.send)
			continue
		}
		kept = append(kept, h)
	}
	clear(d.held[len(kept):])
	d.held = kept
}

func (d *direction) sendLocked(b []byte, send func([]byte) error) {
	if err := send(b); err != nil {
		d.st.Errors++
		return
	}
	d.st.Forwarded++
	d.st.ForwardedBytes += uint64(len(b))
}
