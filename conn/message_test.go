package conn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

func msgConfig() *Config {
	c := simConfig()
	c.MessageMode = true
	return c
}

// randomMessages returns n messages of 1 B to max bytes (a third of them small).
func randomMessages(seed uint64, n, max int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 5))
	out := make([][]byte, n)
	for i := range out {
		size := 1 + r.IntN(max)
		if r.IntN(3) == 0 {
			size = 1 + r.IntN(1500)
		}
		out[i] = make([]byte, size)
		for j := range out[i] {
			out[i][j] = byte(r.Uint32())
		}
	}
	return out
}

// readMessages reads messages from c until want of them arrived (or an error), checking each is
// one whole message written (SHA-256) and none arrives twice.
func readMessages(t *testing.T, c *Conn, msgs [][]byte, want int) (got map[int]bool, err error) {
	t.Helper()
	index := map[[32]byte]int{}
	for i, m := range msgs {
		index[sha256.Sum256(m)] = i
	}
	got = map[int]bool{}
	buf := make([]byte, 1<<20)
	for len(got) < want {
		n, err := c.ReadMessage(buf)
		if err != nil {
			return got, err
		}
		i, ok := index[sha256.Sum256(buf[:n])]
		if !ok {
			t.Fatalf("read %d bytes that are not one message written", n)
		}
		if got[i] {
			t.Fatalf("message %d delivered twice", i)
		}
		got[i] = true
	}
	return got, nil
}

// Messages up to 64 KiB through loss, reordering and duplication: each arrives once and whole.
func TestMessageConnLossy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := simnet.LinkConfig{Delay: 5 * time.Millisecond, Loss: 0.03, Duplicate: 0.02, Reorder: 0.05}
		p := simnet.NewPair(1, l, l)
		defer p.Close()
		cli, srv := simConns(t, p, msgConfig())
		msgs := randomMessages(1, 300, 64<<10)
		go func() {
			for i, m := range msgs {
				if err := cli.WriteMessage(m, 0, i%2 == 0); err != nil {
					t.Errorf("write %d: %v", i, err)
					return
				}
			}
		}()
		if _, err := readMessages(t, srv, msgs, len(msgs)); err != nil {
			t.Fatal(err)
		}
		st := srv.Stats()
		if st.PktRcvLoss == 0 || st.Drops.Duplicate == 0 || st.Messages.Read != uint64(len(msgs)) {
			t.Fatalf("losses %d, duplicates %d, messages read %d", st.PktRcvLoss, st.Drops.Duplicate, st.Messages.Read)
		}
	})
}

// Read and Write are one message each (net.Conn over messages); a buffer too small for the next
// message is an error that says so, and the message stays queued.
func TestMessageConnReadWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(2, simnet.LinkConfig{Delay: time.Millisecond}, simnet.LinkConfig{Delay: time.Millisecond})
		defer p.Close()
		cli, srv := simConns(t, p, msgConfig())
		a, b := bytes.Repeat([]byte("a"), 5000), []byte("bb")
		if n, err := cli.Write(a); n != len(a) || err != nil {
			t.Fatal(n, err)
		}
		if _, err := cli.Write(b); err != nil {
			t.Fatal(err)
		}
		small := make([]byte, 100)
		_, err := srv.Read(small)
		var se *ShortBufferError
		if !errors.As(err, &se) || se.Size != 5000 || se.Buffer != 100 || !errors.Is(err, io.ErrShortBuffer) {
			t.Fatalf("short read: %v", err)
		}
		big := make([]byte, 8000)
		if n, err := srv.Read(big); n != 5000 || err != nil || !bytes.Equal(big[:n], a) {
			t.Fatalf("read after the short one: %d %v", n, err)
		}
		if n, err := srv.ReadMessage(big); n != 2 || err != nil || string(big[:n]) != "bb" {
			t.Fatalf("second message: %d %v", n, err)
		}
		if err := cli.WriteMessage(make([]byte, cli.MaxMessageSize()+1), 0, false); !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("oversized message: %v", err)
		}
		cli.Close()
		if _, err := srv.ReadMessage(big); err != io.EOF {
			t.Fatalf("after the peer's close: %v", err)
		}
	})
}

// Under heavy loss, messages whose TTL passes are given up on both sides (drop requests), and
// every message written after the loss stops arrives.
func TestMessageConnTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := simnet.LinkConfig{Delay: 10 * time.Millisecond}
		lossy := l
		lossy.Loss = 0.4
		p := simnet.NewPair(3, lossy, l)
		defer p.Close()
		cli, srv := simConns(t, p, msgConfig())
		msgs := randomMessages(3, 400, 20<<10)
		const expiring = 250
		go func() {
			for i, m := range msgs {
				if i == expiring {
					p.AB.SetConfig(l) // the loss stops: the rest must all arrive
				}
				ttl := time.Duration(0)
				if i < expiring {
					ttl = 100 * time.Millisecond
				}
				if err := cli.WriteMessage(m, ttl, false); err != nil {
					t.Errorf("write %d: %v", i, err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		index := map[[32]byte]int{}
		for i, m := range msgs {
			index[sha256.Sum256(m)] = i
		}
		buf := make([]byte, 1<<20)
		got := map[int]bool{}
		late := 0
		for late < len(msgs)-expiring {
			srv.SetReadDeadline(time.Now().Add(30 * time.Second))
			n, err := srv.ReadMessage(buf)
			if err != nil {
				t.Fatalf("after %d messages (%d late): %v; sender %+v receiver %+v", len(got), late, err,
					cli.Stats().Messages, srv.Stats().Messages)
			}
			i, ok := index[sha256.Sum256(buf[:n])]
			if !ok || got[i] {
				t.Fatalf("message broken or repeated (known %v)", ok)
			}
			got[i] = true
			if i >= expiring {
				late++
			}
		}
		s, r := cli.Stats().Messages, srv.Stats().Messages
		if s.Expired == 0 || r.DropReqRecv == 0 || len(got)+int(s.Expired) < len(msgs) {
			t.Fatalf("delivered %d of %d; sender %+v receiver %+v", len(got), len(msgs), s, r)
		}
		t.Logf("delivered %d of %d; sender %+v; receiver %+v", len(got), len(msgs), s, r)
	})
}

// A listener refuses a peer of the other mode; the dialling side says why.
func TestModeMismatchListener(t *testing.T) {
	for _, dgramListener := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			p := simnet.NewPair(4, simnet.LinkConfig{}, simnet.LinkConfig{})
			defer p.Close()
			lcfg, dcfg := simConfig(), msgConfig()
			if dgramListener {
				lcfg, dcfg = dcfg, lcfg
			}
			ln, err := NewListener(p.B, lcfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			_, err = DialPacketContext(context.Background(), p.A, p.B.LocalAddr(), dcfg)
			if !errors.Is(err, ErrModeMismatch) || !errors.Is(err, ErrRejected) {
				t.Fatalf("listener in message mode %v: %v", dgramListener, err)
			}
			t.Log(err)
		})
	}
}

// The message calls on a stream connection fail with ErrStreamMode.
func TestMessageCallsOnStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(5, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		cli, srv := simConns(t, p, simConfig())
		if err := cli.WriteMessage([]byte("x"), 0, true); !errors.Is(err, ErrStreamMode) {
			t.Fatal(err)
		}
		if _, err := srv.ReadMessage(make([]byte, 10)); !errors.Is(err, ErrStreamMode) {
			t.Fatal(err)
		}
		if cli.MaxMessageSize() != 0 {
			t.Fatal("MaxMessageSize on a stream")
		}
	})
}

// Message mode over rendezvous.
func TestRendezvousMessageMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(6, simnet.LinkConfig{Delay: 5 * time.Millisecond}, simnet.LinkConfig{Delay: 5 * time.Millisecond})
		defer p.Close()
		a, b := rendezvousPair(t, p, msgConfig(), msgConfig(), 0, 0)
		if a.err != nil || b.err != nil {
			t.Fatal(a.err, b.err)
		}
		msgs := randomMessages(6, 50, 30000)
		go func() {
			for _, m := range msgs {
				b.c.WriteMessage(m, 0, true)
			}
		}()
		if _, err := readMessages(t, a.c, msgs, len(msgs)); err != nil {
			t.Fatal(err)
		}
	})
}
