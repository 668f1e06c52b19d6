package udpio

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mode is one way of driving a Conn.
type mode struct {
	name string
	opt  options
}

var (
	sendModes = []mode{
		{"gso", options{noGRO: true}},
		{"mmsg", options{noGSO: true, noGRO: true}},
		{"portable", options{portable: true}},
	}
	recvModes = []mode{
		{"gro", options{noGSO: true}},
		{"mmsg", options{noGSO: true, noGRO: true}},
		{"portable", options{portable: true}},
	}
)

// listen opens a UDP socket on network ("udp4", "udp6" or "udp" for dual stack) and addr,
// skipping the test if the address family is unavailable.
func listen(t testing.TB, network, addr string) *net.UDPConn {
	t.Helper()
	uc, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		if network == "udp6" {
			t.Skipf("IPv6 loopback unavailable: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	return uc
}

// addrOf is uc's local address with the loopback address of its family filled in.
func addrOf(uc *net.UDPConn, loop string) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(loop), uc.LocalAddr().(*net.UDPAddr).AddrPort().Port())
}

// contiguous returns n buffers carved back to back from one array: n-1 of seg bytes and a last
// one of last bytes; each holds a pattern with (batch, index) in its first 8 bytes.
func contiguous(n, seg, last int, batch uint32) [][]byte {
	arr := make([]byte, (n-1)*seg+last)
	bufs := make([][]byte, n)
	for i := range bufs {
		l := seg
		if i == n-1 {
			l = last
		}
		b := arr[i*seg : i*seg+l : i*seg+l]
		fill(b, batch, uint32(i))
		bufs[i] = b
	}
	return bufs
}

// separate returns n separately allocated buffers of the given sizes, patterned as contiguous's.
func separate(batch uint32, sizes ...int) [][]byte {
	bufs := make([][]byte, len(sizes))
	for i, l := range sizes {
		bufs[i] = make([]byte, l)
		fill(bufs[i], batch, uint32(i))
	}
	return bufs
}

func fill(b []byte, batch, i uint32) {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:], batch)
	binary.BigEndian.PutUint32(hdr[4:], i)
	n := copy(b, hdr[:])
	for j := n; j < len(b); j++ {
		b[j] = byte(batch*7 + i*13 + uint32(j))
	}
}

// check verifies that got is the datagram fill(·, batch, i) of length want.
func check(t *testing.T, got []byte, want int, batch, i uint32) {
	t.Helper()
	exp := make([]byte, want)
	fill(exp, batch, i)
	if string(got) != string(exp) {
		t.Fatalf("datagram %d of batch %d: got %d bytes %x…, want %d bytes %x…",
			i, batch, len(got), got[:min(12, len(got))], want, exp[:min(12, want)])
	}
}

// newMsgs returns n Messages with buffers of size bytes each.
func newMsgs(n, size int) []Message {
	ms := make([]Message, n)
	for i := range ms {
		ms[i].Buf = make([]byte, size)
	}
	return ms
}

// readN reads exactly len(want) datagrams from c within a deadline and returns copies of them.
func readN(t *testing.T, c *Conn, count, bufSize int) []Message {
	t.Helper()
	c.pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.pc.SetReadDeadline(time.Time{})
	var out []Message
	msgs := newMsgs(16, bufSize)
	for len(out) < count {
		n, err := c.ReadBatch(msgs[:min(len(msgs), count-len(out))])
		if err != nil {
			t.Fatalf("ReadBatch after %d of %d datagrams: %v", len(out), count, err)
		}
		if n < 1 || n > len(msgs) {
			t.Fatalf("ReadBatch returned n = %d", n)
		}
		for _, m := range msgs[:n] {
			cp := m
			cp.Data = append([]byte(nil), m.Data...)
			cp.Buf = cp.Data // a copy: the Data of a GRO read is valid only until the next call
			out = append(out, cp)
		}
	}
	return out
}
