package simnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// MaxDatagram is the largest datagram WriteTo accepts, in bytes: the IPv4 UDP payload limit
// (65535 − 20 − 8). Longer writes fail like a UDP socket's EMSGSIZE.
const MaxDatagram = 65507

// DefaultReadBuffer is the receive queue limit of a new Conn in bytes of payload; change it
// with (*Conn).SetReadBuffer. Datagrams arriving at a full queue are dropped and counted.
const DefaultReadBuffer = 4 << 20

// ErrMessageTooLong is returned (inside a *net.OpError) by WriteTo for a datagram longer than
// MaxDatagram bytes.
var ErrMessageTooLong = errors.New("simnet: message too long")

// benchmarking is 198.18.0.0/15 (RFC 2544), the only non-loopback range simnet accepts.
var benchmarking = netip.MustParsePrefix("198.18.0.0/15")

// Network is an in-memory network of Conns and Links. Its zero value is not usable; create one
// with New. All methods are safe for concurrent use.
type Network struct {
	mu       sync.Mutex
	seed     uint64
	nlinks   uint64
	conns    map[netip.AddrPort]*Conn
	routes   []route
	nextPort uint16

	// Pending events ordered by (at, seq), served by one timer.
	events  eventHeap
	seq     uint64
	timer   *time.Timer
	armed   bool
	armedAt time.Time
	closed  bool
	unreach uint64 // datagrams sent to an address no Conn is bound to
	// unreachReports: a datagram to an address no Conn is bound to is answered with a port
	// unreachable report to its sender (SetUnreachableReports).
	unreachReports bool
	overflow       uint64 // datagrams dropped at a full receive queue (all Conns)
}

type route struct {
	src, dst netip.Prefix
	path     []*Link
}

// New returns an empty Network whose links draw randomness from seed. Create it inside the
// synctest bubble that uses it.
func New(seed uint64) *Network {
	return &Network{seed: seed, conns: make(map[netip.AddrPort]*Conn), nextPort: 49152}
}

// NewLink returns a Link with the given configuration. A Link carries traffic only once it is
// on a route (Route); one Link may sit on several routes, which then share its queue and rate:
// that is how flows share a bottleneck.
func (n *Network) NewLink(cfg LinkConfig) *Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nlinks++
	l := &Link{net: n, cfg: cfg, epoch: time.Now()}
	// Each link gets its own stream so that one link's draws never shift another's.
	l.rng = rand.New(rand.NewPCG(n.seed, n.nlinks*0x9e3779b97f4a7c15))
	return l
}

// Route sends every datagram whose source IP is in from and destination IP is in to through
// links, in order. from and to are prefixes ("198.18.0.0/24") or single addresses
// ("198.18.0.1"). When several routes match, the most specific one (longest prefixes, the
// destination first) wins; an exact repeat replaces the earlier route. An empty links list
// means direct, unimpaired delivery. Route panics on a malformed prefix or a prefix outside
// 198.18.0.0/15 and loopback: that is a bug in the test, like a bad regexp.MustCompile literal.
func (n *Network) Route(from, to string, links ...*Link) {
	src, dst := mustPrefix(from), mustPrefix(to)
	for _, l := range links {
		if l.net != n {
			panic("simnet: Route with a Link of another Network")
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	path := append([]*Link(nil), links...)
	for i := range n.routes {
		if n.routes[i].src == src && n.routes[i].dst == dst {
			n.routes[i].path = path
			return
		}
	}
	n.routes = append(n.routes, route{src: src, dst: dst, path: path})
}

func mustPrefix(s string) netip.Prefix {
	var p netip.Prefix
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		p = netip.PrefixFrom(a, a.BitLen())
	} else if q, err := netip.ParsePrefix(s); err == nil {
		bits := q.Bits()
		if q.Addr().Is4In6() {
			bits -= 96
		}
		if bits < 0 {
			panic(fmt.Sprintf("simnet: bad prefix %q", s))
		}
		p = netip.PrefixFrom(q.Addr().Unmap(), bits).Masked()
	} else {
		panic(fmt.Sprintf("simnet: bad address or prefix %q", s))
	}
	if !allowed(p.Addr()) {
		panic(fmt.Sprintf("simnet: %q is outside 198.18.0.0/15 and loopback", s))
	}
	return p
}

func allowed(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || benchmarking.Contains(a)
}

// lookup returns the path for src→dst, or nil for direct delivery. Caller holds n.mu.
func (n *Network) lookup(src, dst netip.Addr) []*Link {
	best, bestD, bestS := -1, -1, -1
	for i := range n.routes {
		r := &n.routes[i]
		if !r.src.Contains(src) || !r.dst.Contains(dst) {
			continue
		}
		if d, s := r.dst.Bits(), r.src.Bits(); d > bestD || (d == bestD && s > bestS) {
			best, bestD, bestS = i, d, s
		}
	}
	if best < 0 {
		return nil
	}
	return n.routes[best].path
}

// Listen binds a new Conn to address, "ip:port" with an IP in 198.18.0.0/15 or loopback. Port
// 0 picks a free port from 49152 up. It fails if the address is taken or not allowed.
func (n *Network) Listen(address string) (*Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "udp", Err: err}
	}
	return n.ListenAddrPort(ap)
}

// ListenPacket is Listen with net.ListenPacket's signature, for code that takes a
// listen-packet function. network must be "udp", "udp4" or "udp6".
func (n *Network) ListenPacket(network, address string) (net.PacketConn, error) {
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Err: net.UnknownNetworkError(network)}
	}
	c, err := n.Listen(address)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ListenAddrPort is Listen for a netip.AddrPort.
func (n *Network) ListenAddrPort(ap netip.AddrPort) (*Conn, error) {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	laddr := net.UDPAddrFromAddrPort(ap)
	if !ap.Addr().IsValid() || !allowed(ap.Addr()) {
		return nil, &net.OpError{Op: "listen", Net: "udp", Addr: laddr,
			Err: errors.New("simnet: address outside 198.18.0.0/15 and loopback")}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, &net.OpError{Op: "listen", Net: "udp", Addr: laddr, Err: net.ErrClosed}
	}
	if ap.Port() == 0 {
		found := false
		for range 1 << 14 {
			p := n.nextPort
			n.nextPort++
			if n.nextPort == 0 {
				n.nextPort = 49152
			}
			cand := netip.AddrPortFrom(ap.Addr(), p)
			if _, used := n.conns[cand]; !used {
				ap, found = cand, true
				break
			}
		}
		if !found {
			return nil, &net.OpError{Op: "listen", Net: "udp", Addr: laddr, Err: errors.New("simnet: no free port")}
		}
	} else if _, used := n.conns[ap]; used {
		return nil, &net.OpError{Op: "listen", Net: "udp", Addr: laddr, Err: errors.New("simnet: address already in use")}
	}
	c := newConn(n, ap)
	n.conns[ap] = c
	return c, nil
}

// NetStats are network-wide drop counters.
type NetStats struct {
	Unreachable uint64 // datagrams addressed to an IP:port no Conn is bound to
	Overflow    uint64 // datagrams dropped at a Conn's full receive queue
	InFlight    int    // datagrams currently on links
}

// Stats returns the network-wide counters.
func (n *Network) Stats() NetStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return NetStats{Unreachable: n.unreach, Overflow: n.overflow, InFlight: len(n.events)}
}

// Close closes every Conn, discards datagrams in flight and stops the timer. Further Listen
// calls fail. It is safe to call more than once. A Network whose last Conn closes stops its
// timer by itself, so Close is optional.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	conns := make([]*Conn, 0, len(n.conns))
	for _, c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	n.mu.Lock()
	n.discardLocked()
	n.mu.Unlock()
	return nil
}

// discardLocked drops every pending event and disarms the timer. Caller holds n.mu.
func (n *Network) discardLocked() {
	for i := range n.events {
		putPacket(n.events[i].pkt)
		n.events[i] = event{}
	}
	n.events = n.events[:0]
	if n.timer != nil {
		n.timer.Stop()
	}
	n.armed = false
}

// send is the entry of a datagram written by c at now. It takes ownership of p.
func (n *Network) send(p *packet, dst netip.AddrPort, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p.dst = dst
	p.path = n.lookup(p.src.Addr(), dst.Addr())
	n.runDue(now) // anything due now was sent earlier and goes first
	n.forward(p, 0, now)
	n.runDue(now)
	n.arm(now)
}

// forward hands p to hop i of its path at time now, or delivers it after the last hop.
// Caller holds n.mu.
func (n *Network) forward(p *packet, hop int, now time.Time) {
	if hop < len(p.path) {
		p.path[hop].enter(p, hop, now)
		return
	}
	c := n.conns[p.dst]
	if c == nil {
		n.unreach++
		if n.unreachReports {
			n.reportLocked(p, syscall.ECONNREFUSED, 0)
		}
		putPacket(p)
		return
	}
	if !c.deliver(p) {
		n.overflow++
		putPacket(p)
	}
}

// schedule makes p leave hop at time at. Caller holds n.mu.
func (n *Network) schedule(p *packet, hop int, at time.Time) {
	n.seq++
	n.events.push(event{at: at, seq: n.seq, pkt: p, hop: hop})
}

// runDue processes every event due at or before now, in (time, sequence) order, each at its own
// scheduled time. Caller holds n.mu.
func (n *Network) runDue(now time.Time) {
	for len(n.events) > 0 && !n.events[0].at.After(now) {
		e := n.events.pop()
		e.pkt.path[e.hop].arrived(e.pkt)
		n.forward(e.pkt, e.hop+1, e.at)
	}
}

// arm makes sure the timer fires at the earliest pending event. Caller holds n.mu.
func (n *Network) arm(now time.Time) {
	if len(n.events) == 0 {
		return
	}
	at := n.events[0].at
	if n.armed && !at.Before(n.armedAt) {
		return
	}
	d := at.Sub(now)
	if n.timer == nil {
		n.timer = time.AfterFunc(d, n.fire)
	} else {
		n.timer.Reset(d)
	}
	n.armed, n.armedAt = true, at
}

// fire is the timer callback: it runs due events and re-arms. A stale firing is harmless.
func (n *Network) fire() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed && len(n.conns) == 0 {
		return
	}
	n.armed = false
	now := time.Now()
	n.runDue(now)
	n.arm(now)
}

// unbind removes c from the network; the last Conn to leave discards what is in flight.
func (n *Network) unbind(c *Conn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conns[c.ap] == c {
		delete(n.conns, c.ap)
	}
	if len(n.conns) == 0 {
		n.discardLocked()
	}
}
