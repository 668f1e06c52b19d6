package conn

import (
	"bytes"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// holdMeter counts the bytes a connection's message calls copy per hold of its lock (its
// engine's Copied, read after each hold: Conn.holdHook). The count is exact while one goroutine
// at a time makes c's message calls; with more, their holds' bytes may mix.
type holdMeter struct {
	c          *Conn
	at         func(hold int) // called after each hold that copied bytes, if set (without c.mu); set before use
	mu         sync.Mutex
	last       uint64
	max, holds int
}

func meter(c *Conn) *holdMeter {
	m := &holdMeter{c: c}
	c.mu.Lock()
	m.last = c.ep.Copied()
	c.holdHook = m.hold
	c.mu.Unlock()
	return m
}

func (m *holdMeter) hold() {
	m.c.mu.Lock()
	cur := m.c.ep.Copied()
	m.c.mu.Unlock()
	m.mu.Lock()
	n := int(cur - m.last)
	m.last = cur
	if n > 0 {
		m.max = max(m.max, n)
		m.holds++
	}
	h := m.holds
	m.mu.Unlock()
	if n > 0 && m.at != nil {
		m.at(h)
	}
}

// seeded returns n bytes of newPattern(seed).
func seeded(n int, seed byte) []byte {
	b := make([]byte, n)
	newPattern(seed).Read(b)
	return b
}

// A 24 MiB message, and a small and a 5 MiB one after it, through loss and reordering: each
// arrives whole and byte-exact, and neither end copies more than lockChunk bytes per hold of the
// connection's lock (before, WriteMessage and ReadMessage copied the whole message in one).
func TestMessageLargeLossy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := simnet.LinkConfig{Delay: 5 * time.Millisecond, Loss: 0.01, Reorder: 0.01}
		p := simnet.NewPair(11, l, l)
		defer p.Close()
		cli, srv := simConns(t, p, msgConfig())
		msgs := [][]byte{seeded(24<<20, 1), []byte("small"), seeded(5<<20+7, 2)}
		if max := cli.MaxMessageSize(); max < 24<<20 {
			t.Fatalf("MaxMessageSize %d", max)
		}
		wm, rm := meter(cli), meter(srv)
		go func() {
			for i, m := range msgs {
				if err := cli.WriteMessage(m, 0, true); err != nil {
					t.Errorf("write %d: %v", i, err)
					return
				}
			}
		}()
		buf := make([]byte, 25<<20)
		for i, m := range msgs {
			n, err := srv.ReadMessage(buf)
			if err != nil || !bytes.Equal(buf[:n], m) {
				t.Fatalf("message %d: %d bytes of %d (equal %v), %v", i, n, len(m), bytes.Equal(buf[:n], m), err)
			}
		}
		if st := srv.Stats(); st.PktRcvLoss == 0 {
			t.Fatal("no loss: the test exercised nothing")
		}
		total := 0
		for _, m := range msgs {
			total += len(m)
		}
		for _, c := range []struct {
			name string
			m    *holdMeter
		}{{"writer", wm}, {"reader", rm}} {
			t.Logf("%s: %d bytes in %d holds, at most %d a hold", c.name, total, c.m.holds, c.m.max)
			if c.m.max > lockChunk || c.m.holds < total/lockChunk {
				t.Errorf("%s: a hold copied %d bytes (bound %d), %d holds for %d bytes", c.name, c.m.max, lockChunk, c.m.holds, total)
			}
		}
	})
}

// Two writers and two readers of large messages at once: each message arrives whole, once. The
// second reader starts while the first copies a large message out (it waits for that read, then
// reads the messages after it).
func TestMessageLargeConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := simnet.LinkConfig{Delay: 2 * time.Millisecond, Loss: 0.005}
		p := simnet.NewPair(12, l, l)
		defer p.Close()
		cli, srv := simConns(t, p, msgConfig())
		var msgs [][]byte
		for i := range 8 {
			size := 1<<20 + 3*lockChunk/2 + i*1000 // up to 2.5 chunks
			if i%3 == 2 {
				size = 100 + i
			}
			msgs = append(msgs, seeded(size, byte(10+i)))
		}
		for w := range 2 {
			go func() {
				for i := w; i < len(msgs); i += 2 {
					if err := cli.WriteMessage(msgs[i], 0, i%2 == 0); err != nil {
						t.Errorf("write %d: %v", i, err)
						return
					}
				}
			}()
		}
		var mu sync.Mutex
		got := map[int]bool{}
		read := func() {
			buf := make([]byte, 3<<20)
			for {
				srv.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := srv.ReadMessage(buf)
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return // the other reader read the last one (or a stall: checked below)
				}
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				k := -1
				for i, m := range msgs {
					if bytes.Equal(buf[:n], m) {
						k = i
					}
				}
				mu.Lock()
				if k < 0 || got[k] {
					t.Errorf("read %d bytes: message %d (delivered before: %v)", n, k, k >= 0 && got[k])
				}
				got[k] = true
				done := len(got) == len(msgs)
				mu.Unlock()
				if done {
					srv.SetReadDeadline(time.Now()) // the other reader stops
					return
				}
			}
		}
		var wg sync.WaitGroup
		var second atomic.Bool
		m := &holdMeter{c: srv, at: func(int) {
			srv.mu.Lock()
			pinned := srv.readPin != nil
			srv.mu.Unlock()
			if pinned && second.CompareAndSwap(false, true) {
				wg.Go(read)
				synctest.Wait() // the second reader is waiting for this read
			}
		}}
		srv.mu.Lock()
		srv.holdHook = m.hold
		srv.mu.Unlock()
		read()
		wg.Wait()
		if len(got) != len(msgs) || !second.Load() {
			t.Fatalf("%d of %d messages read (second reader started: %v)", len(got), len(msgs), second.Load())
		}
	})
}

// Close, or the connection's failure, while a large message is copied in or out: the call ends
// cleanly (no panic, no hang, goroutines end: TestMain's goleak), a message being written is
// dropped whole (the peer reads the message before it and then io.EOF, never a part), a message
// being read stays whole (Close fails the read; a failure does not stop it).
func TestMessageLargeInterrupted(t *testing.T) {
	broke := errors.New("the socket broke")
	for _, tc := range []struct {
		name      string
		reader    bool // interrupt the reader, else the writer
		close     bool // Close, else fail the connection
		wantErr   error
		wantWhole bool
	}{
		{"write/close", false, true, net.ErrClosed, false},
		{"write/broken", false, false, broke, false},
		{"read/close", true, true, net.ErrClosed, false},
		{"read/broken", true, false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := simnet.LinkConfig{Delay: 2 * time.Millisecond}
				p := simnet.NewPair(13, l, l)
				defer p.Close()
				cli, srv := simConns(t, p, msgConfig())
				first, big := []byte("first"), seeded(8<<20, 3)
				victim := cli
				if tc.reader {
					victim = srv
				}
				m := &holdMeter{c: victim}
				m.at = func(hold int) {
					if hold != 5 { // the big message's copy is under way
						return
					}
					if tc.close {
						victim.Close()
					} else {
						victim.breakWith(broke)
					}
				}
				victim.mu.Lock()
				victim.holdHook = m.hold
				victim.mu.Unlock()
				wrote := make(chan error, 1)
				go func() {
					err := cli.WriteMessage(first, 0, true)
					if err == nil {
						err = cli.WriteMessage(big, 0, true)
					}
					wrote <- err
				}()
				buf := make([]byte, 9<<20)
				n, err := srv.ReadMessage(buf)
				if err != nil || string(buf[:n]) != "first" {
					t.Fatalf("the first message: %q %v", buf[:n], err)
				}
				n, err = srv.ReadMessage(buf)
				werr := <-wrote
				switch {
				case tc.reader && tc.wantWhole:
					if err != nil || !bytes.Equal(buf[:n], big) {
						t.Fatalf("read during the failure: %d bytes, %v; want the whole message", n, err)
					}
				case tc.reader:
					if n != 0 || !errors.Is(err, tc.wantErr) {
						t.Fatalf("read during Close: %d bytes, %v", n, err)
					}
				default:
					if !errors.Is(werr, tc.wantErr) {
						t.Fatalf("write: %v, want %v", werr, tc.wantErr)
					}
					if n != 0 || err == nil {
						t.Fatalf("the peer read %d bytes (%v) of a message dropped while being written", n, err)
					}
				}
				if m.holds < 5 {
					t.Fatalf("only %d holds copied bytes: the interruption never came", m.holds)
				}
			})
		})
	}
}
