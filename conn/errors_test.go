package conn

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
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
