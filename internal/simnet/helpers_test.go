package simnet

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// arrival is one received datagram: its sequence number (first 4 bytes), size and time.
type arrival struct {
	seq  uint32
	size int
	at   time.Time
	from net.Addr
}

// seqPacket returns a size-byte datagram carrying seq in its first 4 bytes.
func seqPacket(seq uint32, size int) []byte {
	b := make([]byte, max(size, 4))
	binary.BigEndian.PutUint32(b, seq)
	return b
}

// send writes count datagrams of size bytes to dst, spaced by gap (0: all at once). It may run
// on its own goroutine, so it reports failure with Errorf.
func send(t *testing.T, c *Conn, dst net.Addr, count, size int, gap time.Duration) {
	t.Helper()
	b := make([]byte, max(size, 4))
	for i := range count {
		binary.BigEndian.PutUint32(b, uint32(i))
		if _, err := c.WriteTo(b, dst); err != nil {
			t.Errorf("WriteTo %d: %v", i, err)
			return
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
}

// drain reads from c until it has been idle for idle, recording each arrival.
func drain(t *testing.T, c *Conn, idle time.Duration) []arrival {
	t.Helper()
	var out []arrival
	buf := make([]byte, 70000)
	for {
		c.SetReadDeadline(time.Now().Add(idle))
		n, from, err := c.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.SetReadDeadline(time.Time{})
			return out
		}
		if err != nil {
			t.Fatalf("ReadFrom: %v", err)
		}
		out = append(out, arrival{seq: binary.BigEndian.Uint32(buf), size: n, at: time.Now(), from: from})
	}
}

// inversions counts arrivals whose sequence number is below an earlier one's.
func inversions(a []arrival) int {
	n := 0
	var hi uint32
	for i, x := range a {
		if i > 0 && x.seq < hi {
			n++
		}
		hi = max(hi, x.seq)
	}
	return n
}
