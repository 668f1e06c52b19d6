package udprelay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/udtgo/udt/internal/simnet"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes every datagram and records the sequence numbers (first 4 bytes) it saw.
type echoServer struct {
	conn *net.UDPConn
	wg   sync.WaitGroup
	mu   sync.Mutex
	seqs []uint32
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	s := &echoServer{conn: c}
	s.wg.Go(func() {
		buf := make([]byte, 1<<16)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if n >= 4 {
				s.mu.Lock()
				s.seqs = append(s.seqs, binary.BigEndian.Uint32(buf))
				s.mu.Unlock()
			}
			c.WriteToUDPAddrPort(buf[:n], from)
		}
	})
	t.Cleanup(func() { c.Close(); s.wg.Wait() })
	return s
}

func (s *echoServer) addr() string { return s.conn.LocalAddr().String() }

func (s *echoServer) received() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.seqs...)
}

func newRelay(t *testing.T, server string, cfg Config) *Relay {
	t.Helper()
	r, err := New(server, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func dialClient(t *testing.T, r *Relay) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange sends count numbered datagrams of size bytes in batches of 50, collecting echoes
// until the line has been quiet for quiet, and returns the echoed sequence numbers in order.
// It waits (bounded) for the relay to have read each batch, so that no socket buffer overflows
// on a slow machine.
func exchange(t *testing.T, r *Relay, c *net.UDPConn, count, size int, quiet time.Duration) []uint32 {
	t.Helper()
	var got []uint32
	buf, pkt := make([]byte, 1<<16), make([]byte, size)
	read := func(idle time.Duration) {
		for {
			c.SetReadDeadline(time.Now().Add(idle))
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if n != size {
				t.Errorf("echo of %d bytes, want %d", n, size)
			}
			got = append(got, binary.BigEndian.Uint32(buf))
		}
	}
	for i := 0; i < count; i++ {
		binary.BigEndian.PutUint32(pkt, uint32(i))
		if _, err := c.Write(pkt); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			base := r.Stats().ToServer.Received
			for end := time.Now().Add(5 * time.Second); base < uint64(i+1) && time.Now().Before(end); {
				read(time.Millisecond)
				base = r.Stats().ToServer.Received
			}
			read(time.Millisecond)
		}
	}
	read(quiet)
	return got
}

func TestForwarding(t *testing.T) {
	srv := newEchoServer(t)
	r := newRelay(t, srv.addr(), Config{})
	c1, c2 := dialClient(t, r), dialClient(t, r)
	for i, c := range []*net.UDPConn{c1, c2} {
		msg := []byte{byte(i), 'h', 'i', '!'}
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 100)
		n, err := c.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("client %d: echo %q, %v", i, buf[:n], err)
		}
	}
	if n := r.Clients(); n != 2 {
		t.Errorf("Clients() = %d, want 2", n)
	}
	got := exchange(t, r, c1, 500, 1200, 200*time.Millisecond)
	if len(got) != 500 {
		t.Fatalf("perfect relay echoed %d of 500", len(got))
	}
	s := r.Stats()
	if s.ToServer.Forwarded != 502 || s.ToClient.Forwarded != 502 || s.ToServer.Dropped() != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestLoss(t *testing.T) {
	srv := newEchoServer(t)
	r := newRelay(t, srv.addr(), Config{Seed: 1, ToServer: Impairment{Loss: 0.1}})
	c := dialClient(t, r)
	const n = 3000
	got := exchange(t, r, c, n, 100, 200*time.Millisecond)
	s := r.Stats().ToServer
	if s.Received != n {
		t.Skipf("the kernel dropped %d datagrams before the relay: loopback overloaded", n-s.Received)
	}
	// Binomial(3000, 0.1): σ ≈ 0.0055; 4σ ≈ 0.022.
	if rate := float64(s.DroppedLoss) / n; math.Abs(rate-0.1) > 0.022 {
		t.Errorf("loss %.4f, want 0.1 ± 0.022", rate)
	}
	if uint64(len(srv.received())) != s.Forwarded || uint64(len(got)) != s.Forwarded {
		t.Errorf("server saw %d, client got %d, relay forwarded %d", len(srv.received()), len(got), s.Forwarded)
	}
	// The same seed and arrival order give the same losses.
	r2 := newRelay(t, srv.addr(), Config{Seed: 1, ToServer: Impairment{Loss: 0.1}})
	exchange(t, r2, dialClient(t, r2), n, 100, 200*time.Millisecond)
	if s2 := r2.Stats().ToServer; s2.Received == n && s2.DroppedLoss != s.DroppedLoss {
		t.Errorf("same seed: %d then %d losses", s.DroppedLoss, s2.DroppedLoss)
	}
}

func inversions(seqs []uint32) int {
	n := 0
	var hi uint32
	for i, s := range seqs {
		if i > 0 && s < hi {
			n++
		}
		hi = max(hi, s)
	}
	return n
}

func TestReorderByPackets(t *testing.T) {
	srv := newEchoServer(t)
	r := newRelay(t, srv.addr(), Config{Seed: 2, ToServer: Impairment{Reorder: 0.05, ReorderPackets: 3}})
	got := exchange(t, r, dialClient(t, r), 1000, 100, 300*time.Millisecond)
	seen := srv.received()
	if len(seen) != 1000 || len(got) != 1000 {
		t.Fatalf("server saw %d, client got %d of 1000: reordering must not lose", len(seen), len(got))
	}
	s := r.Stats().ToServer
	if s.Reordered < 25 || s.Reordered > 80 {
		t.Errorf("Reordered %d, want ≈ 50", s.Reordered)
	}
	if inv := inversions(seen); inv < int(s.Reordered)/2 {
		t.Errorf("%d inversions for %d held datagrams", inv, s.Reordered)
	}
	// A held datagram is overtaken by exactly 3 later ones unless another is held too.
	pos := make(map[uint32]int)
	for i, q := range seen {
		pos[q] = i
	}
	late := 0
	for q, i := range pos {
		if i-int(q) == 3 {
			late++
		}
	}
	if late < int(s.Reordered)/2 {
		t.Errorf("only %d datagrams arrived exactly 3 places late, %d held", late, s.Reordered)
	}
}

func TestDelayAndReorderByTime(t *testing.T) {
	srv := newEchoServer(t)
	r := newRelay(t, srv.addr(), Config{Seed: 3,
		ToServer: Impairment{Delay: 20 * time.Millisecond},
		ToClient: Impairment{Reorder: 0.2, ReorderDelay: 3 * time.Millisecond}})
	c := dialClient(t, r)
	start := time.Now()
	c.Write([]byte("ping"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 20*time.Millisecond {
		t.Errorf("round trip %v shorter than the 20 ms one-way delay", rtt)
	}
	got := exchange(t, r, c, 500, 100, 300*time.Millisecond)
	if len(got) != 500 {
		t.Fatalf("got %d of 500", len(got))
	}
	if s := r.Stats().ToClient; s.Reordered == 0 || inversions(got) == 0 {
		t.Errorf("Reordered %d, inversions %d: nothing reordered", s.Reordered, inversions(got))
	}
}

func TestDuplicateAndRule(t *testing.T) {
	srv := newEchoServer(t)
	nak := func(b []byte) bool { return len(b) >= 16 && b[0] == 0x80 && b[1] == 3 }
	r := newRelay(t, srv.addr(), Config{Seed: 4,
		ToServer: Impairment{Duplicate: 0.1, Drop: simnet.DropUDTControl(simnet.UDTNAK)},
		ToClient: Impairment{Drop: nak}})
	c := dialClient(t, r)
	got := exchange(t, r, c, 1000, 100, 200*time.Millisecond)
	s := r.Stats().ToServer
	if s.Duplicated < 60 || s.Duplicated > 140 || len(got) != 1000+int(s.Duplicated) {
		t.Errorf("Duplicated %d, echoes %d", s.Duplicated, len(got))
	}
	pkt := make([]byte, 20)
	pkt[0], pkt[1] = 0x80, 3 // a UDT NAK header
	c.Write(pkt)
	pkt[1] = 2 // an ACK
	c.Write(pkt)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	if n, err := c.Read(buf); err != nil || n != 20 || buf[1] != 2 {
		t.Fatalf("expected only the ACK back, got %x %v", buf[:n], err)
	}
	if s := r.Stats().ToServer; s.DroppedRule != 1 {
		t.Errorf("DroppedRule %d, want 1", s.DroppedRule)
	}
}

func TestBlackholeAndSetImpairment(t *testing.T) {
	srv := newEchoServer(t)
	r := newRelay(t, srv.addr(), Config{ToClient: Impairment{Loss: 1}})
	c := dialClient(t, r)
	if got := exchange(t, r, c, 50, 10, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("blackholed direction delivered %d", len(got))
	}
	if n := len(srv.received()); n != 50 {
		t.Fatalf("server saw %d of 50", n)
	}
	r.SetImpairment(Impairment{}, Impairment{})
	if got := exchange(t, r, c, 50, 10, 100*time.Millisecond); len(got) != 50 {
		t.Fatalf("restored relay delivered %d of 50", len(got))
	}
}

func TestMaxClients(t *testing.T) {
	srv := newEchoServer(t)
	r := newRelay(t, srv.addr(), Config{MaxClients: 1})
	exchange(t, r, dialClient(t, r), 1, 10, 100*time.Millisecond)
	if got := exchange(t, r, dialClient(t, r), 1, 10, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("second client served beyond MaxClients")
	}
	if s := r.Stats().ToServer; s.Errors != 1 {
		t.Errorf("Errors %d, want 1", s.Errors)
	}
}

func TestNewErrorsAndClose(t *testing.T) {
	for _, bad := range []string{"8.8.8.8:53", "localhost:53", "nonsense", "10.1.1.1:1"} {
		if r, err := New(bad, Config{}); err == nil {
			r.Close()
			t.Errorf("New(%q) succeeded", bad)
		}
	}
	if r, err := New("127.0.0.1:9", Config{Listen: "0.0.0.0:0"}); err == nil {
		r.Close()
		t.Error("listening on 0.0.0.0 accepted")
	}
	srv := newEchoServer(t)
	r, err := New(srv.addr(), Config{ToServer: Impairment{Delay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	c := dialClient(t, r)
	c.Write([]byte("held for an hour"))
	for r.Stats().ToServer.Received == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	// goleak in TestMain checks that the readers and the delay line are gone.
}
