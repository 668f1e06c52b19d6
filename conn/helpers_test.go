package conn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// simConfig is a Config for tests under testing/synctest: the runtime-timer pacer backend.
func simConfig() *Config {
	return &Config{Pacer: "gotimer", Logger: nil}
}

// simConns dials from p.A to a Listener on p.B and returns both ends. Both are closed, and the
// listener too, when the test ends.
func simConns(t *testing.T, p *simnet.Pair, cfg *Config) (client, server *Conn) {
	t.Helper()
	ln, err := NewListener(p.B, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return simConnsOn(t, p, ln, cfg)
}

// udpConns dials over UDP loopback (IPv4) to a Listener of cfg, both with cfg, and returns the
// Listener and both ends; all three are closed when the test ends.
func udpConns(t *testing.T, cfg *Config) (ln *Listener, client, server *Conn) {
	t.Helper()
	ln, err := Listen("udp4", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	client, err = Dial("udp4", ln.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.AcceptUDT(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return ln, client, server
}

// simConnsOn is simConns with the caller's Listener on p.B, which it leaves open.
func simConnsOn(t *testing.T, p *simnet.Pair, ln *Listener, cfg *Config) (client, server *Conn) {
	t.Helper()
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := ln.AcceptUDT(context.Background())
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := DialPacketContext(context.Background(), p.A, p.B.LocalAddr(), cfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	server = <-accepted
	if server == nil {
		client.Close()
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { closeWait(client, server) })
	return client, server
}

// pattern is a deterministic pseudo-random byte stream.
type pattern struct{ r *rand.ChaCha8 }

func newPattern(seed byte) *pattern {
	var s [32]byte
	s[0] = seed
	return &pattern{rand.NewChaCha8(s)}
}

func (p *pattern) Read(b []byte) (int, error) { return p.r.Read(b) }

// sendAndCheck writes size pattern bytes on w and closes it, reads r to EOF, and fails the test
// unless exactly the same bytes (SHA-256) arrived.
func sendAndCheck(t *testing.T, w, r net.Conn, size int64, seed byte) {
	t.Helper()
	type result struct {
		sum [32]byte
		n   int64
		err error
	}
	sent := make(chan result, 1)
	go func() {
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(newPattern(seed), size))
		// CloseContext says whether the peer acknowledged everything: a close whose linger
		// passed sends Shutdown too, and the reader then sees io.EOF (or io.ErrUnexpectedEOF)
		// short of size.
		var cerr error
		if cc, ok := w.(interface{ CloseContext(context.Context) error }); ok {
			cerr = cc.CloseContext(context.Background())
		} else {
			cerr = w.Close()
		}
		if err == nil {
			err = cerr
		}
		var res result
		copy(res.sum[:], h.Sum(nil))
		res.n, res.err = n, err
		sent <- res
	}()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatalf("read after %d bytes: %v", n, err)
	}
	s := <-sent
	if s.err != nil {
		t.Fatalf("write after %d bytes: %v", s.n, s.err)
	}
	if n != size || s.n != size {
		t.Fatalf("moved %d bytes, received %d, want %d", s.n, n, size)
	}
	var got [32]byte
	copy(got[:], h.Sum(nil))
	if got != s.sum {
		t.Fatalf("SHA-256 mismatch: sent %x, received %x", s.sum, got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// within reports whether d is within frac of want.
func within(d, want time.Duration, frac float64) bool {
	lo := time.Duration(float64(want) * (1 - frac))
	hi := time.Duration(float64(want) * (1 + frac))
	return d >= lo && d <= hi
}

// exchange writes size pattern bytes each way at the same time and checks both arrive intact
// (read by count, not to EOF, so both connections stay open).
func exchange(t *testing.T, a, b net.Conn, size int) {
	t.Helper()
	want := patternBytes(size)
	errs := make(chan error, 4)
	for _, pair := range [][2]net.Conn{{a, b}, {b, a}} {
		go func() {
			_, err := pair[0].Write(want)
			errs <- err
		}()
		go func() {
			got := make([]byte, size)
			_, err := io.ReadFull(pair[1], got)
			if err == nil && !bytes.Equal(got, want) {
				err = errors.New("data mismatch")
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// reportQuantiles reports the p50 and p99 of d in µs.
func reportQuantiles(b *testing.B, d []time.Duration, name string) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), name+"-p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), name+"-p99-µs")
}

// closeWait closes every conn at once and waits until each is over (CloseContext): in a synctest
// bubble, time stops when the test's goroutine ends, so a close still exchanging Shutdown then
// would never end.
func closeWait(conns ...*Conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.CloseContext(context.Background())
		}()
	}
	wg.Wait()
}
