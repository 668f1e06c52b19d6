package udpio

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// A lazy-GRO socket reads with recvmmsg until a read finds a backlog of lazyGROBatch datagrams,
// then turns GRO on; datagrams sent as one GSO run before and after arrive intact either way.
func TestLazyGRO(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	r, w := NewLazyGRO(rx), New(tx)
	if _, gro, _ := r.Features(); gro {
		t.Fatal("lazy GRO socket starts with GRO on")
	}
	to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	const size, n = 1200, 40
	arena := make([]byte, size*n)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = arena[i*size : (i+1)*size]
		for j := range bufs[i] {
			bufs[i][j] = byte(i)
		}
	}
	msgs := make([]Message, 64)
	for i := range msgs {
		msgs[i].Buf = make([]byte, size+1)
	}
	rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	for round := range 3 {
		if _, err := w.WriteBatch(bufs, to); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // let the whole batch queue up
		got := 0
		for got < n {
			k, err := r.ReadBatch(msgs)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			for _, m := range msgs[:k] {
				if m.Truncated || !bytes.Equal(m.Data, bufs[got]) {
					t.Fatalf("round %d: datagram %d differs (len %d, truncated %v)", round, got, m.N, m.Truncated)
				}
				got++
			}
		}
	}
	if _, gro, _ := r.Features(); !gro {
		t.Fatal("GRO still off after bulk arrived")
	}
}
