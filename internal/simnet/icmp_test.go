package simnet

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// Each MTUAction, fragmentable writes, and port-unreachable reports.
func TestMTUActions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPair(1, LinkConfig{MTU: 1000}, LinkConfig{})
		defer p.Close()
		big, small := seqPacket(1, 1001), seqPacket(2, 1000)
		head := make([]byte, 64)
		read := func() (int, bool) {
			p.B.SetReadDeadline(time.Now().Add(time.Second))
			n, _, err := p.B.ReadFromUDPAddrPort(make([]byte, 2048))
			return n, err == nil
		}

		// MTUDrop: a black hole above 1000 bytes, nothing reported.
		p.A.WriteToUDPAddrPort(big, p.B.AddrPort())
		p.A.WriteToUDPAddrPort(small, p.B.AddrPort())
		if n, ok := read(); !ok || n != 1000 {
			t.Fatalf("through MTU 1000: got %d bytes (%v), want only the 1000-byte one", n, ok)
		}
		if _, _, _, _, ok := p.A.ReadReport(head); ok {
			t.Fatal("a black hole reported")
		}

		// WriteFragmentable passes.
		if _, err := p.A.WriteFragmentable(big, p.B.AddrPort()); err != nil {
			t.Fatal(err)
		}
		if n, ok := read(); !ok || n != 1001 {
			t.Fatalf("fragmentable: got %d bytes (%v)", n, ok)
		}
		if st := p.AB.Stats(); st.DroppedMTU != 1 || st.Fragmented != 1 {
			t.Fatalf("link stats %+v", st)
		}

		// MTUReport: dropped and reported with the IP-level MTU and the datagram's head.
		p.AB.SetConfig(LinkConfig{MTU: 1000, MTUAction: MTUReport})
		p.A.WriteToUDPAddrPort(big, p.B.AddrPort())
		synctest.Wait()
		to, errno, mtu, n, ok := p.A.ReadReport(head)
		if !ok || to != p.B.AddrPort() || errno != syscall.EMSGSIZE || mtu != 1028 || string(head[:n]) != string(big[:64]) {
			t.Fatalf("report %v %v %v mtu %d head %d", ok, to, errno, mtu, n)
		}

		// MTUError: the write fails with EMSGSIZE; fragmentable writes still go.
		p.AB.SetConfig(LinkConfig{MTU: 1000, MTUAction: MTUError})
		if _, err := p.A.WriteToUDPAddrPort(big, p.B.AddrPort()); !errors.Is(err, syscall.EMSGSIZE) {
			t.Fatalf("write above MTUError's MTU: %v, want EMSGSIZE", err)
		}
		if _, err := p.A.WriteFragmentable(big, p.B.AddrPort()); err != nil {
			t.Fatal(err)
		}
		if n, ok := read(); !ok || n != 1001 {
			t.Fatalf("fragmentable through MTUError: %d bytes (%v)", n, ok)
		}

		// Port unreachable, once turned on.
		dead := netip.AddrPortFrom(p.B.AddrPort().Addr(), p.B.AddrPort().Port()+1)
		p.A.WriteToUDPAddrPort(small, dead)
		if _, _, _, _, ok := p.A.ReadReport(head); ok {
			t.Fatal("unreachable reported while off")
		}
		p.Net.SetUnreachableReports(true)
		p.A.WriteToUDPAddrPort(small, dead)
		synctest.Wait()
		if to, errno, _, _, ok := p.A.ReadReport(head); !ok || to != dead || errno != syscall.ECONNREFUSED {
			t.Fatalf("unreachable report %v %v %v", ok, to, errno)
		}
	})
}
