package udprelay

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"
)

// arrivalServer records when each datagram (sequence number in its first 4 bytes) arrives.
type arrivalServer struct {
	conn *net.UDPConn
	wg   sync.WaitGroup
	mu   sync.Mutex
	at   []time.Time
	seq  []uint32
}

func newArrivalServer(t *testing.T) *arrivalServer {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	s := &arrivalServer{conn: c}
	s.wg.Go(func() {
		buf := make([]byte, 1<<16)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if n >= 4 {
				s.mu.Lock()
				s.at = append(s.at, time.Now())
				s.seq = append(s.seq, binary.BigEndian.Uint32(buf))
				s.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { c.Close(); s.wg.Wait() })
	return s
}

func (s *arrivalServer) arrivals() ([]time.Time, []uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...), append([]uint32(nil), s.seq...)
}

// waitArrivals waits (bounded) until n datagrams arrived or the line has been quiet for quiet.
func (s *arrivalServer) waitArrivals(n int, quiet time.Duration) {
	last, seen := time.Now(), 0
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		at, _ := s.arrivals()
		if len(at) >= n {
			return
		}
		if len(at) != seen {
			seen, last = len(at), time.Now()
		} else if time.Since(last) > quiet {
			return
		}
	}
}

// blast sends count datagrams of size bytes, numbered, as fast as the socket takes them, and
// returns when it started and how long the writes took.
func blast(t *testing.T, c *net.UDPConn, count, size int) (time.Time, time.Duration) {
	t.Helper()
	pkt := make([]byte, size)
	start := time.Now()
	for i := range count {
		binary.BigEndian.PutUint32(pkt, uint32(i))
		if _, err := c.Write(pkt); err != nil {
			t.Fatal(err)
		}
	}
	return start, time.Since(start)
}

// A 10 Mbit/s rate passes 1250-byte datagrams (with 0 overhead: 1 ms each) no faster than the
// rate: the k-th arrives no earlier than (k+1) ms after the first was sent, in order, none lost
// behind a queue that holds them all.
func TestRateNeverExceeded(t *testing.T) {
	srv := newArrivalServer(t)
	const n, size = 150, 1250
	r := newRelay(t, srv.conn.LocalAddr().String(), Config{ToServer: Impairment{Rate: 10e6, QueueBytes: n * size}})
	c := dialClient(t, r)
	start, _ := blast(t, c, n, size)
	srv.waitArrivals(n, 500*time.Millisecond)
	at, seq := srv.arrivals()
	if st := r.Stats().ToServer; st.Received != n {
		t.Skipf("the kernel dropped %d datagrams before the relay: loopback overloaded", n-int(st.Received))
	}
	if len(at) != n {
		t.Fatalf("%d of %d arrived; relay %+v", len(at), n, r.Stats().ToServer)
	}
	for k := range at {
		if seq[k] != uint32(k) {
			t.Fatalf("arrival %d is datagram %d: the rate reordered", k, seq[k])
		}
		if min := start.Add(time.Duration(k+1) * time.Millisecond); at[k].Before(min) {
			t.Fatalf("datagram %d arrived %v after the first was sent, before its %v at 10 Mbit/s", k, at[k].Sub(start), min.Sub(start))
		}
	}
	t.Logf("last of %d arrived %v after the first was sent (the rate alone: %v)", n, at[n-1].Sub(start), n*time.Millisecond)
}

// Behind a 20-datagram queue, a burst sent faster than the rate loses what does not fit: every
// datagram is either forwarded or counted as a queue drop, the queue never held more than its
// limit, and no more were forwarded than the queue plus what the rate passed while the burst
// was written.
func TestRateQueueDrops(t *testing.T) {
	srv := newArrivalServer(t)
	const n, size, q = 150, 1000, 20
	r := newRelay(t, srv.conn.LocalAddr().String(), Config{ToServer: Impairment{Rate: 8e6, QueueBytes: q * size}})
	c := dialClient(t, r)
	_, took := blast(t, c, n, size)
	srv.waitArrivals(n, 300*time.Millisecond)
	st := r.Stats().ToServer
	if st.Received != n {
		t.Skipf("the kernel dropped %d datagrams before the relay: loopback overloaded", n-int(st.Received))
	}
	if st.Forwarded+st.DroppedQueue != n || st.DroppedQueue == 0 {
		t.Errorf("forwarded %d + queue drops %d, want %d with some drops", st.Forwarded, st.DroppedQueue, n)
	}
	if st.MaxQueuedBytes > q*size {
		t.Errorf("queue held %d bytes, limit %d", st.MaxQueuedBytes, q*size)
	}
	if passed := q + int(took/time.Millisecond) + 1; int(st.Forwarded) > passed {
		t.Errorf("forwarded %d, more than the queue (%d) and the rate's 1 per ms over %v", st.Forwarded, q, took)
	}
}

// A 5 ms coarse release bunches datagrams sent every 2 ms into bursts on its ticks: far fewer
// bursts (arrivals more than 1 ms apart start a new one) than sending spells, none lost, in
// order.
func TestReleaseEvery(t *testing.T) {
	srv := newArrivalServer(t)
	const spells, per = 10, 5
	r := newRelay(t, srv.conn.LocalAddr().String(), Config{ToServer: Impairment{ReleaseEvery: 5 * time.Millisecond}})
	c := dialClient(t, r)
	pkt := make([]byte, 200)
	start := time.Now()
	for i := range spells * per {
		binary.BigEndian.PutUint32(pkt, uint32(i))
		c.Write(pkt)
		if i%per == per-1 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	took := time.Since(start)
	srv.waitArrivals(spells*per, 300*time.Millisecond)
	at, seq := srv.arrivals()
	if len(at) != spells*per {
		t.Fatalf("%d of %d arrived", len(at), spells*per)
	}
	bursts := 1
	for k := 1; k < len(at); k++ {
		if seq[k] < seq[k-1] {
			t.Fatalf("datagram %d after %d: the release reordered", seq[k], seq[k-1])
		}
		if at[k].Sub(at[k-1]) > time.Millisecond {
			bursts++
		}
	}
	ticks := int(took/(5*time.Millisecond)) + 2
	t.Logf("%d spells over %v arrived in %d bursts (at most %d ticks)", spells, took.Round(time.Millisecond), bursts, ticks)
	if bursts > ticks || (took > spells*3*time.Millisecond && bursts > spells/2+2) {
		t.Errorf("%d bursts for %d sending spells over %v: not released on 5 ms ticks", bursts, spells, took)
	}
}

func TestNextTick(t *testing.T) {
	base := time.Now()
	for _, c := range []struct{ in, want time.Duration }{
		{0, 0}, {1, time.Millisecond}, {time.Millisecond, time.Millisecond}, {time.Millisecond + 1, 2 * time.Millisecond},
	} {
		if got := nextTick(base.Add(c.in), base, time.Millisecond).Sub(base); got != c.want {
			t.Errorf("nextTick(+%v) = +%v, want +%v", c.in, got, c.want)
		}
	}
}
