package conn

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/simnet"
)

func TestCookie(t *testing.T) {
	now := time.Now()
	j := newCookieJar(now)
	a := netip.MustParseAddrPort("198.18.0.1:4000")
	b := netip.MustParseAddrPort("198.18.0.1:4001")
	c := j.make(a, now)
	if !j.valid(a, c, now) {
		t.Fatal("fresh cookie rejected")
	}
	if j.valid(b, c, now) {
		t.Fatal("cookie valid for another port")
	}
	if !j.valid(a, c, now.Add(cookiePeriod+time.Second)) {
		t.Fatal("cookie of the previous period rejected (the reference's bug, spec §8.3)")
	}
	if j.valid(a, c, now.Add(2*cookiePeriod+time.Second)) {
		t.Fatal("cookie two periods old accepted")
	}
	if newCookieJar(now).make(a, now) == c && newCookieJar(now).make(a, now) == c {
		t.Fatal("cookies do not depend on the per-listener key")
	}
}

// rawRequest sends a handshake from a bare simnet endpoint and returns the answer, if any
// arrives within a second of virtual time.
func rawRequest(t *testing.T, from *simnet.Conn, to netip.AddrPort, hs *packet.Handshake) (packet.Handshake, bool) {
	t.Helper()
	var buf [packet.HandshakeSize]byte
	if _, err := from.WriteToUDPAddrPort(encodeHandshake(buf[:], hs), to); err != nil {
		t.Fatal(err)
	}
	from.SetReadDeadline(time.Now().Add(time.Second))
	defer from.SetReadDeadline(time.Time{})
	rb := make([]byte, 2048)
	n, _, err := from.ReadFromUDPAddrPort(rb)
	if err != nil {
		return packet.Handshake{}, false
	}
	var out packet.Handshake
	if err := out.Decode(rb[:n]); err != nil {
		t.Fatalf("answer is not a handshake: %v", err)
	}
	return out, true
}

func TestHandshakeListenerSide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		cfg := simConfig()
		cfg.Backlog = 1
		ln, err := NewListener(p.B, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		srv := p.B.AddrPort()
		req := packet.Handshake{Version: 4, SocketType: packet.SocketStream, ISN: 12345, MSS: 1400,
			FlowWindow: 8192, ReqType: packet.ReqConnect, SocketID: 77}

		r1, ok1 := rawRequest(t, p.A, srv, &req)
		r2, ok2 := rawRequest(t, p.A, srv, &req)
		if !ok1 || !ok2 || r1 != r2 || r1.Cookie == 0 || r1.ReqType != packet.ReqConnect || r1.DstSocketID != 77 {
			t.Fatalf("cookie replies %+v / %+v", r1, r2)
		}

		bad := req
		bad.ReqType = packet.ReqResponse
		bad.Cookie = r1.Cookie ^ 1
		if r, ok := rawRequest(t, p.A, srv, &bad); ok {
			t.Fatalf("a forged cookie was answered: %+v", r)
		}

		good := bad
		good.Cookie = r1.Cookie
		a1, ok1 := rawRequest(t, p.A, srv, &good)
		a2, ok2 := rawRequest(t, p.A, srv, &good)
		if !ok1 || !ok2 || a1 != a2 {
			t.Fatalf("repeated request answered differently: %+v / %+v", a1, a2)
		}
		if a1.ReqType != packet.ReqResponse || a1.ISN != 12345 || a1.MSS != 1400 || a1.SocketID == 0 || a1.DstSocketID != 77 {
			t.Fatalf("final response %+v", a1)
		}
		if got := a1.PeerAddr(false); got != p.A.AddrPort().Addr() {
			t.Fatalf("peer address field %v, want %v", got, p.A.AddrPort().Addr())
		}

		// The backlog (1) is full now: a second client is refused with 1002.
		other := good
		other.SocketID = 78
		if r, ok := rawRequest(t, p.A, srv, &other); !ok || r.ReqType != packet.ReqRejected {
			t.Fatalf("full backlog answered %+v (ok=%v), want 1002", r, ok)
		}

		// A DGRAM request to a STREAM listener is refused.
		dg := good
		dg.SocketID = 79
		dg.SocketType = packet.SocketDgram
		if r, ok := rawRequest(t, p.A, srv, &dg); !ok || r.ReqType != packet.ReqRejected {
			t.Fatalf("DGRAM request answered %+v (ok=%v), want 1002", r, ok)
		}

		// Out-of-bounds fields are dropped (the reference never checks them, spec §8.3).
		tiny := good
		tiny.SocketID = 80
		tiny.MSS = 40
		if r, ok := rawRequest(t, p.A, srv, &tiny); ok {
			t.Fatalf("MSS 40 answered: %+v", r)
		}
		c, err := ln.AcceptUDT(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if c.mss != 1400 {
			t.Fatalf("negotiated MSS %d, want 1400", c.mss)
		}
		c.cfg.Linger = -1
		c.Close()
	})
}

func TestDialTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		start := time.Now()
		_, err := DialPacketContext(context.Background(), p.A, p.B.LocalAddr(), simConfig())
		if !errors.Is(err, ErrHandshakeTimeout) || !isTimeout(err) {
			t.Fatalf("err %v, want ErrHandshakeTimeout", err)
		}
		if el := time.Since(start); el != DefaultHandshakeTimeout {
			t.Fatalf("gave up after %v, want %v", el, DefaultHandshakeTimeout)
		}
		if got := p.A.Stats().Sent; got != 12 {
			t.Fatalf("%d requests sent, want 12 (one every 250 ms for 3 s)", got)
		}
	})
}

func TestDialRejectedAndContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		_, err := DialPacketContext(ctx, p.A, p.B.LocalAddr(), simConfig())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want context.DeadlineExceeded", err)
		}
	})
}

// TestDialISNMismatch: a server that echoes another ISN is refused (UDT error 1004).
func TestDialISNMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		go serveHandshakes(p.B, func(hs *packet.Handshake, from netip.AddrPort) {
			hs.ReqType = packet.ReqResponse
			hs.ISN++
			hs.DstSocketID = hs.SocketID
			hs.SocketID = 99
			var out [packet.HandshakeSize]byte
			p.B.WriteToUDPAddrPort(encodeHandshake(out[:], hs), from)
		})
		_, err := DialPacketContext(context.Background(), p.A, p.B.LocalAddr(), simConfig())
		if !errors.Is(err, ErrBadHandshake) {
			t.Fatalf("err %v, want ErrBadHandshake", err)
		}
	})
}

// TestSocketClosedUnderneath: closing a caller's PacketConn under a Listener and a connection
// breaks both cleanly (no hang: the reader goroutine tears the socket's users down itself).
func TestSocketClosedUnderneath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		cfg := simConfig()
		ln, err := NewListener(p.B, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, s := simConnsOn(t, p, ln, cfg)
		p.B.Close()
		if _, err := ln.Accept(); err == nil {
			t.Fatal("Accept succeeded on a closed socket")
		}
		if _, err := s.Read(make([]byte, 10)); err == nil {
			t.Fatal("Read succeeded on a closed socket")
		}
		ln.Close()
		s.Close()
		c.Close()

		// A Listener alone on its socket: the failure releases the last user from the reader.
		pc, err := p.Net.Listen("198.18.0.9:9000")
		if err != nil {
			t.Fatal(err)
		}
		lone, err := NewListener(pc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pc.Close()
		if _, err := lone.Accept(); err == nil {
			t.Fatal("Accept succeeded on a closed socket")
		}
		lone.Close()
	})
}

// paramsRecorder is a controller that records the Params it was given.
type paramsRecorder struct {
	congestion.Controller
	got chan<- congestion.Params
}

func (r *paramsRecorder) Init(now time.Time, p congestion.Params) {
	r.got <- p
	r.Controller.Init(now, p)
}

// The dialing side's controller learns the handshake's round trip (congestion.Params.RTT): the
// path's RTT, measured from the request sent once to its reply; the listening side, which keeps
// no state between the cookie exchange's two halves, reports none.
func TestHandshakeRTT(t *testing.T) {
	for _, oneWay := range []time.Duration{3 * time.Millisecond, 40 * time.Millisecond} {
		t.Run(oneWay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				link := simnet.LinkConfig{Delay: oneWay}
				p := simnet.NewPair(1, link, link)
				defer p.Close()
				got := make(chan congestion.Params, 2)
				cfg := simConfig()
				cfg.Congestion = func() congestion.Controller {
					return &paramsRecorder{Controller: congestion.NewBBR(), got: got}
				}
				c, s := simConns(t, p, cfg)
				defer c.Close()
				defer s.Close()
				var rtts []time.Duration
				for range 2 {
					rtts = append(rtts, (<-got).RTT)
				}
				slices.Sort(rtts)
				// Virtual time: the simulated path is the only delay, so the figure is exact.
				if want := []time.Duration{0, 2 * oneWay}; !slices.Equal(rtts, want) {
					t.Fatalf("Params.RTT of the two ends: %v, want %v (listener, dialer)", rtts, want)
				}
			})
		})
	}
}

// A duplicated cookie reply makes Dial resend its conclusion, so the final reply may answer
// either copy: the handshake RTT then comes from the cookie exchange alone (Karn's rule).
func TestHandshakeRTTDuplicateCookie(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const oneWay = 10 * time.Millisecond
		link := simnet.LinkConfig{Delay: oneWay}
		p := simnet.NewPair(1, link, link)
		defer p.Close()
		var out [packet.HandshakeSize]byte
		// A server that sends each cookie reply twice, 5 ms apart.
		go serveHandshakes(p.B, func(hs *packet.Handshake, from netip.AddrPort) {
			if hs.ReqType == packet.ReqConnect {
				hs.Cookie, hs.DstSocketID = 12345, hs.SocketID
				p.B.WriteToUDPAddrPort(encodeHandshake(out[:], hs), from)
				time.Sleep(5 * time.Millisecond)
				p.B.WriteToUDPAddrPort(encodeHandshake(out[:], hs), from)
				return
			}
			hs.DstSocketID, hs.SocketID = hs.SocketID, 99
			p.B.WriteToUDPAddrPort(encodeHandshake(out[:], hs), from)
		})
		got := make(chan congestion.Params, 1)
		cfg := simConfig()
		cfg.Congestion = func() congestion.Controller {
			return &paramsRecorder{Controller: congestion.NewBBR(), got: got}
		}
		c, err := DialPacketContext(context.Background(), p.A, p.B.LocalAddr(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The cookie reply took 2·oneWay; the conclusion resent 5 ms after the first would read
		// 15 ms if its reply were dated from the resend.
		if rtt := (<-got).RTT; rtt != 2*oneWay {
			t.Fatalf("Params.RTT %v, want %v (the cookie exchange's)", rtt, 2*oneWay)
		}
	})
}

// serveHandshakes is a scripted server: it calls answer with each handshake that arrives on pc
// until pc is closed.
func serveHandshakes(pc *simnet.Conn, answer func(hs *packet.Handshake, from netip.AddrPort)) {
	b := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFromUDPAddrPort(b)
		if err != nil {
			return
		}
		var hs packet.Handshake
		if hs.Decode(b[:n]) == nil {
			answer(&hs, from)
		}
	}
}
