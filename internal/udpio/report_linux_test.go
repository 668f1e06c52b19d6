package udpio

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// closedPort returns a loopback address on which nothing listens.
func closedPort(t *testing.T, network, loop string) netip.AddrPort {
	t.Helper()
	uc := listen(t, network, net.JoinHostPort(loop, "0"))
	ap := addrOf(uc, loop)
	uc.Close()
	return ap
}

// TestReportPortUnreachable sends to a closed loopback port with reports on: the kernel's ICMP
// port unreachable makes the next read fail with ECONNREFUSED, and ReadReports names the
// destination and quotes the datagram.
func TestReportPortUnreachable(t *testing.T) {
	for _, fam := range []struct{ network, loop string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		t.Run(fam.network, func(t *testing.T) {
			uc := listen(t, fam.network, net.JoinHostPort(fam.loop, "0"))
			c := New(uc)
			if !c.EnableReports() {
				t.Fatal("EnableReports failed on Linux")
			}
			dst := closedPort(t, fam.network, fam.loop)
			msg := []byte("udt handshake quoted back")
			if _, err := c.WriteBatch([][]byte{msg}, dst); err != nil {
				t.Fatal(err)
			}
			uc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := c.ReadBatch(newMsgs(4, 1500))
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("ReadBatch after an ICMP port unreachable: %v, want ECONNREFUSED", err)
			}
			rs := make([]Report, 4)
			n := c.ReadReports(rs)
			if n != 1 {
				t.Fatalf("ReadReports = %d, want 1", n)
			}
			r := rs[0]
			if r.To != dst || r.Errno != syscall.ECONNREFUSED || r.Local || r.MTU != 0 ||
				string(r.Head[:r.HeadLen]) != string(msg) {
				t.Fatalf("report %+v (head %q), want ECONNREFUSED from the network for %v quoting %q",
					r, r.Head[:r.HeadLen], dst, msg)
			}
			if n := c.ReadReports(rs); n != 0 {
				t.Fatalf("second ReadReports = %d, want 0 (queue drained)", n)
			}
		})
	}
}

// TestReportsOff: without EnableReports an unconnected socket hears nothing of the ICMP error.
func TestReportsOff(t *testing.T) {
	uc := listen(t, "udp4", "127.0.0.1:0")
	c := New(uc)
	if _, err := c.WriteBatch([][]byte{[]byte("x")}, closedPort(t, "udp4", "127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	uc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.ReadBatch(newMsgs(1, 100)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadBatch = %v, want the read deadline", err)
	}
	if n := c.ReadReports(make([]Report, 1)); n != 0 {
		t.Fatalf("ReadReports without EnableReports = %d", n)
	}
}

// TestMaxDatagram: the largest IPv4 UDP payload to loopback is its MTU (capped at the largest IP
// packet, 65535) less 28 bytes; the portable path does not know.
func TestMaxDatagram(t *testing.T) {
	uc := listen(t, "udp4", "127.0.0.1:0")
	c := New(uc)
	if !c.EnableDontFragment() {
		t.Fatal("EnableDontFragment failed on Linux")
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip(err)
	}
	if got, want := c.MaxDatagram(netip.MustParseAddrPort("127.0.0.1:9")), min(lo.MTU, 65535)-28; got != want {
		t.Errorf("MaxDatagram(127.0.0.1) = %d, want %d (lo MTU %d − 28)", got, want, lo.MTU)
	}
	if got := newConn(uc, options{portable: true}).MaxDatagram(netip.MustParseAddrPort("127.0.0.1:9")); got != 0 {
		t.Errorf("portable MaxDatagram = %d, want 0", got)
	}
	// A fragmentable send still arrives (loopback needs no fragments) and DF is back on after it.
	ru := listen(t, "udp4", "127.0.0.1:0")
	r := New(ru)
	if err := c.WriteFragmented(separate(3, 1400)[0], addrOf(ru, "127.0.0.1"), 1280); err != nil {
		t.Fatal(err)
	}
	got := readN(t, r, 1, 2048)
	check(t, got[0].Buf, 1400, 3, 0)
	var v int
	rc, _ := uc.SyscallConn()
	rc.Control(func(fd uintptr) { v, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER) })
	if err != nil || v != unix.IP_PMTUDISC_DO {
		t.Fatalf("IP_MTU_DISCOVER after WriteFragmented = %d, %v; want IP_PMTUDISC_DO", v, err)
	}
}

// extErr builds an IP_RECVERR control message.
func extErr(level, typ int32, errno uint32, origin uint8, info uint32) []byte {
	d := make([]byte, sizeofExtendedErr+16)
	binary.NativeEndian.PutUint32(d, errno)
	d[4] = origin
	binary.NativeEndian.PutUint32(d[8:], info)
	return cmsg(level, typ, d)
}

func TestParseExtendedErr(t *testing.T) {
	for _, c := range []struct {
		name  string
		oob   []byte
		errno syscall.Errno
		mtu   int
		local bool
		ok    bool
	}{
		{"port unreachable", extErr(unix.IPPROTO_IP, unix.IP_RECVERR, uint32(unix.ECONNREFUSED), unix.SO_EE_ORIGIN_ICMP, 0), unix.ECONNREFUSED, 0, false, true},
		{"frag needed", extErr(unix.IPPROTO_IP, unix.IP_RECVERR, uint32(unix.EMSGSIZE), unix.SO_EE_ORIGIN_ICMP, 1400), unix.EMSGSIZE, 1400, false, true},
		{"v6 too big", extErr(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, uint32(unix.EMSGSIZE), unix.SO_EE_ORIGIN_ICMP6, 1280), unix.EMSGSIZE, 1280, false, true},
		{"local", extErr(unix.IPPROTO_IP, unix.IP_RECVERR, uint32(unix.EMSGSIZE), unix.SO_EE_ORIGIN_LOCAL, 1500), unix.EMSGSIZE, 1500, true, true},
		{"timestamping", extErr(unix.IPPROTO_IP, unix.IP_RECVERR, uint32(unix.ENOMSG), 4, 0), 0, 0, false, false},
		{"huge mtu ignored", extErr(unix.IPPROTO_IP, unix.IP_RECVERR, uint32(unix.EMSGSIZE), unix.SO_EE_ORIGIN_ICMP, 1<<20), unix.EMSGSIZE, 0, false, true},
		{"other cmsg", cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespecBytes(1, 2)), 0, 0, false, false},
		{"short", extErr(unix.IPPROTO_IP, unix.IP_RECVERR, 1, 2, 3)[:unix.CmsgLen(8)], 0, 0, false, false},
		{"none", nil, 0, 0, false, false},
	} {
		errno, mtu, local, ok := parseExtendedErr(c.oob)
		if errno != c.errno || mtu != c.mtu || local != c.local || ok != c.ok {
			t.Errorf("%s: %v %d %v %v; want %v %d %v %v", c.name, errno, mtu, local, ok, c.errno, c.mtu, c.local, c.ok)
		}
	}
}

// FuzzParseExtendedErr: any control bytes decode without panicking to a sane report.
func FuzzParseExtendedErr(f *testing.F) {
	f.Add(extErr(unix.IPPROTO_IP, unix.IP_RECVERR, uint32(unix.EMSGSIZE), unix.SO_EE_ORIGIN_ICMP, 1400))
	f.Add(extErr(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, uint32(unix.ECONNREFUSED), unix.SO_EE_ORIGIN_ICMP6, 0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 11, 0, 0, 0})
	f.Fuzz(func(t *testing.T, oob []byte) {
		errno, mtu, _, ok := parseExtendedErr(oob)
		if !ok && (errno != 0 || mtu != 0) {
			t.Fatalf("not ok but %v %d", errno, mtu)
		}
		if ok && (errno == 0 || errno > 4095 || mtu < 0 || mtu > 65535 || (mtu != 0 && errno != unix.EMSGSIZE)) {
			t.Fatalf("report %v mtu %d", errno, mtu)
		}
	})
}

// TestReadReportsWhileReading: ReadReports returns while another goroutine waits in ReadBatch
// (the mux's reader always does). A read of the error queue through the descriptor's read lock
// waited for the reader, that is for a datagram, which from a dead peer never comes: a
// connection's timer goroutine hung there after a send failed with a report error.
func TestReadReportsWhileReading(t *testing.T) {
	uc := listen(t, "udp4", "127.0.0.1:0")
	c := New(uc)
	if !c.EnableReports() {
		t.Fatal("EnableReports failed on Linux")
	}
	readerDone := make(chan struct{})
	go func() { // the reader: reads until the socket closes, whatever errors come meanwhile
		defer close(readerDone)
		msgs := newMsgs(4, 1500)
		for {
			if _, err := c.ReadBatch(msgs); errors.Is(err, net.ErrClosed) {
				return
			}
		}
	}()
	defer func() { uc.Close(); <-readerDone }()
	time.Sleep(20 * time.Millisecond) // the reader waits in ReadBatch
	dst := closedPort(t, "udp4", "127.0.0.1")
	got := make(chan int, 1)
	go func() {
		rs := make([]Report, 4)
		n := 0
		for i := 0; i < 200 && n == 0; i++ {
			c.WriteBatch([][]byte{[]byte("probe")}, dst) // each draws a port unreachable
			time.Sleep(5 * time.Millisecond)
			n += c.ReadReports(rs)
		}
		got <- n
	}()
	select {
	case n := <-got:
		if n == 0 {
			t.Fatal("no report of the port unreachable")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadReports blocked while another goroutine was reading")
	}
}
