package conn

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/udprelay"
)

// TestTransferUDP moves 32 MiB byte-exact over real UDP loopback through a relay that loses
// 0, 1, 5 and 20 % of the datagrams each way and reorders and duplicates some. What is under
// test is reliability, not congestion control: at 5 and 20 % loss UDT's native controller
// (which takes every random loss for congestion, spec §5.3) would need minutes, so those cases
// send at a fixed 200 Mbit/s.
func TestTransferUDP(t *testing.T) {
	size := int64(32 << 20)
	if testing.Short() {
		size = 4 << 20
	}
	for _, loss := range []float64{0, 0.01, 0.05, 0.20} {
		t.Run(fmt.Sprintf("loss=%g%%", loss*100), func(t *testing.T) {
			cfg := &Config{IdleTimeout: 30 * time.Second}
			if loss >= 0.05 {
				cfg.Congestion = congestion.FixedFactory(200e6)
			}
			ln, err := Listen("udp", "127.0.0.1:0", cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			imp := udprelay.Impairment{Loss: loss, Reorder: loss / 2, ReorderPackets: 3, Duplicate: loss / 2}
			relay, err := udprelay.New(ln.Addr().String(), udprelay.Config{Seed: 1, ToServer: imp, ToClient: imp})
			if err != nil {
				t.Fatal(err)
			}
			defer relay.Close()
			c, s := dialAccept(t, ln, "udp", relay.Addr().String(), cfg)
			defer c.Close()
			defer s.Close()
			start := time.Now()
			sendAndCheck(t, c, s, size, 6)
			el := time.Since(start)
			st := c.Stats()
			rs := relay.Stats()
			t.Logf("%d MiB in %v: %.0f Mbit/s; sent %d, retransmitted %d, relay dropped %d/%d",
				size>>20, el.Round(time.Millisecond), float64(size)*8/el.Seconds()/1e6, st.PktSent, st.PktRetrans,
				rs.ToServer.Dropped(), rs.ToClient.Dropped())
		})
	}
}

// TestIPv6Loopback connects over ::1 with network "udp6" and moves 1 MiB.
func TestIPv6Loopback(t *testing.T) {
	ln, err := Listen("udp6", "[::1]:0", nil)
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer ln.Close()
	c, s := dialAccept(t, ln, "udp6", ln.Addr().String(), nil)
	defer c.Close()
	defer s.Close()
	if got := c.RemoteAddr().(*net.UDPAddr).IP; !got.Equal(net.IPv6loopback) {
		t.Fatalf("remote address %v", got)
	}
	sendAndCheck(t, c, s, 1<<20, 8)
}

// TestDialLocalAddr: a dialed connection's LocalAddr is the source address the OS routes to the
// peer from, as net.DialUDP's is, for network "udp" too: 127.0.0.1 or ::1, never the wildcard
// (which for "udp" was [::] even to an IPv4 peer).
func TestDialLocalAddr(t *testing.T) {
	for _, tc := range []struct{ network, listen string }{
		{"udp", "127.0.0.1:0"}, {"udp4", "127.0.0.1:0"}, {"udp", "[::1]:0"}, {"udp6", "[::1]:0"},
	} {
		t.Run(tc.network+"/"+tc.listen, func(t *testing.T) {
			ln, err := Listen(tc.network, tc.listen, nil)
			if err != nil {
				t.Skipf("no such loopback here: %v", err)
			}
			defer ln.Close()
			c, s := dialAccept(t, ln, tc.network, ln.Addr().String(), nil)
			defer c.Close()
			defer s.Close()
			la, ra := c.LocalAddr().(*net.UDPAddr), c.RemoteAddr().(*net.UDPAddr)
			if !la.IP.Equal(ra.IP) || la.Port == 0 {
				t.Fatalf("LocalAddr %v, want the loopback address %v and a port", la, ra.IP)
			}
			if got := s.RemoteAddr().(*net.UDPAddr); got.Port != la.Port {
				t.Fatalf("the server sees the client at %v, its LocalAddr says %v", got, la)
			}
			sendAndCheck(t, c, s, 64<<10, 8)
		})
	}
}

// TestDialUnspecified: as with package net, dialing the unspecified address (a wildcard
// Listener's own Addr, "0.0.0.0:port") reaches the local system; the answer, which comes from
// loopback, is not taken for a stranger's.
func TestDialUnspecified(t *testing.T) {
	for _, tc := range []struct{ network, listen, dial string }{
		{"udp", "127.0.0.1:0", "0.0.0.0"}, {"udp4", ":0", "0.0.0.0"}, {"udp", ":0", "::"}, {"udp6", "[::1]:0", "::"},
	} {
		t.Run(tc.network+"/"+tc.listen+"/"+tc.dial, func(t *testing.T) {
			ln, err := Listen(tc.network, tc.listen, nil)
			if err != nil {
				t.Skipf("no such socket here: %v", err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.UDPAddr).Port
			c, s := dialAccept(t, ln, tc.network, net.JoinHostPort(tc.dial, fmt.Sprint(port)), &Config{HandshakeTimeout: 2 * time.Second})
			defer c.Close()
			defer s.Close()
			if ra := c.RemoteAddr().(*net.UDPAddr); !ra.IP.IsLoopback() || ra.Port != port {
				t.Fatalf("RemoteAddr %v, want a loopback address and port %d", ra, port)
			}
			sendAndCheck(t, c, s, 64<<10, 8)
		})
	}
}

// TestDialErrors: bad networks and addresses fail at once with a *net.OpError.
func TestDialErrors(t *testing.T) {
	for _, tc := range []struct{ network, addr string }{
		{"tcp", "127.0.0.1:1"},
		{"udp", "no-port"},
		{"udp4", "[::1]:9000"},
	} {
		_, err := Dial(tc.network, tc.addr, nil)
		var oe *net.OpError
		if !errors.As(err, &oe) {
			t.Errorf("Dial(%q, %q) = %v, want a *net.OpError", tc.network, tc.addr, err)
		}
	}
	if _, err := Dial("udp", "127.0.0.1:1", &Config{MSS: 10}); err == nil {
		t.Error("MSS 10 accepted")
	}
}

// TestUseAfterClose: Read and Write after Close fail with net.ErrClosed inside a *net.OpError,
// even with a deadline in the past (as package net does); Close is idempotent.
func TestUseAfterClose(t *testing.T) {
	c, s, ln := loopbackPair(t, nil)
	defer ln.Close()
	defer s.Close()
	c.SetDeadline(time.Unix(1, 0))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, op := range []func() error{
		func() error { _, err := c.Read(make([]byte, 8)); return err },
		func() error { _, err := c.Write([]byte("x")); return err },
	} {
		err := op()
		var oe *net.OpError
		if !errors.As(err, &oe) || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("after Close: %v, want net.ErrClosed in a *net.OpError", err)
		}
	}
}
