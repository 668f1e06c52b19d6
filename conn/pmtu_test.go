package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/internal/simnet"
)

// logRecorder is a slog.Handler that keeps the records' messages and attributes.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
	h.mu.Lock()
	h.msgs = append(h.msgs, s)
	h.mu.Unlock()
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// events returns the lines starting with prefix and the events they stand for: the logger is
// rate-limited, a line standing for several carries count=N.
func (h *logRecorder) events(prefix string) (lines, events int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.msgs {
		if !strings.HasPrefix(m, prefix) {
			continue
		}
		lines++
		n := 1
		if i := strings.Index(m, " count="); i >= 0 {
			fmt.Sscanf(m[i+len(" count="):], "%d", &n)
		}
		events += n
	}
	return lines, events
}

// TestPathMTUDropMidTransfer: over a 100 Mbit/s, 20 ms path the client discovers full-size
// packets (1472 bytes), then the path's MTU falls to 1280 (1252 bytes of UDP payload) in the
// middle of the transfer, silently, with an ICMP-like report, or with the local stack refusing
// larger sends. Every byte arrives; the packet size ends within 20 bytes below 1252; each change
// is counted in Stats and logged (Config.Logger, rate-limited); past the drop only fragmentable
// packets exceed the MTU.
func TestPathMTUDropMidTransfer(t *testing.T) {
	size := int64(48 << 20)
	if testing.Short() {
		size = 24 << 20
	}
	for _, action := range []simnet.MTUAction{simnet.MTUDrop, simnet.MTUReport, simnet.MTUError} {
		t.Run(fmt.Sprint("action=", action), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				link := simnet.LinkConfig{Delay: 10 * time.Millisecond, Rate: 100e6, Overhead: 28,
					QueueBytes: 250_000}
				p := simnet.NewPair(21, link, link)
				defer p.Close()
				rec := &logRecorder{}
				cfg := simConfig()
				cfg.Logger = slog.New(rec)
				c, s := simConns(t, p, cfg)
				defer s.Close()
				done := make(chan struct{})
				go func() {
					defer close(done)
					time.Sleep(time.Second)
					if st := c.Stats(); st.PacketSize != 1472 || st.PathMTU != 1500 {
						t.Errorf("before the drop: packet size %d, path MTU %d; want 1472, 1500", st.PacketSize, st.PathMTU)
					}
					link.MTU, link.MTUAction = 1252, action
					p.AB.SetConfig(link)
				}()
				start := time.Now()
				sendAndCheck(t, c, s, size, 9)
				<-done
				el := time.Since(start)
				st := c.Stats()
				if st.PacketSize > 1252 || st.PacketSize <= 1252-20 || st.PathMTU != st.PacketSize+28 {
					t.Fatalf("after the drop: packet size %d (path MTU %d), want in (1232, 1252]", st.PacketSize, st.PathMTU)
				}
				c.Close() // logs what the rate limit held back
				if lines, events := rec.events("path MTU changed"); st.PathMTUChanges < 2 || lines < 1 || events != int(st.PathMTUChanges) {
					t.Fatalf("%d changes; %d logged in %d lines", st.PathMTUChanges, events, lines)
				}
				ls := p.AB.Stats()
				t.Logf("%d MiB in %v virtual (%.1f Mbit/s): size %d, %d changes, %d probes (%d lost), %d black holes; link: %d dropped for MTU, %d fragmented; retrans %d",
					size>>20, el, float64(size)*8/el.Seconds()/1e6, st.PacketSize, st.PathMTUChanges, st.PMTUProbes,
					st.PMTUProbeLosses, st.PMTUBlackHoles, ls.DroppedMTU, ls.Fragmented, st.PktRetrans)
			})
		})
	}
}

// TestPathMTUBlackHoleDiscovery: on a path of 1400-byte packets that drops larger ones without a
// word, a new connection settles within 20 bytes below 1372 in well under 5 s.
func TestPathMTUBlackHoleDiscovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 10 * time.Millisecond, Rate: 100e6, Overhead: 28,
			QueueBytes: 250_000, MTU: 1372}
		p := simnet.NewPair(22, link, link)
		defer p.Close()
		c, s := simConns(t, p, simConfig())
		defer s.Close()
		start := time.Now()
		var settled time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			for settled == 0 && time.Since(start) < 5*time.Second {
				if sz := c.Stats().PacketSize; sz > 1372-20 {
					settled = time.Since(start)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		sendAndCheck(t, c, s, 16<<20, 4)
		<-done
		st := c.Stats()
		if settled == 0 || st.PacketSize > 1372 || st.PacketSize <= 1352 {
			t.Fatalf("packet size %d (settled after %v), want in (1352, 1372] within 5 s", st.PacketSize, settled)
		}
		t.Logf("settled at %d after %v: %d probes, %d lost", st.PacketSize, settled, st.PMTUProbes, st.PMTUProbeLosses)
	})
}

// TestDialRefusedSimnet: the in-memory network's port-unreachable report ends a Dial at once.
func TestDialRefusedSimnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(23, simnet.LinkConfig{Delay: time.Millisecond}, simnet.LinkConfig{Delay: time.Millisecond})
		defer p.Close()
		p.Net.SetUnreachableReports(true)
		dead := p.B.LocalAddr()
		p.B.Close()
		start := time.Now()
		_, err := DialPacketContext(context.Background(), p.A, dead, simConfig())
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("Dial: %v, want ECONNREFUSED", err)
		}
		if el := time.Since(start); el >= handshakeInterval {
			t.Fatalf("refused after %v of virtual time, want before the first re-send", el)
		}
	})
}

// TestPathMTUJumboLoopback: with Config.MSS 9000 on loopback (MTU 65536) a connection raises its
// packets from the 1200-byte base to 8972 bytes (MSS−28) during a transfer; a probe can only
// double a packet, so it gets there in a few confirmed steps. Linux only (elsewhere the size is
// fixed).
func TestPathMTUJumboLoopback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("path MTU discovery runs on Linux only")
	}
	c, s, ln := loopbackPair(t, &Config{MSS: 9000})
	defer ln.Close()
	defer s.Close()
	defer c.Close()
	sendAndCheck(t, c, s, 64<<20, 9)
	st := c.Stats()
	if st.PacketSize <= 8972-20 || st.PacketSize > 8972 {
		t.Fatalf("packet size %d after 64 MiB (%d probes, %d lost, %d changes), want in (8952, 8972]",
			st.PacketSize, st.PMTUProbes, st.PMTUProbeLosses, st.PathMTUChanges)
	}
	t.Logf("packet size %d: %d probes, %d lost, %d changes", st.PacketSize, st.PMTUProbes, st.PMTUProbeLosses, st.PathMTUChanges)
}
