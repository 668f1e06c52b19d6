package udpio

import (
	"net"
	"testing"
	"time"
)

// Datagrams that find the receive buffer full are counted, and the count reads back.
func TestSocketDrops(t *testing.T) {
	rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetReadBuffer(1) // the kernel's minimum (a few KiB)
	d0, rcvbuf, ok := SocketDrops(rc)
	if !ok || d0 != 0 || rcvbuf <= 0 || rcvbuf > 64<<10 {
		t.Fatalf("fresh socket: drops %d, rcvbuf %d, ok %v", d0, rcvbuf, ok)
	}
	sc, err := net.DialUDP("udp", nil, rc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	b := make([]byte, 1400)
	const sent = 200
	for range sent {
		sc.Write(b)
	}
	time.Sleep(10 * time.Millisecond) // loopback delivers within the write, but give softirq a moment
	d, _, _ := SocketDrops(rc)
	rc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	read := 0
	for {
		if _, _, err := rc.ReadFrom(b); err != nil {
			break
		}
		read++
	}
	t.Logf("rcvbuf %d bytes: %d sent, %d read, %d dropped", rcvbuf, sent, read, d)
	if d == 0 || int(d)+read != sent {
		t.Fatalf("%d dropped + %d read, want %d", d, read, sent)
	}
	if _, _, ok := SocketDrops(fakeConn{}); ok {
		t.Fatal("a non-UDP PacketConn has a drop counter")
	}
}

type fakeConn struct{ net.PacketConn }
