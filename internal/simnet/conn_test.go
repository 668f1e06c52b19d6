package simnet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func checkOpErr(t *testing.T, err error, want error, timeout bool) {
	t.Helper()
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not a *net.OpError", err, err)
	}
	if oe.Err != want {
		t.Fatalf("OpError.Err = %v, want %v", oe.Err, want)
	}
	if oe.Timeout() != timeout {
		t.Fatalf("Timeout() = %v, want %v", oe.Timeout(), timeout)
	}
}

func TestReadDeadlineWakesBlockedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{}, LinkConfig{})
		defer p.Close()
		start := time.Now()
		errc := make(chan error)
		go func() {
			_, _, err := p.B.ReadFrom(make([]byte, 10))
			errc <- err
		}()
		synctest.Wait() // the reader is blocked
		p.B.SetReadDeadline(start.Add(30 * time.Millisecond))
		err := <-errc
		if d := time.Since(start); d != 30*time.Millisecond {
			t.Errorf("woken after %v, want 30ms", d)
		}
		checkOpErr(t, err, os.ErrDeadlineExceeded, true)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Error("errors.Is(err, os.ErrDeadlineExceeded) = false")
		}
		// Not fatal: clearing the deadline makes reads work again.
		p.B.SetReadDeadline(time.Time{})
		send(t, p.A, p.B.LocalAddr(), 1, 10, 0)
		if _, _, err := p.B.ReadFrom(make([]byte, 10)); err != nil {
			t.Fatalf("read after clearing the deadline: %v", err)
		}
	})
}

func TestReadDeadlineExtendedWhileBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{}, LinkConfig{})
		defer p.Close()
		start := time.Now()
		p.B.SetReadDeadline(start.Add(10 * time.Millisecond))
		errc := make(chan error)
		go func() {
			_, _, err := p.B.ReadFrom(make([]byte, 10))
			errc <- err
		}()
		time.Sleep(5 * time.Millisecond)
		p.B.SetReadDeadline(start.Add(50 * time.Millisecond)) // moved later: no wake at 10 ms
		err := <-errc
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("woken after %v, want 50ms", d)
		}
		checkOpErr(t, err, os.ErrDeadlineExceeded, true)
		// A deadline in the past fails at once, and a read deadline leaves writes alone.
		p.B.SetReadDeadline(start)
		if _, _, err := p.B.ReadFrom(nil); err == nil {
			t.Fatal("read with a past deadline succeeded")
		}
		if _, err := p.B.WriteTo([]byte("x"), p.A.LocalAddr()); err != nil {
			t.Fatalf("write with only a read deadline: %v", err)
		}
	})
}

func TestCloseWakesBlockedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{}, LinkConfig{})
		defer p.Close()
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { _, _, errs[i] = p.B.ReadFrom(make([]byte, 10)) })
		}
		synctest.Wait()
		if err := p.B.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for _, err := range errs {
			checkOpErr(t, err, net.ErrClosed, false)
		}
		if err := p.B.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second Close = %v, want net.ErrClosed", err)
		}
		_, err := p.B.WriteTo([]byte("x"), p.A.LocalAddr())
		checkOpErr(t, err, net.ErrClosed, false)
		if err := p.B.SetReadDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("SetReadDeadline after Close = %v", err)
		}
		// The address is free again and traffic to the closed Conn counts as unreachable.
		send(t, p.A, p.B.LocalAddr(), 1, 10, 0)
		if s := p.Net.Stats(); s.Unreachable != 1 {
			t.Errorf("Unreachable = %d, want 1", s.Unreachable)
		}
		c, err := p.Net.Listen(PairAddrB)
		if err != nil {
			t.Fatalf("rebinding a closed address: %v", err)
		}
		c.Close()
	})
}

func TestWriteDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{}, LinkConfig{})
		defer p.Close()
		p.A.SetWriteDeadline(time.Now().Add(time.Millisecond))
		if _, err := p.A.WriteTo([]byte("x"), p.B.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		_, err := p.A.WriteTo([]byte("x"), p.B.LocalAddr())
		checkOpErr(t, err, os.ErrDeadlineExceeded, true)
		p.A.SetDeadline(time.Time{})
		if _, err := p.A.WriteTo([]byte("x"), p.B.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTruncateAndCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{Delay: time.Millisecond}, LinkConfig{})
		defer p.Close()
		b := []byte("hello, world")
		p.A.WriteTo(b, p.B.LocalAddr())
		copy(b, "XXXXX") // the caller may reuse its buffer at once
		buf := make([]byte, 5)
		n, from, err := p.B.ReadFrom(buf)
		if err != nil || n != 5 || string(buf) != "hello" {
			t.Fatalf("ReadFrom = %d %q %v, want 5 \"hello\"", n, buf[:n], err)
		}
		if ua, ok := from.(*net.UDPAddr); !ok || ua.AddrPort() != p.A.AddrPort() {
			t.Fatalf("from = %#v", from)
		}
		// The truncated rest is gone: the next read gets the next datagram.
		p.A.WriteToUDPAddrPort([]byte("second"), p.B.AddrPort())
		n, ap, err := p.B.ReadFromUDPAddrPort(make([]byte, 100))
		if err != nil || n != 6 || ap != p.A.AddrPort() {
			t.Fatalf("ReadFromUDPAddrPort = %d %v %v", n, ap, err)
		}
		if _, err := p.A.WriteTo(make([]byte, MaxDatagram+1), p.B.LocalAddr()); !errors.Is(err, ErrMessageTooLong) {
			t.Errorf("oversized write: %v", err)
		}
		if _, err := p.A.WriteTo([]byte("x"), &net.TCPAddr{}); err == nil {
			t.Error("WriteTo a *net.TCPAddr succeeded")
		}
	})
}

func TestReadBufferOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{}, LinkConfig{})
		defer p.Close()
		p.B.SetReadBuffer(3000)
		send(t, p.A, p.B.LocalAddr(), 5, 1000, 0)
		if got := drain(t, p.B, time.Millisecond); len(got) != 3 {
			t.Fatalf("received %d, want 3", len(got))
		}
		if s, ns := p.B.Stats(), p.Net.Stats(); s.Overflow != 2 || ns.Overflow != 2 || s.Received != 3 || s.ReceivedBytes != 3000 {
			t.Errorf("conn stats %+v, net stats %+v", s, ns)
		}
		if s := p.A.Stats(); s.Sent != 5 || s.SentBytes != 5000 {
			t.Errorf("sender stats %+v", s)
		}
	})
}

func TestListen(t *testing.T) {
	n := New(1)
	defer n.Close()
	for _, bad := range []string{"10.0.0.1:1", "8.8.8.8:53", "198.20.0.1:1", "[2001:db8::1]:1", "nonsense"} {
		if c, err := n.Listen(bad); err == nil {
			c.Close()
			t.Errorf("Listen(%q) succeeded", bad)
		}
	}
	a, err := n.Listen("198.18.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.Listen("198.18.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if a.AddrPort().Port() == 0 || a.AddrPort() == b.AddrPort() {
		t.Errorf("ephemeral ports %v %v", a.AddrPort(), b.AddrPort())
	}
	if _, err := n.Listen(a.AddrPort().String()); err == nil {
		t.Error("binding a used address succeeded")
	}
	for _, ok := range []string{"127.0.0.1:7", "[::1]:7", "198.19.255.255:7", "[::ffff:198.18.0.9]:7"} {
		c, err := n.Listen(ok)
		if err != nil {
			t.Errorf("Listen(%q): %v", ok, err)
			continue
		}
		c.Close()
	}
	pc, err := n.ListenPacket("udp4", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	pc.Close()
	if _, err := n.ListenPacket("tcp", "127.0.0.2:0"); err == nil {
		t.Error("ListenPacket(tcp) succeeded")
	}
	n.Close()
	if _, err := n.Listen("198.18.0.1:5"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Listen on a closed Network: %v", err)
	}
	if _, _, err := a.ReadFrom(nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Network.Close left a Conn open: %v", err)
	}
}

func TestRoutePanics(t *testing.T) {
	n := New(1)
	for _, bad := range []string{"10.0.0.0/8", "x", "198.18.0.1/99"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Route(%q) did not panic", bad)
				}
			}()
			n.Route(bad, "198.18.0.1")
		}()
	}
}

// TestRealTime runs outside a bubble with concurrent readers and writers (for -race).
func TestRealTime(t *testing.T) {
	p := NewPair(1, LinkConfig{Delay: time.Millisecond, Jitter: time.Millisecond, Loss: 0.1, Duplicate: 0.1}, LinkConfig{})
	defer p.Close()
	const n = 2000
	var wg sync.WaitGroup
	got := make(chan int, 4)
	for range 4 {
		wg.Go(func() {
			k := 0
			buf := make([]byte, 100)
			for {
				if _, _, err := p.B.ReadFrom(buf); err != nil {
					got <- k
					return
				}
				k++
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range n / 2 {
				p.A.WriteToUDPAddrPort([]byte("0123456789"), p.B.AddrPort())
			}
		})
	}
	// Wait (bounded) until everything written has arrived and been read.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		if p.A.Stats().Sent == n && p.Net.Stats().InFlight == 0 && p.B.Stats().Received == p.AB.Stats().Delivered {
			break
		}
	}
	p.B.Close()
	wg.Wait()
	total := 0
	for range 4 {
		total += <-got
	}
	s := p.AB.Stats()
	if s.Sent != n || uint64(total) != s.Delivered || s.Delivered != n-s.DroppedLoss+s.Duplicated {
		t.Errorf("read %d; link stats %+v", total, s)
	}
}

func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	p := NewPair(1, LinkConfig{Rate: 1e12, Jitter: 0, Drop: DropUDTControl(UDTNAK)}, LinkConfig{})
	defer p.Close()
	b, buf := make([]byte, 1472), make([]byte, 2048)
	dst := p.B.LocalAddr()
	round := func() {
		p.A.WriteTo(b, dst)
		p.B.SetReadDeadline(time.Now().Add(time.Second))
		p.B.ReadFrom(buf)
	}
	for range 100 {
		round()
	}
	if a := testing.AllocsPerRun(1000, round); a > 0.05 {
		t.Errorf("%.2f allocations per datagram, want 0", a)
	}
}

func BenchmarkWriteRead(b *testing.B) {
	p := NewPair(1, LinkConfig{}, LinkConfig{})
	defer p.Close()
	pkt, buf := make([]byte, 1472), make([]byte, 2048)
	dst := netip.MustParseAddrPort(PairAddrB)
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	for b.Loop() {
		p.A.WriteToUDPAddrPort(pkt, dst)
		p.B.ReadFromUDPAddrPort(buf)
	}
}
