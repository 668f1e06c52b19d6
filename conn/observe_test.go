package conn

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/simnet"
)

// logLine is one record a capture handler got.
type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// capture is a slog.Handler that keeps every record (debug and up), safe for concurrent use.
// With block set, each Handle waits until block is closed (a handler doing slow I/O).
type capture struct {
	mu    *sync.Mutex
	lines *[]logLine
	with  []slog.Attr
	block chan struct{}
}

func newCapture() *capture { return &capture{mu: new(sync.Mutex), lines: new([]logLine)} }

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) WithAttrs(as []slog.Attr) slog.Handler {
	d := *c
	d.with = append(append([]slog.Attr(nil), c.with...), as...)
	return &d
}
func (c *capture) WithGroup(string) slog.Handler { return c }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	if c.block != nil {
		<-c.block
	}
	l := logLine{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range c.with {
		l.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { l.attrs[a.Key] = a.Value.String(); return true })
	c.mu.Lock()
	*c.lines = append(*c.lines, l)
	c.mu.Unlock()
	return nil
}

// find returns the lines with message msg (and, if set, attribute key = value).
func (c *capture) find(msg, key, value string) []logLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logLine
	for _, l := range *c.lines {
		if l.msg == msg && (key == "" || l.attrs[key] == value) {
			out = append(out, l)
		}
	}
	return out
}

func (c *capture) dump() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, l := range *c.lines {
		fmt.Fprintf(&b, "%v %s %v\n", l.level, l.msg, l.attrs)
	}
	return b.String()
}

// TestLogDeadPeer: a dead peer is logged at warning level with how long it was silent and the
// connection's counters; its establishment and end at debug. (Config.Logger logged nothing.)
func TestLogDeadPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(3, simnet.LinkConfig{Delay: time.Millisecond}, simnet.LinkConfig{Delay: time.Millisecond})
		defer p.Close()
		h := newCapture()
		cfg := simConfig()
		cfg.IdleTimeout = 5 * time.Second
		cfg.Logger = slog.New(h)
		c, s := simConns(t, p, cfg)
		exchange(t, c, s, 1<<20)
		p.AB.SetDown(true)
		p.BA.SetDown(true)
		if _, err := c.Read(make([]byte, 1)); !isTimeout(err) {
			t.Fatalf("Read: %v", err)
		}
		synctest.Wait()
		dead := h.find("peer unresponsive, connection broken", "remote", p.B.LocalAddr().String())
		if len(dead) != 1 || dead[0].level != slog.LevelWarn {
			t.Fatalf("dead-peer lines %+v; log:\n%s", dead, h.dump())
		}
		if d, err := time.ParseDuration(dead[0].attrs["silent"]); err != nil || !within(d, 5*time.Second, 0.1) {
			t.Errorf("silent %q, want ≈ 5s", dead[0].attrs["silent"])
		}
		if dead[0].attrs["sent"] == "" || dead[0].attrs["rtt"] == "" || dead[0].attrs["socket"] == "" {
			t.Errorf("no counters or socket ID: %v", dead[0].attrs)
		}
		if n := len(h.find("connection established", "", "")); n != 2 {
			t.Errorf("%d establishment lines, want 2 (one per end); log:\n%s", n, h.dump())
		}
		if _, err := s.Read(make([]byte, 1)); !isTimeout(err) {
			t.Fatalf("server Read: %v", err)
		}
		synctest.Wait()
		if n := len(h.find("peer unresponsive, connection broken", "remote", p.A.LocalAddr().String())); n != 1 {
			t.Errorf("%d dead-peer lines of the server's end, want 1; log:\n%s", n, h.dump())
		}
	})
}

// TestLogDropsRateLimited: a flood of forged ACKs is logged at warning level once at once,
// then at most once per 10 s with the count since the last line; Close logs the rest, and the
// counts add up to Stats().Drops.
func TestLogDropsRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 2 * time.Millisecond}
		p := simnet.NewPair(6, link, link)
		defer p.Close()
		h := newCapture()
		cfg := simConfig()
		cfg.Logger = slog.New(h)
		c, _ := simConns(t, p, cfg)
		var buf [64]byte
		const flood = 25 * time.Second
		for start := time.Now(); time.Since(start) < flood; time.Sleep(time.Millisecond) {
			far := (c.isn + 1<<29) & packet.MaxSeqNo // never sent
			ack := packet.ACK{ControlHeader: packet.ControlHeader{DstSocketID: c.id}, Form: packet.ACKLight, AckNo: far}
			if b, err := ack.AppendBinary(buf[:0]); err == nil {
				p.B.WriteToUDPAddrPort(b, p.A.AddrPort())
			}
		}
		// The last forged ACKs are still on the 2 ms link: let them land before counting, or the
		// log (which counts up to Close) sees one or two more than Stats did.
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		forged := c.Stats().Drops.ForgedACK
		c.CloseContext(context.Background()) // Close returns before the connection's last log lines
		lines := h.find("dropped packets", "reason", "ACK of data never sent")
		if len(lines) < 2 || len(lines) > 2+int(flood/logEvery) {
			t.Fatalf("%d lines for a %v flood, want 2 to %d; log:\n%s", len(lines), flood, 2+int(flood/logEvery), h.dump())
		}
		var sum uint64
		for _, l := range lines {
			var n uint64
			fmt.Sscan(l.attrs["count"], &n)
			sum += n
			if l.level != slog.LevelWarn {
				t.Errorf("level %v", l.level)
			}
		}
		if sum != forged || forged < 20000 {
			t.Errorf("lines count %d drops, Stats %d", sum, forged)
		}
	})
}

// TestLogHandshakeRejected: a listener whose backlog is full says so (warning), once per 10 s.
func TestLogHandshakeRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(1, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		h := newCapture()
		cfg := simConfig()
		cfg.Backlog = 1
		cfg.Logger = slog.New(h)
		ln, err := NewListener(p.B, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		first, err := DialPacketContext(context.Background(), p.A, p.B.LocalAddr(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		for range 3 {
			pc, err := p.Net.Listen("198.18.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			_, err = DialPacketContext(context.Background(), pc, p.B.LocalAddr(), cfg)
			if err == nil || !strings.Contains(err.Error(), "rejected") {
				t.Fatalf("dial past the backlog: %v", err)
			}
			pc.Close()
		}
		synctest.Wait()
		rej := h.find("connection request rejected", "reason", "accept backlog full")
		if len(rej) != 1 || rej[0].level != slog.LevelWarn || rej[0].attrs["listener"] != p.B.LocalAddr().String() {
			t.Errorf("rejection lines %+v; log:\n%s", rej, h.dump())
		}
		if d := h.find("dial rejected", "", ""); len(d) != 3 {
			t.Errorf("%d dial lines, want 3", len(d))
		}
	})
}

// TestLogPhaseChange: with a debug logger, the controller's leaving slow start is logged (the
// native controller tells its phase with SlowStart()).
func TestLogPhaseChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 5 * time.Millisecond, Rate: 50e6, QueueBytes: 64 << 10}
		p := simnet.NewPair(8, link, link)
		defer p.Close()
		h := newCapture()
		cfg := simConfig()
		cfg.Congestion = congestion.NativeFactory()
		cfg.Logger = slog.New(h)
		c, s := simConns(t, p, cfg)
		sendAndCheck(t, c, s, 8<<20, 4)
		synctest.Wait()
		ph := h.find("congestion control phase changed", "from", "slow start")
		if len(ph) == 0 || ph[0].attrs["to"] != "congestion avoidance" || ph[0].level != slog.LevelDebug {
			t.Errorf("phase lines %+v; log:\n%s", ph, h.dump())
		}
	})
}

// TestLogNotUnderLock: a handler that blocks (slow I/O) does not stall the connection: while
// it holds a log line, the connection's mutex is free and data flows.
func TestLogNotUnderLock(t *testing.T) {
	h := newCapture()
	block := make(chan struct{})
	slow := *h
	slow.block = block
	cfg := &Config{Logger: slog.New(&slow)}
	c, s, ln := loopbackPair(t, cfg)
	defer ln.Close()
	defer c.Close()
	defer s.Close()
	unblock := sync.OnceFunc(func() { close(block) })
	defer unblock() // before the Closes run: they wait for the logging
	// A datagram for the server's connection from another address: the connection drops it
	// (ForeignSource) and its timer records the drop, which the blocking handler then holds.
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var stray [headerSize]byte
	stray[0] = 0x80 // a keep-alive
	be32(stray[12:], s.id)
	pc.WriteTo(stray[:], s.mux.local)
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Drops.ForeignSource == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the server's timer has run and is now blocked in the handler
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Stats()                // takes the mutex
		exchange(t, c, s, 1<<20) // reader, pacer and (the client's) timer all work
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // a hang check, not a timing assertion
		t.Fatal("a blocked log handler stalled the connection")
	}
	unblock()
	s.CloseContext(context.Background()) // Close returns before the connection's last log lines
	if l := h.find("dropped packets", "reason", "from another address than the peer's"); len(l) != 1 || l[0].level != slog.LevelWarn {
		t.Errorf("foreign-source lines %+v; log:\n%s", l, h.dump())
	}
}

func be32(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v) }

// eventLog is a Tracer that keeps every event.
type eventLog struct {
	mu   sync.Mutex
	info trace.ConnInfo
	evs  []trace.Event
}

func (l *eventLog) Event(ev trace.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) count(k trace.Kind) (n, packets int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs {
		if ev.Kind == k {
			n++
			packets += ev.Packets
		}
	}
	return n, packets
}

// TestTracer: Config.Tracer gets each connection's events, which agree with its counters, in
// time order, ending with Closed; ConnInfo describes the connection.
func TestTracer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := simnet.LinkConfig{Delay: 5 * time.Millisecond, Rate: 100e6, QueueBytes: 256 << 10, Loss: 0.01}
		p := simnet.NewPair(9, link, link)
		defer p.Close()
		var mu sync.Mutex
		logs := map[bool]*eventLog{}
		cfg := simConfig()
		cfg.Congestion = congestion.BBRFactory() // a delivery-based controller: rate samples are traced
		cfg.Tracer = func(info trace.ConnInfo) trace.Tracer {
			mu.Lock()
			defer mu.Unlock()
			l := &eventLog{info: info}
			logs[info.Server] = l
			return l
		}
		c, s := simConns(t, p, cfg)
		sendAndCheck(t, c, s, 4<<20, 7)
		cs, ss := c.Stats(), s.Stats()
		closeWait(c, s) // Close returns before the last event (Closed)
		cl, sl := logs[false], logs[true]
		if cl == nil || sl == nil {
			t.Fatalf("tracers: %v", logs)
		}
		if cl.info.LocalID != c.id || cl.info.PeerID != c.peerID || cl.info.MSS != c.mss || cl.info.Remote.String() != p.B.LocalAddr().String() ||
			cl.info.Congestion != "bbr" {
			t.Errorf("client info %+v", cl.info)
		}
		sent, _ := cl.count(trace.PacketSent)
		re, _ := cl.count(trace.PacketRetransmitted)
		recv, _ := sl.count(trace.PacketReceived)
		_, gaps := sl.count(trace.LossDetected)
		if uint64(sent+re) != cs.PktSent || uint64(re) != cs.PktRetrans || re == 0 {
			t.Errorf("sent %d + %d retransmitted, Stats %d, %d", sent, re, cs.PktSent, cs.PktRetrans)
		}
		if uint64(recv) != ss.PktRecv-ss.Drops.Duplicate-ss.Drops.OutOfWindow || uint64(gaps) != ss.PktRcvLoss {
			t.Errorf("received %d, gaps %d; Stats %+v", recv, gaps, ss)
		}
		if n, _ := cl.count(trace.DeliveryRate); n == 0 {
			t.Error("no delivery-rate samples traced")
		}
		for _, l := range []*eventLog{cl, sl} {
			for i := 1; i < len(l.evs); i++ {
				if l.evs[i].Time.Before(l.evs[i-1].Time) {
					t.Fatalf("event %d (%v) before event %d (%v)", i, l.evs[i], i-1, l.evs[i-1])
				}
			}
			if last := l.evs[len(l.evs)-1]; last.Kind != trace.Closed || last.Detail != "closed" {
				t.Errorf("last event %+v, want Closed", last)
			}
			if n, _ := l.count(trace.CongestionState); n == 0 {
				t.Error("no controller decisions traced")
			}
		}
	})
}

// TestTracerNil: a factory may decline a connection; nothing is delivered, nothing leaks.
func TestTracerNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(2, simnet.LinkConfig{Delay: time.Millisecond}, simnet.LinkConfig{Delay: time.Millisecond})
		defer p.Close()
		cfg := simConfig()
		var calls atomic.Int32
		cfg.Tracer = func(trace.ConnInfo) trace.Tracer { calls.Add(1); return nil }
		c, s := simConns(t, p, cfg)
		exchange(t, c, s, 64<<10)
		c.Close()
		s.Close()
		if calls.Load() != 2 {
			t.Errorf("factory called %d times, want 2", calls.Load())
		}
	})
}

// TestNotePathMTU: a path MTU change (path MTU discovery's report) is logged and traced.
func TestNotePathMTU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := simnet.NewPair(2, simnet.LinkConfig{}, simnet.LinkConfig{})
		defer p.Close()
		h := newCapture()
		var l eventLog
		cfg := simConfig()
		cfg.Logger = slog.New(h)
		cfg.Tracer = func(info trace.ConnInfo) trace.Tracer {
			if info.Server {
				return nil
			}
			return &l
		}
		c, _ := simConns(t, p, cfg)
		c.notePathMTU(1500, 1400, "ICMP fragmentation needed", time.Now())
		c.CloseContext(context.Background()) // Close returns before the connection's last log lines
		if m := h.find("path MTU changed", "to", "1400"); len(m) != 1 || m[0].level != slog.LevelInfo || m[0].attrs["from"] != "1500" {
			t.Errorf("MTU lines %+v", m)
		}
		if n, _ := l.count(trace.PathMTU); n != 1 {
			t.Errorf("%d PathMTU events", n)
		}
	})
}
