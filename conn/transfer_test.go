package conn

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// TestTransferSimnet moves 32 MiB byte-exact over the in-memory network at 0, 1, 5 and 20 %
// loss with reordering and duplication, in virtual time.
func TestTransferSimnet(t *testing.T) {
	size := int64(32 << 20)
	if testing.Short() {
		size = 4 << 20
	}
	for _, loss := range []float64{0, 0.01, 0.05, 0.20} {
		t.Run(fmt.Sprintf("loss=%g%%", loss*100), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				link := simnet.LinkConfig{
					Delay:      5 * time.Millisecond,
					Rate:       400e6,
					Overhead:   28,
					QueueBytes: 2 << 20,
					Loss:       loss,
					Reorder:    loss / 2,
					Duplicate:  loss / 2,
				}
				p := simnet.NewPair(uint64(loss*1000)+1, link, link)
				defer p.Close()
				// The test is of integrity, not speed: at 20 % loss, ten times BBR's 2 % loss
				// threshold, 32 MiB take 40–60 s of virtual time, as long as the default linger,
				// after which the close gives up and sends Shutdown.
				cfg := simConfig()
				cfg.Linger = 10 * time.Minute
				c, s := simConns(t, p, cfg)
				defer s.Close()
				start := time.Now()
				sendAndCheck(t, c, s, size, 1)
				el := time.Since(start)
				st := c.Stats()
				t.Logf("%d MiB in %v virtual: %.1f Mbit/s, sent %d retrans %d, NAKs recv %d",
					size>>20, el, float64(size)*8/el.Seconds()/1e6, st.PktSent, st.PktRetrans, st.PktRecvNAK)
			})
		})
	}
}

// TestISNWrap starts both directions 100 packets before 2^31−1, so the transfer crosses the
// wrap of the 31-bit sequence space.
func TestISNWrap(t *testing.T) {
	old := newISN
	newISN = func() uint32 { return 1<<31 - 100 }
	defer func() { newISN = old }()
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: time.Millisecond, Loss: 0.02, Reorder: 0.01}
		p := simnet.NewPair(7, link, link)
		defer p.Close()
		c, s := simConns(t, p, simConfig())
		if c.isn != 1<<31-100 {
			t.Fatalf("ISN %d", c.isn)
		}
		exchange(t, c, s, 4<<20)
		sendAndCheck(t, c, s, 1<<20, 3)
	})
}

// TestPeerSilent: a peer that goes silent is detected within IdleTimeout ± 10 %, and the error
// says so.
func TestPeerSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(3, simnet.LinkConfig{Delay: time.Millisecond}, simnet.LinkConfig{Delay: time.Millisecond})
		defer p.Close()
		cfg := simConfig()
		cfg.IdleTimeout = 5 * time.Second
		c, s := simConns(t, p, cfg)
		defer s.Close()
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if n, err := s.Read(buf); err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
		p.AB.SetDown(true)
		p.BA.SetDown(true)
		start := time.Now()
		_, err := c.Read(buf)
		el := time.Since(start)
		if !isTimeout(err) || !errors.Is(err, ErrPeerIdle) {
			t.Fatalf("Read error %v, want a timeout net.Error matching ErrPeerIdle", err)
		}
		if !within(el, cfg.IdleTimeout, 0.10) {
			t.Fatalf("peer declared dead after %v, want %v ± 10%%", el, cfg.IdleTimeout)
		}
		if _, err := c.Write([]byte("x")); !isTimeout(err) {
			t.Fatalf("Write after dead peer: %v", err)
		}
		c.Close()
	})
}
