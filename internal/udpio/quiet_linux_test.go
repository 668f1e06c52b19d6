package udpio

import (
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// netpollRegistration returns the events of uc's registration with an epoll instance of this
// process (the runtime's: the test registers the socket nowhere else).
func netpollRegistration(t *testing.T, uc *net.UDPConn) uint32 {
	t.Helper()
	rc, _ := uc.SyscallConn()
	var fd int
	rc.Control(func(s uintptr) { fd = int(s) })
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "anon_inode:[eventpoll]" {
			continue
		}
		b, _ := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if ev, _, ok := parseRegistration(b, fd); ok {
			return ev
		}
	}
	t.Fatal("the socket is in no epoll instance")
	return 0
}

// TestQuietWrites checks that QuietWrites needs OwnWrites, takes EPOLLOUT and nothing else out of
// the runtime's registration, and that the socket then still sends (GSO and single datagrams)
// and receives, for both families.
func TestQuietWrites(t *testing.T) {
	for _, fam := range []struct{ network, loop string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		t.Run(fam.network, func(t *testing.T) {
			su := listen(t, fam.network, net.JoinHostPort(fam.loop, "0"))
			ru := listen(t, fam.network, net.JoinHostPort(fam.loop, "0"))
			s, r := New(su), New(ru)
			before := netpollRegistration(t, su)
			if before&^(unix.EPOLLERR|unix.EPOLLHUP) != netpollEvents {
				t.Fatalf("runtime registration %#x, want %#x: the runtime's netpoller changed", before, netpollEvents)
			}
			if s.QuietWrites() {
				t.Fatal("QuietWrites took effect without OwnWrites")
			}
			s.OwnWrites()
			if !s.QuietWrites() || !s.QuietWrites() { // the second call is a no-op
				t.Fatal("QuietWrites failed")
			}
			if after := netpollRegistration(t, su); after != before&^unix.EPOLLOUT {
				t.Fatalf("registration %#x after QuietWrites, want %#x", after, before&^unix.EPOLLOUT)
			}
			roundTrips(t, s, r, addrOf(ru, fam.loop), addrOf(su, fam.loop)) // quiet sender
			roundTrips(t, r, s, addrOf(su, fam.loop), addrOf(ru, fam.loop)) // quiet receiver
		})
	}
}

func TestQuietWritesEscapeHatch(t *testing.T) {
	t.Setenv("UDT_NETPOLL_WRITES", "1")
	su := listen(t, "udp4", "127.0.0.1:0")
	s := New(su)
	s.OwnWrites()
	if s.QuietWrites() {
		t.Fatal("QuietWrites took effect with UDT_NETPOLL_WRITES=1")
	}
	if ev := netpollRegistration(t, su); ev&unix.EPOLLOUT == 0 {
		t.Fatalf("registration %#x lost EPOLLOUT", ev)
	}
}

// eagain is a batchConn whose writes fail with EAGAIN while left > 0, and which fails any write
// that would wait in the netpoller (no MSG_DONTWAIT).
type eagain struct {
	batchConn
	left, calls int
}

func (e *eagain) WriteBatch(ms []ipv4.Message, flags int) (int, error) {
	e.calls++
	if flags&unix.MSG_DONTWAIT == 0 {
		return 0, errors.New("a write that may wait in the netpoller")
	}
	if e.left > 0 {
		e.left--
		return 0, &net.OpError{Op: "write", Net: "udp", Err: os.NewSyscallError("sendmmsg", unix.EAGAIN)}
	}
	return e.batchConn.WriteBatch(ms, flags)
}

// TestOwnedWritesWaitForRoom checks that an owned socket's write that finds the send buffer full
// waits for room itself and sends everything, and that closing the socket ends such a wait.
func TestOwnedWritesWaitForRoom(t *testing.T) {
	su := listen(t, "udp4", "127.0.0.1:0")
	ru := listen(t, "udp4", "127.0.0.1:0")
	s, r := New(su), New(ru)
	s.OwnWrites()
	fake := &eagain{batchConn: sys(t, s).x, left: 3}
	sys(t, s).x = fake
	bufs := contiguous(10, 1000, 1000, 7)
	if n, err := s.WriteBatch(bufs, addrOf(ru, "127.0.0.1")); n != len(bufs) || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(bufs))
	}
	if fake.calls != 4 {
		t.Fatalf("%d sendmmsg calls, want 3 refused and 1 sent", fake.calls)
	}
	for i, m := range readN(t, r, len(bufs), 2048) {
		check(t, m.Buf[:m.N], len(bufs[i]), 7, uint32(i))
	}

	fake.left = 1 << 30 // full for good
	go func() {
		time.Sleep(20 * time.Millisecond)
		su.Close()
	}()
	n, err := s.WriteBatch(bufs, addrOf(ru, "127.0.0.1"))
	if n != 0 || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteBatch on a full socket closed under it = %d, %v; want 0, net.ErrClosed", n, err)
	}
}

func TestParseRegistration(t *testing.T) {
	info := []byte("pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n" +
		"tfd:        3 events:       19 data:                0  pos:0 ino:2c63 sdev:f\n" +
		"tfd:        7 events: 8000201d data:     7f1c5e2a0b08  pos:0 ino:2c64 sdev:8\n" +
		"tfd:       12 events: zz data: 1 pos:0\n")
	for _, c := range []struct {
		fd     int
		events uint32
		data   uint64
		found  bool
	}{
		{3, 0x19, 0, true},
		{7, 0x8000201d, 0x7f1c5e2a0b08, true},
		{12, 0, 0, false}, // malformed
		{4, 0, 0, false},  // absent
	} {
		ev, d, ok := parseRegistration(info, c.fd)
		if ev != c.events || d != c.data || ok != c.found {
			t.Errorf("fd %d: %#x, %#x, %v; want %#x, %#x, %v", c.fd, ev, d, ok, c.events, c.data, c.found)
		}
	}
	if _, _, ok := parseRegistration([]byte("tfd: "+strconv.Itoa(1<<40)), 1); ok {
		t.Error("a truncated line parsed")
	}
}
