package conn

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// warnings is a slog handler that keeps the warnings.
type warnings struct {
	mu   sync.Mutex
	msgs []slog.Record
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	w.msgs = append(w.msgs, r.Clone())
	w.mu.Unlock()
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// A caller's socket with a receive buffer far too small for the rate: the kernel's drops show in
// the connection's and the Listener's Stats and in one Logger warning per interval, and the
// transfer still completes intact. NewListener leaves the buffer as the caller set it.
func TestKernelDropsCountedAndLogged(t *testing.T) {
	old := dropCheckEvery
	dropCheckEvery = 10 * time.Millisecond
	defer func() { dropCheckEvery = old }()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	if err := uc.SetReadBuffer(32 << 10); err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	cfg := &Config{Logger: slog.New(w), Congestion: congestion.FixedFactory(2e9)}
	ln, err := NewListener(uc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, s := dialAccept(t, ln, "udp", ln.Addr().String(), cfg)
	defer c.Close()
	defer s.Close()
	sendAndCheck(t, c, s, 32<<20, 9)
	st, lst := s.Stats(), ln.Stats()
	w.mu.Lock()
	n := len(w.msgs)
	var first string
	if n > 0 {
		first = w.msgs[0].Message
	}
	w.mu.Unlock()
	t.Logf("kernel drops: connection %d, listener %d; sender retransmitted %d; %d warnings: %q", st.KernelDrops, lst.KernelDrops, c.Stats().PktRetrans, n, first)
	if st.KernelDrops == 0 || lst.KernelDrops < st.KernelDrops {
		t.Fatalf("kernel drops %d (listener %d): a 32 KiB buffer at 2 Gbit/s overflowed nowhere?", st.KernelDrops, lst.KernelDrops)
	}
	if n == 0 || !strings.Contains(first, "receive buffer") {
		t.Fatalf("%d warnings logged (%q), want at least one about the receive buffer", n, first)
	}
	if _, rcvbuf := s.mux.readDrops(); rcvbuf > 2*(32<<10) {
		t.Fatalf("NewListener resized the caller's receive buffer to %d bytes", rcvbuf)
	}
}
