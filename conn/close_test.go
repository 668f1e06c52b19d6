package conn

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// Close returns at once, before the data has arrived; the socket's goroutines deliver it all and
// then Shutdown, so the peer reads every byte and io.EOF.
func TestCloseReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 20 * time.Millisecond, Rate: 100e6, Overhead: 28, QueueBytes: 1 << 20, Loss: 0.01}
		p := simnet.NewPair(11, link, link)
		defer p.Close()
		c, s := simConns(t, p, simConfig())
		want := patternBytes(4 << 20)
		if _, err := c.Write(want); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 0 {
			t.Fatalf("Close took %v of virtual time, want none", el)
		}
		if st := c.Stats(); st.BytesWritten-uint64(st.SendBufferFree) == 0 && st.FlightSize == 0 {
			t.Fatal("nothing was left to deliver when Close returned: the test proves nothing")
		}
		got, err := io.ReadAll(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
		}
	})
}

// CloseContext returns nil once the peer has acknowledged everything: the data is in the peer's
// receive buffer, though its application has not read a byte yet.
func TestCloseContextAcknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 5 * time.Millisecond, Loss: 0.02}
		p := simnet.NewPair(12, link, link)
		defer p.Close()
		c, s := simConns(t, p, simConfig())
		want := patternBytes(1 << 20) // fits the default 11.9 MB receive buffer
		if _, err := c.Write(want); err != nil {
			t.Fatal(err)
		}
		if err := c.CloseContext(context.Background()); err != nil {
			t.Fatalf("CloseContext: %v", err)
		}
		if st := s.Stats(); st.BytesRead != 0 || st.BytesRecv < uint64(len(want)) {
			t.Fatalf("server read %d, received %d bytes; want 0 and %d", st.BytesRead, st.BytesRecv, len(want))
		}
		got, err := io.ReadAll(s)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
		}
		if err := c.CloseContext(context.Background()); err != nil {
			t.Fatalf("second CloseContext: %v", err)
		}
	})
}

// When the peer vanishes, CloseContext reports the bytes left unacknowledged once Config.Linger
// has passed, and says so; a context that ends first gives its own error, and the background
// delivery still ends at the linger.
func TestCloseContextUnacknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 5 * time.Millisecond}
		p := simnet.NewPair(13, link, link)
		defer p.Close()
		cfg := simConfig()
		cfg.Linger = 3 * time.Second
		cfg.IdleTimeout = time.Minute
		c, _ := simConns(t, p, cfg)
		p.AB.SetDown(true)
		p.BA.SetDown(true)
		if _, err := c.Write(make([]byte, 10000)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.CloseContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CloseContext with a 1 s context: %v", err)
		}
		err := c.CloseContext(context.Background())
		el := time.Since(start)
		var oe *net.OpError
		if !errors.As(err, &oe) || !errors.Is(err, ErrUnacknowledged) || !errors.Is(err, errLingerPassed) {
			t.Fatalf("CloseContext: %v, want ErrUnacknowledged (linger) in a *net.OpError", err)
		}
		// The linger, then 1 + 8 unanswered Shutdowns 2·RTT (≥ 20 ms) apart.
		if el < cfg.Linger || el > cfg.Linger+2*time.Second {
			t.Fatalf("CloseContext returned after %v, want the linger %v and the Shutdown re-sends", el, cfg.Linger)
		}
		t.Logf("%v after %v", err, el)
	})
}

// A negative Linger sends Shutdown at once: CloseContext reports the unsent bytes without waiting
// for anything but the Shutdown's answer.
func TestCloseNegativeLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 5 * time.Millisecond, Rate: 10e6, Overhead: 28, QueueBytes: 1 << 20}
		p := simnet.NewPair(14, link, link)
		defer p.Close()
		cfg := simConfig()
		cfg.Linger = -1
		c, s := simConns(t, p, cfg)
		if _, err := c.Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := c.CloseContext(context.Background())
		if !errors.Is(err, ErrUnacknowledged) || !errors.Is(err, errLingerPassed) {
			t.Fatalf("CloseContext: %v, want ErrUnacknowledged (linger)", err)
		}
		if want := "Config.Linger is negative (-1ns): Shutdown went at once"; !strings.Contains(err.Error(), want) {
			t.Errorf("CloseContext: %q, want it to contain %q", err, want)
		}
		if el := time.Since(start); el > 100*time.Millisecond {
			t.Fatalf("took %v", el)
		}
		if _, err := io.ReadAll(s); err != nil {
			t.Fatalf("the peer's read ended with %v, want io.EOF", err)
		}
	})
}

// A close whose linger passes with a hole in what the peer received: the peer reads every byte
// before the hole and then an error matching io.ErrUnexpectedEOF inside a *net.OpError, not
// io.EOF, so that io.Copy and io.ReadAll report the short stream.
func TestReadTruncatedAfterLinger(t *testing.T) {
	old := newISN
	newISN = func() uint32 { return 1000 }
	defer func() { newISN = old }()
	synctest.Test(t, func(t *testing.T) {
		const hole = 1005 // every copy of the client's data packet 1005 is lost
		ab := simnet.LinkConfig{Delay: 5 * time.Millisecond, Drop: func(b []byte) bool {
			return len(b) >= 16 && b[0]&0x80 == 0 && uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3]) == hole
		}}
		p := simnet.NewPair(14, ab, simnet.LinkConfig{Delay: 5 * time.Millisecond})
		defer p.Close()
		cfg := simConfig()
		cfg.Linger = 2 * time.Second
		c, s := simConns(t, p, cfg)
		src := patternBytes(200_000)
		if _, err := c.Write(src); err != nil {
			t.Fatal(err)
		}
		if err := c.CloseContext(context.Background()); !errors.Is(err, ErrUnacknowledged) {
			t.Fatalf("CloseContext: %v, want ErrUnacknowledged", err)
		}
		got, err := io.ReadAll(s)
		var oe *net.OpError
		if !errors.As(err, &oe) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ReadAll after %d bytes: %v, want io.ErrUnexpectedEOF inside a *net.OpError", len(got), err)
		}
		if len(got) == 0 || !bytes.Equal(got, src[:len(got)]) || len(got) >= len(src) {
			t.Fatalf("read %d bytes of %d, want a correct prefix", len(got), len(src))
		}
		t.Logf("read %d of %d bytes, then %v", len(got), len(src), err)
	})
}
