package conn

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// TestErrorText: errors read as package net's do, the network named once: "listen udt ADDR:
// bind: …", never "listen udp …" from one path and "listen udt: udt: …" from another.
func TestErrorText(t *testing.T) {
	busy, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, err = Listen("udp", busy.LocalAddr().String(), nil)
	if err == nil {
		t.Fatal("listen on a busy port succeeded")
	}
	want := "listen udt " + busy.LocalAddr().String() + ": bind: "
	if !strings.HasPrefix(err.Error(), want) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("busy port: %q, want %q… (EADDRINUSE)", err, want)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "listen" {
		t.Errorf("not a listen *net.OpError: %#v", err)
	}
	_, err = Listen("udp", "127.0.0.1:0", &Config{MSS: 10})
	if err == nil || err.Error() != "listen udt: Config.MSS 10 out of range [92, 65535]" {
		t.Errorf("bad config: %q", err)
	}
	for _, e := range []error{ErrRejected, ErrHandshakeTimeout, ErrBadHandshake, ErrPeerIdle, ErrPeerShutdown, &peerIdleError{}} {
		if strings.HasPrefix(e.Error(), "udt:") {
			t.Errorf("%q: the OpError around it already says udt", e)
		}
	}
}

// TestConnErrorAddresses: a dialed connection's errors name the addresses its LocalAddr and
// RemoteAddr report (the routed source, not the socket's wildcard 0.0.0.0, which a new user's
// check found in them), and setting a deadline after Close fails with net.ErrClosed, as package
// net's connections do.
func TestConnErrorAddresses(t *testing.T) {
	ln, err := Listen("udp4", "127.0.0.1:0", &Config{Pacer: "gotimer"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := Dial("udp4", ln.Addr().String(), &Config{Pacer: "gotimer"}) // its own wildcard socket
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Read(make([]byte, 1))
	var oe *net.OpError
	if !errors.As(err, &oe) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline: %v, want a *net.OpError wrapping os.ErrDeadlineExceeded", err)
	}
	if oe.Source.String() != c.LocalAddr().String() || oe.Addr.String() != c.RemoteAddr().String() {
		t.Errorf("error %q names %v -> %v, want LocalAddr %v -> RemoteAddr %v", err, oe.Source, oe.Addr, c.LocalAddr(), c.RemoteAddr())
	}
	if ip := oe.Source.(*net.UDPAddr).IP; ip.IsUnspecified() {
		t.Errorf("error %q names the wildcard address", err)
	}
	c.Close()
	for name, set := range map[string]func(time.Time) error{"SetDeadline": c.SetDeadline, "SetReadDeadline": c.SetReadDeadline, "SetWriteDeadline": c.SetWriteDeadline} {
		if err := set(time.Now()); !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) {
			t.Errorf("%s after Close: %v, want a *net.OpError wrapping net.ErrClosed", name, err)
		}
	}
}

// TestConfigExtremes: a SendBuffer beyond the largest flow window is clamped (1<<62 bytes made a
// slice length overflow and crashed the process in the reader goroutine at the first
// connection), and a Congestion factory that returns nil gets the default controller instead of
// no congestion control at all (both found by a new user's check).
func TestConfigExtremes(t *testing.T) {
	cfg := &Config{Pacer: "gotimer", SendBuffer: 1 << 62, RecvBuffer: 1 << 62,
		Congestion: func() congestion.Controller { return nil }}
	r, err := cfg.resolved()
	if err != nil {
		t.Fatal(err)
	}
	payload := r.MSS - udpIPOverhead - headerSize
	if r.SendBuffer != maxFlowWindow*payload || r.RecvBuffer != maxFlowWindow*payload {
		t.Fatalf("SendBuffer %d, RecvBuffer %d: want both clamped to %d", r.SendBuffer, r.RecvBuffer, maxFlowWindow*payload)
	}
	_, c, s := udpConns(t, cfg)
	for _, x := range []*Conn{c, s} {
		if st := x.Stats(); st.CongestionWindow == 0 {
			t.Errorf("no congestion window (%+v): a nil controller left the connection uncontrolled", st.CongestionWindow)
		}
	}
}
