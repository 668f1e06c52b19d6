package simnet

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
)

// Conn is a UDP-like endpoint of a Network: a net.PacketConn whose addresses are *net.UDPAddr.
// WriteTo never blocks (like UDP, a datagram that cannot be carried is dropped silently);
// ReadFrom blocks until a datagram, the read deadline or Close. Errors are *net.OpError with
// Err os.ErrDeadlineExceeded (Timeout() is true) or net.ErrClosed. Methods are safe for
// concurrent use.
type Conn struct {
	net  *Network
	ap   netip.AddrPort
	addr *net.UDPAddr

	mu     sync.Mutex
	q      []*packet // receive queue; q[qhead:] pending
	qhead  int
	qbytes int
	rcvbuf int
	closed bool
	st     ConnStats

	reports    []report      // ICMP-like reports about datagrams this Conn sent (icmp.go)
	pendingErr syscall.Errno // the last report's error, returned once by the next read

	ready  chan struct{} // capacity 1: signalled when the queue becomes non-empty
	done   chan struct{} // closed by Close
	rd, wd *deadline
}

// ConnStats are a Conn's counters.
type ConnStats struct {
	Sent, SentBytes         uint64 // datagrams accepted by WriteTo
	Received, ReceivedBytes uint64 // datagrams returned by ReadFrom (bytes before truncation)
	Overflow                uint64 // datagrams dropped because the receive queue was full
}

var _ net.PacketConn = (*Conn)(nil)

func newConn(n *Network, ap netip.AddrPort) *Conn {
	return &Conn{
		net: n, ap: ap, addr: net.UDPAddrFromAddrPort(ap), rcvbuf: DefaultReadBuffer,
		ready: make(chan struct{}, 1), done: make(chan struct{}),
		rd: newDeadline(), wd: newDeadline(),
	}
}

// deliver appends p to the receive queue; false if the queue is full or c is closed.
// Called with the Network locked.
func (c *Conn) deliver(p *packet) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if c.qbytes+len(p.buf) > c.rcvbuf {
		c.st.Overflow++
		return false
	}
	c.q = append(c.q, p)
	c.qbytes += len(p.buf)
	select {
	case c.ready <- struct{}{}:
	default:
	}
	return true
}

func (c *Conn) opErr(op string, remote net.Addr, err error) error {
	return &net.OpError{Op: op, Net: "udp", Source: c.addr, Addr: remote, Err: err}
}

// next blocks until a datagram, the read deadline or Close.
func (c *Conn) next() (*packet, error) {
	for {
		select {
		case <-c.done:
			return nil, c.opErr("read", nil, net.ErrClosed)
		default:
		}
		dl := c.rd.wait()
		if c.rd.expired() {
			return nil, c.opErr("read", nil, os.ErrDeadlineExceeded)
		}
		c.mu.Lock()
		if err := c.takePendingErr(); err != nil {
			c.mu.Unlock()
			return nil, c.opErr("read", nil, err)
		}
		if c.qhead < len(c.q) {
			p := c.q[c.qhead]
			c.q[c.qhead] = nil
			c.qhead++
			c.qbytes -= len(p.buf)
			more := c.qhead < len(c.q)
			if !more {
				c.q, c.qhead = c.q[:0], 0
			} else if c.qhead > 1024 && c.qhead > len(c.q)/2 {
				n := copy(c.q, c.q[c.qhead:])
				clear(c.q[n:])
				c.q, c.qhead = c.q[:n], 0
			}
			c.st.Received++
			c.st.ReceivedBytes += uint64(len(p.buf))
			c.mu.Unlock()
			if more { // pass the turn to another reader
				select {
				case c.ready <- struct{}{}:
				default:
				}
			}
			return p, nil
		}
		c.mu.Unlock()
		select {
		case <-c.ready:
		case <-dl:
		case <-c.done:
		}
	}
}

// ReadFrom reads the next datagram into b. A datagram longer than b is truncated to len(b)
// and the rest discarded, as with UDP. addr is the sender's *net.UDPAddr; do not modify it.
func (c *Conn) ReadFrom(b []byte) (n int, addr net.Addr, err error) {
	p, err := c.next()
	if err != nil {
		return 0, nil, err
	}
	n, addr = copy(b, p.buf), p.srcAddr
	putPacket(p)
	return n, addr, nil
}

// ReadFromUDPAddrPort is ReadFrom returning the sender as a netip.AddrPort; it never allocates.
func (c *Conn) ReadFromUDPAddrPort(b []byte) (n int, addr netip.AddrPort, err error) {
	p, err := c.next()
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	n, addr = copy(b, p.buf), p.src
	putPacket(p)
	return n, addr, nil
}

// WriteTo sends a copy of b to addr, which must be a *net.UDPAddr. It returns len(b) unless
// the Conn is closed (net.ErrClosed), the write deadline has passed (os.ErrDeadlineExceeded),
// b is longer than MaxDatagram (ErrMessageTooLong) or addr is not a UDP address.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok || ua == nil {
		return 0, c.opErr("write", addr, net.InvalidAddrError("simnet: not a *net.UDPAddr"))
	}
	return c.write(b, ua.AddrPort(), addr)
}

// WriteToUDPAddrPort is WriteTo for a netip.AddrPort; it never allocates in steady state.
func (c *Conn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	return c.write(b, addr, nil)
}

func (c *Conn) write(b []byte, dst netip.AddrPort, addr net.Addr) (int, error) {
	return c.writeDF(b, dst, addr, false)
}

func (c *Conn) writeDF(b []byte, dst netip.AddrPort, addr net.Addr, frag bool) (int, error) {
	errAddr := func() net.Addr {
		if addr == nil {
			return net.UDPAddrFromAddrPort(dst)
		}
		return addr
	}
	select {
	case <-c.done:
		return 0, c.opErr("write", errAddr(), net.ErrClosed)
	default:
	}
	if c.wd.expired() {
		return 0, c.opErr("write", errAddr(), os.ErrDeadlineExceeded)
	}
	if len(b) > MaxDatagram {
		return 0, c.opErr("write", errAddr(), ErrMessageTooLong)
	}
	if !dst.IsValid() {
		return 0, c.opErr("write", errAddr(), net.InvalidAddrError("simnet: invalid address"))
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	if !frag && c.net.tooBig(c.ap.Addr(), dst.Addr(), len(b)) {
		return 0, c.opErr("write", errAddr(), os.NewSyscallError("sendto", syscall.EMSGSIZE))
	}
	c.mu.Lock()
	c.st.Sent++
	c.st.SentBytes += uint64(len(b))
	c.mu.Unlock()
	p := getPacket(b)
	p.src, p.srcAddr, p.frag = c.ap, c.addr, frag
	c.net.send(p, dst, time.Now())
	return len(b), nil
}

// Close closes the Conn: blocked and later calls fail with net.ErrClosed, queued datagrams are
// discarded and the address is freed. A second Close returns net.ErrClosed.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opErr("close", nil, net.ErrClosed)
	}
	c.closed = true
	close(c.done)
	for _, p := range c.q[c.qhead:] {
		putPacket(p)
	}
	c.q, c.qhead, c.qbytes = nil, 0, 0
	c.mu.Unlock()
	c.rd.stop()
	c.wd.stop()
	c.net.unbind(c)
	return nil
}

// LocalAddr returns the Conn's *net.UDPAddr; do not modify it.
func (c *Conn) LocalAddr() net.Addr { return c.addr }

// AddrPort returns the Conn's address.
func (c *Conn) AddrPort() netip.AddrPort { return c.ap }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline; it wakes a blocked ReadFrom, which then fails with
// os.ErrDeadlineExceeded. The zero time clears it. The deadline is not fatal.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opErr("set", nil, net.ErrClosed)
	}
	c.rd.set(t)
	return nil
}

// SetWriteDeadline sets the write deadline; WriteTo after it fails with os.ErrDeadlineExceeded
// (it never blocks, so there is nothing to wake).
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opErr("set", nil, net.ErrClosed)
	}
	c.wd.set(t)
	return nil
}

// SetReadBuffer sets the receive queue limit in bytes (like SO_RCVBUF): datagrams arriving
// while the queued bytes plus theirs would exceed it are dropped (ConnStats.Overflow).
func (c *Conn) SetReadBuffer(bytes int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rcvbuf = max(bytes, 0)
	return nil
}

// SetWriteBuffer is accepted for compatibility with *net.UDPConn and has no effect: WriteTo
// never blocks.
func (c *Conn) SetWriteBuffer(bytes int) error { return nil }

// Stats returns the Conn's counters.
func (c *Conn) Stats() ConnStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
