package udpio

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func sys(t testing.TB, c *Conn) *sysConn {
	t.Helper()
	s, ok := c.b.(*sysConn)
	if !ok {
		t.Fatalf("Conn uses %T, want *sysConn", c.b)
	}
	return s
}

// TestFeatures checks what New turns on for a loopback socket on this kernel (≥ 5.0: all three).
func TestFeatures(t *testing.T) {
	uc := listen(t, "udp4", "127.0.0.1:0")
	gso, gro, mmsg := New(uc).Features()
	if !gso || !gro || !mmsg {
		t.Fatalf("Features() = gso %v, gro %v, mmsg %v; want all on this kernel", gso, gro, mmsg)
	}
	gso, gro, mmsg = newConn(uc, options{noGSO: true, noGRO: true}).Features()
	if gso || gro || !mmsg {
		t.Fatalf("forced off: Features() = %v %v %v", gso, gro, mmsg)
	}
}

// TestGSOToGROOneCallEachSide checks that on loopback a GSO batch is one sendmsg, reaches a GRO
// socket still glued, is read by one recvmmsg, and is split correctly across ReadBatch calls
// with fewer Messages than datagrams (the rest served without a system call).
func TestGSOToGROOneCallEachSide(t *testing.T) {
	for _, fam := range []struct{ network, loop string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		t.Run(fam.network, func(t *testing.T) {
			su := listen(t, fam.network, net.JoinHostPort(fam.loop, "0"))
			ru := listen(t, fam.network, net.JoinHostPort(fam.loop, "0"))
			s, r := New(su), New(ru)
			bufs := contiguous(64, 1000, 333, 5)
			if n, err := s.WriteBatch(bufs, addrOf(ru, fam.loop)); n != 64 || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			if got := sys(t, s).gsoSends.Load(); got != 1 {
				t.Fatalf("%d GSO sends, want 1", got)
			}
			msgs := newMsgs(10, 1500)
			i := 0
			for i < 64 {
				n, err := r.ReadBatch(msgs)
				if err != nil {
					t.Fatal(err)
				}
				if want := min(10, 64-i); n != want {
					t.Fatalf("ReadBatch at %d = %d, want %d", i, n, want)
				}
				for _, m := range msgs[:n] {
					if m.N != len(bufs[i]) || m.Truncated || m.Addr != addrOf(su, fam.loop) {
						t.Fatalf("datagram %d: N %d truncated %v from %v", i, m.N, m.Truncated, m.Addr)
					}
					check(t, m.Data, len(bufs[i]), 5, uint32(i))
					i++
				}
			}
			if calls := sys(t, r).r.calls; calls != 1 {
				t.Fatalf("%d recvmmsg calls for one GSO batch, want 1", calls)
			}
		})
	}
}

// TestGSOFailureFallsBack makes the kernel refuse GSO (SO_NO_CHECK: udp(7) EINVAL) and checks that
// the batch still arrives whole, by sendmmsg, and GSO is off for the Conn afterwards.
func TestGSOFailureFallsBack(t *testing.T) {
	su := listen(t, "udp4", "127.0.0.1:0")
	ru := listen(t, "udp4", "127.0.0.1:0")
	rc, _ := su.SyscallConn()
	var serr error
	rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1) })
	if serr != nil {
		t.Skipf("SO_NO_CHECK: %v", serr)
	}
	s, r := New(su), New(ru)
	if gso, _, _ := s.Features(); !gso {
		t.Skip("no GSO on this kernel")
	}
	roundTrips(t, s, r, addrOf(ru, "127.0.0.1"), addrOf(su, "127.0.0.1"))
	if gso, _, _ := s.Features(); gso {
		t.Fatal("GSO still on after the kernel refused it")
	}
	if ss := sys(t, s); ss.gsoSends.Load() != 0 || ss.sendCalls.Load() == 0 {
		t.Fatalf("gso sends %d, sendmmsg calls %d", ss.gsoSends.Load(), ss.sendCalls.Load())
	}
}

// TestNoAllocs checks that the steady-state send paths allocate nothing, and the receive paths
// nothing but x/net's decoding of the sender address (a *net.UDPAddr and its IP): two allocations
// per message the kernel returned (per datagram with recvmmsg, per run with GRO), none on the
// portable path.
func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	for _, sm := range sendModes {
		for _, rm := range recvModes {
			t.Run(sm.name+"->"+rm.name, func(t *testing.T) {
				su := listen(t, "udp4", "127.0.0.1:0")
				ru := listen(t, "udp4", "127.0.0.1:0")
				ru.SetReadBuffer(4 << 20)
				s, r := newConn(su, sm.opt), newConn(ru, rm.opt)
				to := addrOf(ru, "127.0.0.1")
				bufs := contiguous(16, 1472, 1000, 1)
				msgs := newMsgs(16, 1500)
				const runs = 50
				write := func() {
					if n, err := s.WriteBatch(bufs, to); n != 16 || err != nil {
						t.Fatalf("WriteBatch = %d, %v", n, err)
					}
				}
				read := func(count int) {
					for got := 0; got < count; {
						n, err := r.ReadBatch(msgs[:min(16, count-got)])
						if err != nil {
							t.Fatal(err)
						}
						got += n
					}
				}
				write() // warm the pools and the GRO buffers up
				read(16)
				// 11 × 16 datagrams queue in the receive buffer (≈ 0.4 MB) before they are read.
				if a := testing.AllocsPerRun(10, write); a != 0 {
					t.Fatalf("%.1f allocations per WriteBatch, want 0", a)
				}
				read(16 * 11) // AllocsPerRun makes one more (warm-up) call than runs
				hdrs, bodies := splitParts(bufs)
				if a := testing.AllocsPerRun(10, func() {
					if n, err := s.WriteBatchParts(hdrs, bodies, to); n != 16 || err != nil {
						t.Fatalf("WriteBatchParts = %d, %v", n, err)
					}
				}); a != 0 {
					t.Fatalf("%.1f allocations per WriteBatchParts, want 0", a)
				}
				read(16 * 11)
				rs, sysRead := r.b.(*sysConn)
				var kmsgs0 int
				if sysRead {
					kmsgs0 = rs.r.msgs
				}
				allocs := testing.AllocsPerRun(runs, func() { write(); read(16) })
				want := 0.0
				if sysRead {
					want = 2 * float64(rs.r.msgs-kmsgs0) / (runs + 1) // one warm-up call
				}
				if allocs > want {
					t.Fatalf("%.1f allocations per batch round trip, want ≤ %.1f (2 per message read)",
						allocs, want)
				}
			})
		}
	}
}

// FuzzGRORun feeds the GRO splitter arbitrary control messages, lengths and truncation: it must
// never panic, hand out each byte once, in order, and never a piece longer than the segment.
func FuzzGRORun(f *testing.F) {
	groMsg := func(seg int32) []byte {
		b := make([]byte, unix.CmsgSpace(4))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_GRO
		h.SetLen(unix.CmsgLen(4))
		binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(seg))
		return b
	}
	f.Add(groMsg(1000), uint16(64000), false, uint16(1500))
	f.Add(groMsg(1000), uint16(64333), true, uint16(900))
	f.Add(groMsg(-5), uint16(10), false, uint16(0))
	f.Add([]byte{1, 2, 3}, uint16(0), true, uint16(1))
	f.Fuzz(func(t *testing.T, oob []byte, n uint16, trunc bool, bufSize uint16) {
		if int(n) > GROBufferSize || len(oob) > oobSize || bufSize > 4096 {
			return
		}
		var r reader
		r.gbuf = make([]byte, GROBufferSize)
		for i := range r.gbuf[:n] {
			r.gbuf[i] = byte(i * 31 / 7)
		}
		r.addRun(0, int(n), oob, netip.AddrPort{}, trunc)
		ru := r.runs[0]
		if ru.seg <= 0 || ru.count < 1 || ru.count > max(int(n), 1) {
			t.Fatalf("run %+v from %d bytes", ru, n)
		}
		msgs := newMsgs(7, int(bufSize))
		off, pieces := 0, 0
		for r.cur < r.nruns {
			k := r.drain(msgs)
			if k == 0 || k > len(msgs) {
				t.Fatalf("drain returned %d", k)
			}
			for _, m := range msgs[:k] {
				pieces++
				l := min(ru.seg, int(n)-off)
				if m.N != min(l, len(m.Buf)) || string(m.Data) != string(r.gbuf[off:off+m.N]) {
					t.Fatalf("piece %d at %d: N %d, want %d bytes from there", pieces, off, m.N, min(l, len(m.Buf)))
				}
				if len(m.Data) != m.N || (m.N > 0 && &m.Data[0] != &r.gbuf[off]) {
					t.Fatalf("piece %d: Data is not the %d bytes of the GRO buffer at %d (no copy)", pieces, m.N, off)
				}
				last := off+l == int(n)
				if want := l > len(m.Buf) || (last && ru.truncLast); m.Truncated != want {
					t.Fatalf("piece %d: Truncated %v, want %v", pieces, m.Truncated, want)
				}
				off += l
			}
		}
		if off != int(n) || pieces != ru.count {
			t.Fatalf("handed out %d of %d bytes in %d pieces, want %d", off, n, pieces, ru.count)
		}
	})
}

// TestAddrConversion checks the destination x/net gets (a reused *net.UDPAddr, without
// allocating) and the unmapping of the sender addresses it decodes.
func TestAddrConversion(t *testing.T) {
	var w writer
	for _, c := range []struct{ in, want string }{
		{"127.0.0.1:9", "127.0.0.1:9"},
		{"[::ffff:10.1.2.3]:65535", "10.1.2.3:65535"}, // x/net sends it as AF_INET (To4)
		{"[::1]:443", "[::1]:443"},
		{"[fe80::1%eth0]:5", "[fe80::1%eth0]:5"},
	} {
		ap := netip.MustParseAddrPort(c.in)
		w.setTo(ap)
		if got := unmap(w.to.AddrPort()).String(); got != c.want {
			t.Errorf("setTo(%v) gave %v, want %s", ap, got, c.want)
		}
		if a := testing.AllocsPerRun(10, func() { w.setTo(ap) }); a != 0 {
			t.Errorf("setTo(%v): %.0f allocations", ap, a)
		}
	}
	mapped := &net.UDPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 7}
	if got := addrPortOfUDP(mapped); got != netip.MustParseAddrPort("192.0.2.7:7") {
		t.Errorf("IPv4-mapped sender read as %v", got)
	}
	if got := addrPortOfUDP(&net.IPAddr{IP: net.IPv6loopback}); got.IsValid() {
		t.Errorf("non-UDP address read as %v", got)
	}
}

// TestGSORuns checks how WriteBatch cuts batches into GSO runs (one sendmmsg message each) and
// single datagrams, and that every datagram arrives whole and in order.
func TestGSORuns(t *testing.T) {
	mixed := func(b uint32) [][]byte {
		// [0..2] a run ending in a shorter datagram, [3..4] a run, [5..6] separate, [7] alone.
		bufs := contiguous(5, 1472, 1472, b)
		bufs[2] = bufs[2][:800]
		sep := separate(b, 9, 9, 9, 1472, 1472, 1472, 1472, 1472)
		for i := 5; i < 8; i++ {
			bufs = append(bufs, sep[i])
		}
		for i := range bufs {
			fill(bufs[i], b, uint32(i))
		}
		return bufs
	}
	for _, c := range []struct {
		name       string
		make       func(uint32) [][]byte
		runs       []int // GSO run lengths gsoRun finds, from the start, taking singles one by one
		gso, calls uint64
	}{
		{"64x1472", func(b uint32) [][]byte { return contiguous(64, 1472, 1472, b) }, []int{44, 20}, 2, 1},
		{"100x600", func(b uint32) [][]byte { return contiguous(100, 600, 600, b) }, []int{64, 36}, 2, 1},
		{"mixed", mixed, []int{3, 2, 1, 1, 1}, 2, 1},
		{"first empty", func(b uint32) [][]byte { return contiguous(3, 0, 0, b) }, []int{1, 1, 1}, 0, 1},
		{"70 singles", func(b uint32) [][]byte { return separate(b, repeat(9, 70)...) }, repeat(1, 70), 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			bufs := c.make(7)
			var runs []int
			for i := 0; i < len(bufs); {
				k, _, total := gsoRun(bufs[i:])
				if total > MaxGSOBytes || k < 1 {
					t.Fatalf("run at %d: %d datagrams, %d bytes", i, k, total)
				}
				runs = append(runs, k)
				i += k
			}
			if fmtInts(runs) != fmtInts(c.runs) {
				t.Fatalf("runs %v, want %v", runs, c.runs)
			}
			sendRuns(t, bufs, 7, c.gso, c.calls, func(s *Conn, to netip.AddrPort) (int, error) {
				return s.WriteBatch(bufs, to)
			})
		})
	}
}

// sendRuns sends bufs (of batch) from one loopback socket to another with write, checks every
// datagram arrives intact, and that the sender made gso GSO messages in calls sendmmsg calls.
func sendRuns(t *testing.T, bufs [][]byte, batch uint32, gso, calls uint64, write func(*Conn, netip.AddrPort) (int, error)) {
	t.Helper()
	su := listen(t, "udp4", "127.0.0.1:0")
	ru := listen(t, "udp4", "127.0.0.1:0")
	ru.SetReadBuffer(4 << 20)
	s, r := New(su), New(ru)
	if n, err := write(s, addrOf(ru, "127.0.0.1")); n != len(bufs) || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	for i, m := range readN(t, r, len(bufs), 2048) {
		if m.N != len(bufs[i]) || m.Truncated {
			t.Fatalf("datagram %d: %d bytes, want %d", i, m.N, len(bufs[i]))
		}
		check(t, m.Data, len(bufs[i]), batch, uint32(i))
	}
	ss := sys(t, s)
	if g, m := ss.gsoSends.Load(), ss.sendCalls.Load(); g != gso || m != calls {
		t.Fatalf("%d GSO messages and %d sendmmsg calls, want %d and %d", g, m, gso, calls)
	}
}

func fmtInts(v []int) string { return fmt.Sprint(v) }

func repeat(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestGROBuffersGrow checks that a GRO reader starts with one 64 KiB buffer and doubles its
// buffers, up to groBuffers, while datagrams that arrive unglued fill them all.
func TestGROBuffersGrow(t *testing.T) {
	su := listen(t, "udp4", "127.0.0.1:0")
	ru := listen(t, "udp4", "127.0.0.1:0")
	ru.SetReadBuffer(4 << 20)
	s, r := newConn(su, options{noGSO: true}), New(ru)
	bufs := contiguous(64, 1000, 1000, 3)
	if n, err := s.WriteBatch(bufs, addrOf(ru, "127.0.0.1")); n != 64 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	msgs := newMsgs(64, 1500)
	var sizes []int
	for got := 0; got < 64; {
		n, err := r.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs[:n] {
			check(t, m.Data, 1000, 3, uint32(got+i))
		}
		got += n
		sizes = append(sizes, n)
	}
	if want := "[1 2 4 8 8 8 8 8 8 8 1]"; fmtInts(sizes) != want {
		t.Fatalf("datagrams per ReadBatch %v, want %s", sizes, want)
	}
	if nb := len(sys(t, r).r.gbuf) / GROBufferSize; nb != groBuffers {
		t.Fatalf("%d GRO buffers, want %d", nb, groBuffers)
	}
}

// TestGSORunsParts: WriteBatchParts glues datagrams into GSO runs by their lengths alone (the
// parts lie in separate arrays) and the kernel gathers every byte in order.
func TestGSORunsParts(t *testing.T) {
	mixed := func(b uint32) [][]byte {
		bufs := contiguous(8, 1472, 1472, b)
		bufs[2] = bufs[2][:800]
		for i := range bufs {
			fill(bufs[i], b, uint32(i))
		}
		return bufs
	}
	for _, c := range []struct {
		name       string
		make       func(uint32) [][]byte
		runs       []int
		gso, calls uint64
	}{
		{"64x1472", func(b uint32) [][]byte { return contiguous(64, 1472, 1472, b) }, []int{44, 20}, 2, 1},
		{"mixed", mixed, []int{3, 5}, 2, 1},
		{"70 singles", func(b uint32) [][]byte { return separate(b, repeat(9, 70)...) }, []int{64, 6}, 2, 1},
		{"headers only", func(b uint32) [][]byte { return contiguous(5, 10, 10, b) }, []int{5}, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			bufs := c.make(9)
			hdrs, bodies := splitParts(bufs)
			var runs []int
			for i := 0; i < len(hdrs); {
				k, seg := gsoRunParts(hdrs[i:], bodies[i:])
				if k < 1 || seg != len(bufs[i]) {
					t.Fatalf("run at %d: %d datagrams of %d bytes", i, k, seg)
				}
				runs = append(runs, k)
				i += k
			}
			if fmtInts(runs) != fmtInts(c.runs) {
				t.Fatalf("runs %v, want %v", runs, c.runs)
			}
			sendRuns(t, bufs, 9, c.gso, c.calls, func(s *Conn, to netip.AddrPort) (int, error) {
				return s.WriteBatchParts(hdrs, bodies, to)
			})
		})
	}
}
