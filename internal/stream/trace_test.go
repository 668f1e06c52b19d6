package stream

import (
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/internal/cputime"
)

// countTracer counts events by kind and sums what they report.
type countTracer struct {
	n       [32]int
	packets [32]int // Packets summed per kind
	last    time.Time
	back    int // events whose time went backwards
}

func (c *countTracer) Event(ev trace.Event) {
	c.n[ev.Kind]++
	c.packets[ev.Kind] += ev.Packets
	if ev.Time.Before(c.last) {
		c.back++
	}
	c.last = ev.Time
}

// traced makes both ends of p report to tracers.
func traced(p *benchPair, a, b trace.Tracer) {
	p.a.tr = tracing{t: a, pkts: true, now: p.now, phase: phaseOf(p.a.cc)}
	p.b.tr = tracing{t: b, pkts: true, now: p.now, phase: phaseOf(p.b.cc)}
}

// TestTraceAgreesWithStats runs a lossy transfer and checks that the trace tells what the
// counters count: every data packet sent, retransmitted and received, every loss detected and
// reported, every ACK and ACK2, in time order.
func TestTraceAgreesWithStats(t *testing.T) {
	p := newBenchPair(congestion.NativeFactory()())
	var ta, tb countTracer
	traced(p, &ta, &tb)
	drop := 0
	for p.pkts < 20000 {
		for p.a.Write(p.src) > 0 {
		}
		n, _ := p.a.Release(p.now, p.bufs)
		for i := 0; i < n; i++ {
			if drop++; drop%97 != 0 {
				p.b.HandlePacket(p.now, p.bufs[i])
			}
			p.bufs[i] = p.bufs[i][:cap(p.bufs[i])]
			p.now = p.now.Add(10 * time.Microsecond)
		}
		p.pkts += n
		for k, _ := p.b.Read(p.rbuf); k > 0; k, _ = p.b.Read(p.rbuf) {
		}
		p.drain()
		for _, e := range []*Endpoint{p.a, p.b} {
			if !e.NextTimer().After(p.now) {
				e.OnTimer(p.now)
			}
		}
		p.drain()
		if n == 0 {
			p.now = p.now.Add(100 * time.Microsecond)
		}
	}
	sa, sb := p.a.Stats(), p.b.Stats()
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"sent", ta.n[trace.PacketSent] + ta.n[trace.PacketRetransmitted], int(sa.PktSent)},
		{"retransmitted", ta.n[trace.PacketRetransmitted], int(sa.PktRetrans)},
		{"received", tb.n[trace.PacketReceived], int(sb.PktRecv - sb.Drops.Duplicate - sb.Drops.OutOfWindow)},
		{"losses detected", tb.packets[trace.LossDetected], int(sb.RcvLoss)},
		{"NAKs received", ta.n[trace.NAKReceived], int(sa.NAKRecv)},
		{"periodic NAKs", tb.n[trace.NAKSent], int(sb.NAKPeriodic)},
		{"ACKs sent", tb.n[trace.ACKSent], int(sb.ACKSent + sb.LightACKSent)},
		{"RTT samples", tb.n[trace.RTTUpdated], int(sb.ACK2Recv)},
		{"timeouts", ta.n[trace.Timeout], int(sa.Probes + sa.Timeouts)},
	} {
		if c.got != c.want {
			t.Errorf("%s: trace %d, stats %d", c.what, c.got, c.want)
		}
	}
	// Losses the sender queued: those NAKs reported (SndLoss) and those timeouts re-queued.
	if lost := ta.packets[trace.PacketsLost]; lost < int(sa.SndLoss) || (sa.Probes+sa.Timeouts == 0 && lost != int(sa.SndLoss)) {
		t.Errorf("lost (sender): trace %d, stats %d reported, %d timer expiries", lost, sa.SndLoss, sa.Probes+sa.Timeouts)
	}
	if sa.PktRetrans == 0 || sb.RcvLoss == 0 {
		t.Fatalf("no loss: retrans %d, rcv loss %d", sa.PktRetrans, sb.RcvLoss)
	}
	if ta.n[trace.ACKReceived] == 0 || ta.n[trace.CongestionState] == 0 {
		t.Errorf("no ACKs received (%d) or controller decisions (%d) traced", ta.n[trace.ACKReceived], ta.n[trace.CongestionState])
	}
	if ta.back+tb.back > 0 {
		t.Errorf("%d events went back in time", ta.back+tb.back)
	}
}

// TestTracePhase: a controller that tells its phase has its changes traced, once each.
func TestTracePhase(t *testing.T) {
	p := newBenchPair(congestion.NativeFactory()())
	var phases []string
	p.a.tr = tracing{t: trace.Func(func(ev trace.Event) {
		if ev.Kind == trace.CongestionState && (len(phases) == 0 || phases[len(phases)-1] != ev.Detail) {
			phases = append(phases, ev.Detail)
		}
	}), now: p.now, phase: phaseOf(p.a.cc)}
	for p.pkts < 50000 {
		p.step()
	}
	if len(phases) < 2 || phases[0] != "slow start" || phases[1] != "congestion avoidance" {
		t.Errorf("phases %q, want slow start then congestion avoidance", phases)
	}
}

// noopTracer discards events (the cost of tracing itself).
type noopTracer struct{}

func (noopTracer) Event(trace.Event) {}

// BenchmarkEnginePerPacketTraced is BenchmarkEnginePerPacket with both ends traced (every
// event kind, per packet too) into a tracer that discards: the cost of building the events.
// It must allocate nothing.
func BenchmarkEnginePerPacketTraced(b *testing.B) {
	p := newBenchPair(nil)
	traced(p, noopTracer{}, noopTracer{})
	for p.pkts < 100_000 {
		p.step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := p.pkts, cputime.Process()
	for p.pkts-start < b.N {
		p.step()
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(p.pkts-start)
	b.ReportMetric(ns, "ns/pkt")
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(p.pkts-start), "cpu-ns/pkt")
}

// A DeliveryRate event's Detail lists the sample's flags, comma-separated; an RTT held behind a
// hole is marked only when there is an RTT.
func TestDeliveryDetail(t *testing.T) {
	for _, tc := range []struct {
		d    congestion.Delivery
		want string
	}{
		{congestion.Delivery{}, ""},
		{congestion.Delivery{AppLimited: true}, "app-limited"},
		{congestion.Delivery{Repair: true, AppLimited: true}, "app-limited,repair"},
		{congestion.Delivery{RTT: time.Millisecond, RTTHeld: true}, "rtt-held"},
		{congestion.Delivery{RTTHeld: true}, ""},
		{congestion.Delivery{Repair: true, RTT: time.Millisecond, RTTHeld: true}, "repair,rtt-held"},
	} {
		if got := deliveryDetail(&tc.d); got != tc.want {
			t.Errorf("%+v: Detail %q, want %q", tc.d, got, tc.want)
		}
	}
}
