package udpio

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// batchCase is one WriteBatch call of the round-trip tests.
type batchCase struct {
	name string
	make func(batch uint32) [][]byte
}

var batchCases = []batchCase{
	{"64x1000+500 contiguous", func(b uint32) [][]byte { return contiguous(64, 1000, 500, b) }},
	{"32x1472 contiguous", func(b uint32) [][]byte { return contiguous(32, 1472, 1472, b) }},
	{"5x1472 uneven last 3", func(b uint32) [][]byte { return contiguous(5, 1472, 3, b) }},
	{"100x600 over 64 segments", func(b uint32) [][]byte { return contiguous(100, 600, 600, b) }},
	{"45x1472 over 65507 bytes", func(b uint32) [][]byte { return contiguous(45, 1472, 1472, b) }},
	{"separate buffers", func(b uint32) [][]byte { return separate(b, 1472, 100, 1472, 0, 9) }},
	{"last longer", func(b uint32) [][]byte { return contiguous(3, 500, 600, b) }},
	{"single", func(b uint32) [][]byte { return separate(b, 1472) }},
}

// TestRoundTrip sends every batch shape through every send path to every receive path, over
// IPv4 and IPv6 loopback, and checks each datagram, its length, its order and its sender.
func TestRoundTrip(t *testing.T) {
	for _, fam := range []struct{ network, loop string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		for _, sm := range sendModes {
			for _, rm := range recvModes {
				t.Run(fam.network+"/"+sm.name+"->"+rm.name, func(t *testing.T) {
					su := listen(t, fam.network, net.JoinHostPort(fam.loop, "0"))
					ru := listen(t, fam.network, net.JoinHostPort(fam.loop, "0"))
					ru.SetReadBuffer(4 << 20)
					s, r := newConn(su, sm.opt), newConn(ru, rm.opt)
					roundTrips(t, s, r, addrOf(ru, fam.loop), addrOf(su, fam.loop))
				})
			}
		}
	}
}

// roundTrips runs every batch case from s to r (at to), by WriteBatch and by WriteBatchParts
// (each datagram split into a header and a body in separate arrays); every datagram must come
// from from.
func roundTrips(t *testing.T, s, r *Conn, to, from netip.AddrPort) {
	t.Helper()
	for bi, bc := range batchCases {
		for _, parts := range []bool{false, true} {
			roundTrip(t, s, r, to, from, bc.name, uint32(bi+1), bc.make(uint32(bi+1)), parts)
		}
	}
}

// splitParts copies each datagram into a header of up to 16 bytes and a body, each in an array
// of its own (so no two parts lie back to back).
func splitParts(bufs [][]byte) (hdrs, bodies [][]byte) {
	for _, b := range bufs {
		h := min(16, len(b))
		hdrs = append(hdrs, append(make([]byte, 0, h), b[:h]...))
		bodies = append(bodies, append([]byte(nil), b[h:]...))
	}
	return hdrs, bodies
}

func roundTrip(t *testing.T, s, r *Conn, to, from netip.AddrPort, name string, batch uint32, bufs [][]byte, parts bool) {
	t.Helper()
	if parts {
		name += "/parts"
	}
	var wg sync.WaitGroup
	var n int
	var werr error
	wg.Go(func() {
		if parts {
			hdrs, bodies := splitParts(bufs)
			n, werr = s.WriteBatchParts(hdrs, bodies, to)
		} else {
			n, werr = s.WriteBatch(bufs, to)
		}
	})
	got := readN(t, r, len(bufs), 2048)
	wg.Wait()
	if werr != nil || n != len(bufs) {
		t.Fatalf("%s: WriteBatch = %d, %v; want %d, nil", name, n, werr, len(bufs))
	}
	for i, m := range got {
		if m.Addr != from {
			t.Fatalf("%s: datagram %d from %v, want %v", name, i, m.Addr, from)
		}
		if m.Truncated {
			t.Fatalf("%s: datagram %d flagged truncated", name, i)
		}
		if m.N != len(bufs[i]) {
			t.Fatalf("%s: datagram %d has %d bytes, want %d", name, i, m.N, len(bufs[i]))
		}
		check(t, m.Buf, len(bufs[i]), batch, uint32(i))
	}
}

// TestDualStackUnmapped checks that an IPv4 peer of a dual-stack socket reads as a plain IPv4
// address, and that sending to it through the dual-stack socket works on every path.
func TestDualStackUnmapped(t *testing.T) {
	for _, dm := range sendModes {
		for _, rm := range recvModes {
			t.Run(dm.name+"/"+rm.name, func(t *testing.T) {
				du, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6unspecified})
				if err != nil {
					t.Skipf("no dual-stack socket: %v", err)
				}
				defer du.Close()
				du.SetReadBuffer(4 << 20)
				v4 := listen(t, "udp4", "127.0.0.1:0")
				v4.SetReadBuffer(4 << 20)
				dual := newConn(du, options{noGSO: dm.opt.noGSO,
					noGRO: rm.opt.noGRO, portable: dm.opt.portable || rm.opt.portable})
				peer := newConn(v4, dm.opt)
				dualAddr := addrOf(du, "127.0.0.1")
				peerAddr := addrOf(v4, "127.0.0.1")
				roundTrips(t, peer, dual, dualAddr, peerAddr) // dual receives from an IPv4 peer
				roundTrips(t, dual, peer, peerAddr, dualAddr) // dual sends to an IPv4 destination
			})
		}
	}
}

// TestSimnet runs the portable path over internal/simnet's in-memory PacketConn.
func TestSimnet(t *testing.T) {
	p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
	defer p.Close()
	a, b := New(p.A), New(p.B)
	if gso, gro, mmsg := a.Features(); gso || gro || mmsg {
		t.Fatalf("simnet Conn features %v %v %v, want none", gso, gro, mmsg)
	}
	roundTrips(t, a, b, p.B.AddrPort(), p.A.AddrPort())
	roundTrips(t, b, a, p.A.AddrPort(), p.B.AddrPort())
}

// plainPC hides everything of a PacketConn but the net.PacketConn methods.
type plainPC struct{ net.PacketConn }

// TestPlainPacketConn runs the portable path through ReadFrom and WriteTo only.
func TestPlainPacketConn(t *testing.T) {
	su := listen(t, "udp4", "127.0.0.1:0")
	ru := listen(t, "udp4", "127.0.0.1:0")
	ru.SetReadBuffer(4 << 20)
	s, r := New(plainPC{su}), New(plainPC{ru})
	roundTrips(t, s, r, addrOf(ru, "127.0.0.1"), addrOf(su, "127.0.0.1"))
}

// TestTruncated sends datagrams longer than the reader's buffers on every receive path: each is
// flagged, none is split into several, and the next datagram is read whole.
func TestTruncated(t *testing.T) {
	for _, sm := range sendModes[:2] {
		for _, rm := range recvModes {
			t.Run(sm.name+"->"+rm.name, func(t *testing.T) {
				su := listen(t, "udp4", "127.0.0.1:0")
				ru := listen(t, "udp4", "127.0.0.1:0")
				ru.SetReadBuffer(4 << 20)
				s, r := newConn(su, sm.opt), newConn(ru, rm.opt)
				to := addrOf(ru, "127.0.0.1")
				long := contiguous(4, 1472, 1472, 9)
				if n, err := s.WriteBatch(long, to); n != 4 || err != nil {
					t.Fatalf("WriteBatch = %d, %v", n, err)
				}
				short := separate(10, 100)
				if n, err := s.WriteBatch(short, to); n != 1 || err != nil {
					t.Fatalf("WriteBatch = %d, %v", n, err)
				}
				got := readN(t, r, 5, 1000)
				for i, m := range got[:4] {
					if !m.Truncated || m.N != 1000 {
						t.Fatalf("datagram %d: Truncated %v, N %d; want true, 1000", i, m.Truncated, m.N)
					}
					exp := make([]byte, 1472)
					fill(exp, 9, uint32(i))
					if string(m.Buf) != string(exp[:1000]) {
						t.Fatalf("truncated datagram %d: wrong bytes", i)
					}
				}
				if m := got[4]; m.Truncated || m.N != 100 {
					t.Fatalf("short datagram: Truncated %v, N %d", m.Truncated, m.N)
				}
			})
		}
	}
}

// TestCloseAndDeadline checks that a blocked ReadBatch ends on a deadline with a timeout and on
// Close with net.ErrClosed, on every receive path.
func TestCloseAndDeadline(t *testing.T) {
	for _, rm := range recvModes {
		t.Run(rm.name, func(t *testing.T) {
			ru := listen(t, "udp4", "127.0.0.1:0")
			r := newConn(ru, rm.opt)
			msgs := newMsgs(4, 2048)
			ru.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			n, err := r.ReadBatch(msgs)
			var ne net.Error
			if n != 0 || !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("ReadBatch past deadline = %d, %v; want a timeout", n, err)
			}
			ru.SetReadDeadline(time.Time{})
			done := make(chan error, 1)
			go func() { _, err := r.ReadBatch(msgs); done <- err }()
			time.Sleep(10 * time.Millisecond)
			ru.Close()
			if err := <-done; !errors.Is(err, net.ErrClosed) {
				t.Fatalf("ReadBatch after Close: %v, want net.ErrClosed", err)
			}
			if _, err := r.WriteBatch(separate(1, 10), addrOf(ru, "127.0.0.1")); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("WriteBatch after Close: %v, want net.ErrClosed", err)
			}
		})
	}
}

// TestEmpty checks the zero-length calls.
func TestEmpty(t *testing.T) {
	su := listen(t, "udp4", "127.0.0.1:0")
	c := New(su)
	if n, err := c.ReadBatch(nil); n != 0 || err != nil {
		t.Fatalf("ReadBatch(nil) = %d, %v", n, err)
	}
	if n, err := c.WriteBatch(nil, addrOf(su, "127.0.0.1")); n != 0 || err != nil {
		t.Fatalf("WriteBatch(nil) = %d, %v", n, err)
	}
	if c.PacketConn() != su {
		t.Fatal("PacketConn() is not the wrapped socket")
	}
}

// TestConcurrentWriters has several goroutines write batches at once (run it with -race); every
// datagram must arrive whole.
func TestConcurrentWriters(t *testing.T) {
	for _, sm := range sendModes {
		t.Run(sm.name, func(t *testing.T) {
			su := listen(t, "udp4", "127.0.0.1:0")
			ru := listen(t, "udp4", "127.0.0.1:0")
			ru.SetReadBuffer(4 << 20)
			s, r := newConn(su, sm.opt), newConn(ru, options{})
			to := addrOf(ru, "127.0.0.1")
			const writers, batches, per = 4, 8, 16
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for b := range batches {
						bufs := contiguous(per, 1200, 1200, uint32(w*100+b))
						if n, err := s.WriteBatch(bufs, to); n != per || err != nil {
							t.Errorf("WriteBatch = %d, %v", n, err)
							return
						}
					}
				})
			}
			got := readN(t, r, writers*batches*per, 2048)
			wg.Wait()
			seen := make(map[[2]uint32]bool)
			for _, m := range got {
				if m.N != 1200 || m.Truncated {
					t.Fatalf("datagram of %d bytes, truncated %v", m.N, m.Truncated)
				}
				k := [2]uint32{beU32(m.Buf), beU32(m.Buf[4:])}
				check(t, m.Buf, 1200, k[0], k[1])
				if seen[k] {
					t.Fatalf("datagram %v twice", k)
				}
				seen[k] = true
			}
		})
	}
}

func beU32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
