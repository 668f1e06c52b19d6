package main

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udtgo/udt/internal/udprelay"
)

// TestQUICAbortCloseLost interrupts a quic client whose one CONNECTION_CLOSE is dropped on the
// way (the first small datagram it sends after the interrupt, through a relay). The client
// must keep its socket through the closing period, so that quic-go sends the close again when
// the server's next packets arrive (RFC 9000 §10.2.1): the server ACKs the data still arriving
// and sends progress every 20 ms, so one comes within the period as long as the server is not
// starved for longer than its RTT samples show. The server learns at once, not after its 60 s
// idle timeout. Before, the client closed its socket with the connection and the server waited
// out the idle timeout (seen once in CI, where the server's receive buffer overflowed under the
// race detector).
func TestQUICAbortCloseLost(t *testing.T) {
	addr, done, _, srvErr := startServer(t, "-proto", "quic", "-once", "-idle-timeout", "60s")
	r, err := udprelay.New(quicAddr(addr), udprelay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var armed, dropped atomic.Bool
	r.SetImpairment(udprelay.Impairment{Drop: func(b []byte) bool {
		// A CONNECTION_CLOSE is a short packet; data packets are over 1000 bytes.
		return len(b) < 200 && armed.Load() && dropped.CompareAndSwap(false, true)
	}}, udprelay.Impairment{})
	// The client dials quic at its -connect port + quicPortOffset: name the relay's port less it.
	connect := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Addr().Port-quicPortOffset))
	cmd, stderr := startSending(t, connect, "quic")
	armed.Store(true)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The relay may not have read the client's last datagram yet.
	waitFor(t, dropped.Load, stderr)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("server still waits 30 s after the client's close was dropped: %s", srvErr.String())
	}
	if !strings.Contains(srvErr.String(), "closed by the peer") {
		t.Errorf("server log does not say the client closed: %s", srvErr.String())
	}
}
