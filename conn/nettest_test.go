package conn

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/udtgo/udt/internal/simnet"
)

// pipeOver returns a nettest.MakePipe that dials a Listener made by listen.
func pipeOver(t *testing.T, listen func() (*Listener, error), dial func(ln *Listener) (*Conn, error)) nettest.MakePipe {
	return func() (c1, c2 net.Conn, stop func(), err error) {
		ln, err := listen()
		if err != nil {
			return nil, nil, nil, err
		}
		type res struct {
			c   *Conn
			err error
		}
		acc := make(chan res, 1)
		go func() {
			c, err := ln.AcceptUDT(context.Background())
			acc <- res{c, err}
		}()
		d, err := dial(ln)
		if err != nil {
			ln.Close()
			return nil, nil, nil, err
		}
		a := <-acc
		if a.err != nil {
			d.Close()
			ln.Close()
			return nil, nil, nil, a.err
		}
		stop = func() {
			// Close both ends at once and wait until both are over (Close itself returns at
			// once): each one's close ends when the other's Shutdown arrives.
			closeWait(d, a.c)
			ln.Close()
		}
		return d, a.c, stop, nil
	}
}

// TestNetConnUDP runs x/net/nettest's net.Conn conformance suite over real UDP loopback.
func TestNetConnUDP(t *testing.T) {
	cfg := &Config{Linger: 10 * time.Second}
	nettest.TestConn(t, pipeOver(t,
		func() (*Listener, error) { return Listen("udp", "127.0.0.1:0", cfg) },
		func(ln *Listener) (*Conn, error) { return Dial("udp", ln.Addr().String(), cfg) }))
}

// TestNetConnLossy runs the suite over an in-memory link (in real time) that loses 5 % of the
// packets each way and reorders and duplicates some.
func TestNetConnLossy(t *testing.T) {
	link := simnet.LinkConfig{Delay: 200 * time.Microsecond, Loss: 0.05, Reorder: 0.02, ReorderDelay: time.Millisecond, Duplicate: 0.01}
	cfg := &Config{Linger: 20 * time.Second}
	var p *simnet.Pair
	seed := uint64(0)
	var pairs []*simnet.Pair
	defer func() {
		for _, p := range pairs {
			p.Close()
		}
	}()
	nettest.TestConn(t, pipeOver(t,
		func() (*Listener, error) {
			seed++
			p = simnet.NewPair(seed, link, link)
			pairs = append(pairs, p)
			return NewListener(p.B, cfg)
		},
		func(ln *Listener) (*Conn, error) {
			return DialPacketContext(context.Background(), p.A, p.B.LocalAddr(), cfg)
		}))
}
