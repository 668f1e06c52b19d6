package conn

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestListenerCloseAbortsHandshakes: closing a Listener ends the DialContext and Rendezvous
// calls still in their handshake on its socket with an error wrapping net.ErrClosed, at once
// rather than at their handshake timeouts (3 s and 30 s), as a call made after Close does (found
// by a new user's check: a DialContext ran on for its whole timeout).
func TestListenerCloseAbortsHandshakes(t *testing.T) {
	// A peer that never answers: a bound UDP socket nobody reads, so no ICMP refusal either.
	silent, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer silent.Close()
	ln, err := Listen("udp4", "127.0.0.1:0", &Config{Pacer: "gotimer"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		what string
		err  error
		took time.Duration
	}
	results := make(chan result, 2)
	start := time.Now()
	go func() {
		c, err := ln.DialContext(context.Background(), "udp4", silent.LocalAddr().String())
		if c != nil {
			c.Close()
		}
		results <- result{"DialContext", err, time.Since(start)}
	}()
	go func() {
		c, err := ln.Rendezvous(context.Background(), "udp4", silent.LocalAddr().String())
		if c != nil {
			c.Close()
		}
		results <- result{"Rendezvous", err, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond) // both are re-sending their requests
	closed := time.Now()
	ln.Close()
	for range 2 {
		r := <-results
		var oe *net.OpError
		if !errors.Is(r.err, net.ErrClosed) || !errors.As(r.err, &oe) {
			t.Errorf("%s during Close: %v, want a *net.OpError wrapping net.ErrClosed", r.what, r.err)
		}
		// Far below the 3 s handshake timeout: the close ended it, not a timer.
		if late := r.took - closed.Sub(start); late > time.Second {
			t.Errorf("%s returned %v after Close", r.what, late)
		}
	}
	// And after Close, at once.
	if _, err := ln.DialContext(context.Background(), "udp4", silent.LocalAddr().String()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("DialContext after Close: %v, want net.ErrClosed", err)
	}
}

// TestListenerClosedDialsNothing: after Close, DialContext and Rendezvous on the Listener send
// nothing, even while an accepted connection keeps its socket open (found by review: a dial
// after Close still sent its requests, and a listener elsewhere answered and even accepted).
func TestListenerClosedDialsNothing(t *testing.T) {
	cfg := &Config{Pacer: "gotimer"}
	ln, _, _ := udpConns(t, cfg) // the accepted connection keeps ln's socket open after ln.Close
	other, err := Listen("udp4", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ln.Close()
	for range 20 {
		if _, err := ln.DialContext(context.Background(), "udp4", other.Addr().String()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("DialContext after Close: %v, want net.ErrClosed", err)
		}
		if _, err := ln.Rendezvous(context.Background(), "udp4", other.Addr().String()); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Rendezvous after Close: %v, want net.ErrClosed", err)
		}
	}
	time.Sleep(50 * time.Millisecond) // anything sent has arrived on loopback
	if st := other.Stats(); st.CookiesSent != 0 || st.Accepted != 0 {
		t.Errorf("the other listener answered %d requests and accepted %d connections from a closed Listener", st.CookiesSent, st.Accepted)
	}
}
