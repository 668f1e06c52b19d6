package conn

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/simnet"
)

// isConclusion reports whether b is a handshake of request type −1 (the one carrying the cookie,
// spec §3.2 step 4).
func isConclusion(b []byte) bool {
	var hs packet.Handshake
	return isHandshake(b) && hs.Decode(b) == nil && hs.ReqType == packet.ReqResponse
}

// noAccept fails the test if ln accepts a connection within d.
func noAccept(t *testing.T, ln *Listener, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if c, err := ln.AcceptUDT(ctx); err == nil {
		c.Close()
		t.Fatalf("a replayed handshake made a connection (%v)", c.RemoteAddr())
	}
}

// The client's handshake packets, captured on the wire and replayed from the client's address
// and port, make no new connection: while the connection is open they are answered again, once
// it is closed they are dropped, and after the cookie has expired they fail the cookie check.
func TestReplayedHandshakeSimnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var captured [][]byte
		link := simnet.LinkConfig{Delay: 5 * time.Millisecond, Drop: func(b []byte) bool {
			if isConclusion(b) {
				mu.Lock()
				captured = append(captured, append([]byte(nil), b...))
				mu.Unlock()
			}
			return false
		}}
		p := simnet.NewPair(11, link, simnet.LinkConfig{Delay: 5 * time.Millisecond})
		defer p.Close()
		cfg := simConfig()
		ln, err := NewListener(p.B, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, s := simConnsOn(t, p, ln, cfg)
		exchange(t, c, s, 64<<10)
		mu.Lock()
		replay := captured
		mu.Unlock()
		if len(replay) == 0 {
			t.Fatal("no conclusion handshake captured")
		}
		send := func() {
			for _, b := range replay {
				if _, err := p.A.WriteTo(b, p.B.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
		}
		send() // the connection is open: answered, nothing made
		noAccept(t, ln, time.Second)
		if st := ln.Stats(); st.Repeated < uint64(len(replay)) || st.Accepted != 1 {
			t.Fatalf("while open: %+v", st)
		}
		c.Close()
		s.Close()
		time.Sleep(time.Second)
		send() // closed: dropped
		noAccept(t, ln, 5*time.Second)
		if st := ln.Stats(); st.Replayed != uint64(len(replay)) || st.Accepted != 1 {
			t.Fatalf("after close: %+v", st)
		}
		time.Sleep(2 * cookiePeriod) // the captured cookie has expired
		send()
		noAccept(t, ln, 5*time.Second)
		st := ln.Stats()
		t.Logf("listener after %d replays ×3: %+v", len(replay), st)
		if st.BadCookie != uint64(len(replay)) || st.Accepted != 1 {
			t.Fatalf("after the cookie expired: %+v", st)
		}
		ln.mu.Lock()
		n := len(ln.byPeer)
		ln.pruneReplays(time.Now())
		n2 := len(ln.byPeer)
		ln.mu.Unlock()
		if n != 1 || n2 != 0 {
			t.Fatalf("replay table: %d entries, %d after pruning; want 1, 0", n, n2)
		}
	})
}

// recordingConn records the datagrams written through it.
type recordingConn struct {
	net.PacketConn
	mu   sync.Mutex
	sent [][]byte
}

func (r *recordingConn) WriteTo(b []byte, to net.Addr) (int, error) {
	r.mu.Lock()
	r.sent = append(r.sent, append([]byte(nil), b...))
	r.mu.Unlock()
	return r.PacketConn.WriteTo(b, to)
}

// The same over real UDP on loopback: the client's own socket captures its handshake and
// replays it, from the same address and port, after both ends closed.
func TestReplayedHandshakeUDP(t *testing.T) {
	ln, err := Listen("udp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	rec := &recordingConn{PacketConn: uc}
	accepted := make(chan *Conn, 1)
	go func() {
		c, _ := ln.AcceptUDT(context.Background())
		accepted <- c
	}()
	c, err := DialPacketContext(context.Background(), rec, ln.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	exchange(t, c, s, 64<<10)
	closeWait(c, s) // both over (Close returns before that): the replays find no live connection
	rec.mu.Lock()
	var replay [][]byte
	for _, b := range rec.sent {
		if isConclusion(b) {
			replay = append(replay, b)
		}
	}
	rec.mu.Unlock()
	if len(replay) == 0 {
		t.Fatal("no conclusion handshake captured")
	}
	for range 3 {
		for _, b := range replay {
			if _, err := uc.WriteTo(b, ln.Addr()); err != nil {
				t.Fatal(err)
			}
		}
	}
	noAccept(t, ln, 500*time.Millisecond)
	st := ln.Stats()
	t.Logf("%d captured conclusion handshakes replayed 3 times: %+v", len(replay), st)
	if st.Accepted != 1 || st.Replayed != 3*uint64(len(replay)) {
		t.Fatalf("listener stats %+v: want 1 accepted, %d replays dropped", st, 3*len(replay))
	}
}

// Every reason a Listener drops or refuses a datagram is counted.
func TestListenerStatsReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(12, simnet.LinkConfig{Delay: time.Millisecond}, simnet.LinkConfig{Delay: time.Millisecond})
		defer p.Close()
		cfg := simConfig()
		cfg.Backlog = 1
		ln, err := NewListener(p.B, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		to := p.B.LocalAddr()
		var out [packet.HandshakeSize]byte
		hs := packet.Handshake{Version: packet.Version, SocketType: packet.SocketStream, ISN: 7, MSS: 1500,
			FlowWindow: 8192, ReqType: packet.ReqConnect, SocketID: 99}
		write := func(b []byte) {
			if _, err := p.A.WriteTo(b, to); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		write(encodeHandshake(out[:], &hs)) // a request: answered with a cookie
		cookie := ln.jar.make(addrPortOf(p.A.LocalAddr()), time.Now())
		forged := hs
		forged.ReqType, forged.Cookie = packet.ReqResponse, cookie^1
		write(encodeHandshake(out[:], &forged))
		badVer := forged
		badVer.Cookie, badVer.Version = cookie, 3
		write(encodeHandshake(out[:], &badVer))
		badField := forged
		badField.Cookie, badField.MSS = cookie, 20
		write(encodeHandshake(out[:], &badField))
		rendezvous := forged
		rendezvous.ReqType = packet.ReqRendezvous
		write(encodeHandshake(out[:], &rendezvous))
		write(make([]byte, 20)) // to socket ID 0, too short for a handshake: malformed
		ok := forged
		ok.Cookie = cookie
		write(encodeHandshake(out[:], &ok)) // accepted (not taken from the queue: backlog 1 full)
		ok2 := ok
		ok2.SocketID, ok2.ISN = 100, 8
		write(encodeHandshake(out[:], &ok2)) // backlog full
		stray := make([]byte, 20)
		binary.BigEndian.PutUint32(stray[12:], 12345) // a socket ID not on this socket
		write(stray)
		write(make([]byte, 8)) // shorter than a header
		st := ln.Stats()
		t.Logf("%+v", st)
		want := ListenerStats{CookiesSent: 1, Accepted: 1, BadCookie: 1, BadField: 1, BadVersion: 1, BacklogFull: 1,
			NotServed: 1, Malformed: 1, UnknownDest: 1, Short: 1}
		if st != want {
			t.Fatalf("stats %+v, want %+v", st, want)
		}
	})
}
