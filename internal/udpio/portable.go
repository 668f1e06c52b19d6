package udpio

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// addrPortConn is the allocation-free half of *net.UDPConn's API, also offered by internal/simnet.
type addrPortConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

// portable moves one datagram per call through the PacketConn's own methods.
type portable struct {
	pc net.PacketConn
	ap addrPortConn // nil when pc lacks the AddrPort methods
}

func newPortable(pc net.PacketConn) *portable {
	p := &portable{pc: pc}
	p.ap, _ = pc.(addrPortConn)
	return p
}

func (p *portable) features() (gso, gro, mmsg bool) { return false, false, false }

func (p *portable) readBatch(msgs []Message) (int, error) {
	m := &msgs[0]
	var (
		n    int
		from netip.AddrPort
		err  error
	)
	if p.ap != nil {
		n, from, err = p.ap.ReadFromUDPAddrPort(m.Buf)
	} else {
		var a net.Addr
		n, a, err = p.pc.ReadFrom(m.Buf)
		if err == nil {
			from = addrPortOf(a)
		}
	}
	if err != nil {
		return 0, err
	}
	m.N, m.Data = n, m.Buf[:n]
	m.Addr = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	// ReadFrom silently truncates: a datagram filling Buf may have been longer.
	m.Truncated = n >= len(m.Buf)
	m.Time = time.Time{} // no kernel stamp here: the caller reads its clock
	return 1, nil
}

// gathers are the portable path's buffers for gathering a two-part datagram.
var gathers = sync.Pool{New: func() any { return new([]byte) }}

func (p *portable) writeBatch(bufs, bodies [][]byte, to netip.AddrPort) (int, error) {
	var ua net.Addr
	var g *[]byte
	if bodies != nil {
		g = gathers.Get().(*[]byte)
		defer gathers.Put(g)
	}
	for i, b := range bufs {
		var err error
		if bodies != nil { // one write per datagram: gather it first
			*g = append(append((*g)[:0], b...), bodies[i]...)
			b = *g
		}
		if p.ap != nil {
			_, err = p.ap.WriteToUDPAddrPort(b, to)
		} else {
			if ua == nil {
				ua = net.UDPAddrFromAddrPort(to)
			}
			_, err = p.pc.WriteTo(b, ua)
		}
		if err != nil {
			return i, err
		}
	}
	return len(bufs), nil
}

// addrPortOf converts a PacketConn's address to a netip.AddrPort; the zero value for other kinds.
func addrPortOf(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.AddrPort()
	case interface{ AddrPort() netip.AddrPort }:
		return a.AddrPort()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap
	}
	return netip.AddrPort{}
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
