package stream

import (
	"iter"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// Tracing (Config.Tracer). Each emission point in the engine is one call of a method below;
// each checks whether anyone listens first, in a function small enough to inline, so an
// endpoint without a tracer pays a predictable branch per point and builds no event. Events
// carry the time of the engine call that produced them (traceAt, at the entry of HandlePacket,
// OnTimer and Release; a window update from Read carries the last one).

// tracing is the Endpoint's tracer state.
type tracing struct {
	t     trace.Tracer
	pkts  bool      // per-packet events too (Config.TracePackets)
	now   time.Time // the current engine call's time
	phase func() string

	// the last CongestionState emitted
	period time.Duration
	cwnd   int
	ph     string
	ccOnce bool
}

func newTracing(cfg *Config) tracing {
	if cfg.Tracer == nil {
		return tracing{}
	}
	return tracing{t: cfg.Tracer, pkts: cfg.TracePackets, phase: phaseOf(cfg.Controller), now: cfg.Start}
}

// phaseOf returns a function that names the controller's phase: its Phase() string method, or
// from SlowStart() bool "slow start" / "congestion avoidance", looking through wrappers with
// Unwrap() Controller (congestion.WithMaxBandwidth); nil if it tells neither.
func phaseOf(c congestion.Controller) func() string {
	for x := range wrapped(c) {
		switch x := x.(type) {
		case interface{ Phase() string }:
			return x.Phase
		case interface{ SlowStart() bool }:
			return func() string {
				if x.SlowStart() {
					return "slow start"
				}
				return "congestion avoidance"
			}
		}
	}
	return nil
}

// wrapped yields c and the controllers it wraps, outermost first, following Unwrap()
// Controller (congestion.WithMaxBandwidth) at most 8 deep.
func wrapped(c congestion.Controller) iter.Seq[congestion.Controller] {
	return func(yield func(congestion.Controller) bool) {
		for range 8 {
			if c == nil || !yield(c) {
				return
			}
			u, ok := c.(interface{ Unwrap() congestion.Controller })
			if !ok {
				return
			}
			c = u.Unwrap()
		}
	}
}

// DropCounts returns the drop counters alone (cheaper than Stats, for periodic checks).
func (e *Endpoint) DropCounts() Drops { return e.stats.Drops }

// The trace methods: each is the one call at an emission point; it checks and, if someone
// listens, calls its emit method, which builds the event.

func (e *Endpoint) traceAt(now time.Time) {
	if e.tr.t != nil {
		e.tr.now = now
	}
}

// traceSent: a data packet left (retrans: again).
func (e *Endpoint) traceSent(seq seqno.Seq, payload int, retrans bool) {
	if e.tr.pkts {
		e.emitSent(seq, payload, retrans)
	}
}

// traceReceived: a data packet entered the receive buffer.
func (e *Endpoint) traceReceived(seq seqno.Seq, payload int) {
	if e.tr.pkts {
		e.emitReceived(seq, payload)
	}
}

// traceRelease: the pacer calls Release at now; whatever was due before now leaves late.
func (e *Endpoint) traceRelease(now time.Time) {
	if e.tr.t != nil {
		e.tr.now = now
		if e.tr.pkts {
			e.emitLate(now)
		}
	}
}

// traceGap: the receiver found [first, last] missing (n new losses) and NAKed them (once they
// outlived the reordering window, reorder.go).
func (e *Endpoint) traceGap(first, last seqno.Seq, n int) {
	if e.tr.t != nil {
		e.emitRange(trace.LossDetected, first, last, n)
	}
}

// traceLost: the sender queued [first, last] for retransmission (n of them new in the list).
func (e *Endpoint) traceLost(first, last seqno.Seq, n int) {
	if e.tr.t != nil {
		e.emitRange(trace.PacketsLost, first, last, n)
	}
}

// traceACKSent: the receiver sent e.ack.
func (e *Endpoint) traceACKSent() {
	if e.tr.t != nil {
		e.emitACKSent()
	}
}

// traceACKReceived: an ACK (e.ack, decoded) moved the acknowledged sequence number.
func (e *Endpoint) traceACKReceived() {
	if e.tr.t != nil {
		e.emitACKReceived()
	}
}

// traceNAKSent: the receiver re-reported e.nak's ranges (periodic NAK).
func (e *Endpoint) traceNAKSent() {
	if e.tr.t != nil {
		e.emitNAK(trace.NAKSent, e.nak.Ranges)
	}
}

// traceNAKReceived: the sender accepted a NAK with ranges rs.
func (e *Endpoint) traceNAKReceived(rs []packet.SeqRange) {
	if e.tr.t != nil {
		e.emitNAK(trace.NAKReceived, rs)
	}
}

// traceRTT: an ACK2 gave an RTT sample.
func (e *Endpoint) traceRTT() {
	if e.tr.t != nil {
		e.emitRTT()
	}
}

// traceTimeout: the retransmission timer expired (e.rtoCount expiries so far).
func (e *Endpoint) traceTimeout() {
	if e.tr.t != nil {
		e.emitTimeout()
	}
}

// traceDelivery: a delivery-rate sample went to the controller.
func (e *Endpoint) traceDelivery(d *congestion.Delivery) {
	if e.tr.t != nil {
		e.emitDelivery(d)
	}
}

// traceCC: after applyCC; emits CongestionState when the period, the window or the phase moved.
func (e *Endpoint) traceCC() {
	if e.tr.t != nil {
		e.emitCC()
	}
}

func (e *Endpoint) emitEvent(ev trace.Event) {
	ev.Time = e.tr.now
	e.tr.t.Event(ev)
}

//go:noinline // keeps the trace method that calls it small enough to inline
func (e *Endpoint) emitSent(seq seqno.Seq, payload int, retrans bool) {
	k := trace.PacketSent
	if retrans {
		k = trace.PacketRetransmitted
	}
	e.emitEvent(trace.Event{Kind: k, Seq: uint32(seq), Bytes: payload})
}

//go:noinline // keeps the trace method that calls it small enough to inline
func (e *Endpoint) emitReceived(seq seqno.Seq, payload int) {
	e.emitEvent(trace.Event{Kind: trace.PacketReceived, Seq: uint32(seq), Bytes: payload})
}

func (e *Endpoint) emitLate(now time.Time) {
	if dep := e.Departure(); !dep.IsZero() && now.After(dep) {
		e.emitEvent(trace.Event{Kind: trace.PacerLate, Late: now.Sub(dep)})
	}
}

//go:noinline // keeps the trace method that calls it small enough to inline
func (e *Endpoint) emitRange(k trace.Kind, first, last seqno.Seq, n int) {
	e.emitEvent(trace.Event{Kind: k, Seq: uint32(first), Last: uint32(last), Packets: n})
}

var ackForms = [...]string{packet.ACKLight: "light", packet.ACKMedium: "medium", packet.ACKFull: "full"}

func ackForm(f packet.ACKForm) string {
	if int(f) < len(ackForms) {
		return ackForms[f]
	}
	return ""
}

func (e *Endpoint) emitACKSent() {
	ev := trace.Event{Kind: trace.ACKSent, Seq: e.ack.AckNo, Detail: ackForm(e.ack.Form)}
	if e.ack.Form != packet.ACKLight {
		ev.FlowWindow = int(e.ack.AvailBuf)
	}
	e.emitEvent(ev)
}

func (e *Endpoint) emitACKReceived() {
	e.emitEvent(trace.Event{Kind: trace.ACKReceived, Seq: uint32(e.sndLastAck()), Detail: ackForm(e.ack.Form),
		RTT: e.rtt.RTT(), RTTVar: e.rtt.RTTVar(), FlowWindow: e.flowWindow, InFlight: e.inFlight(),
		RecvRate: e.peerRates.RcvRate, Bandwidth: e.peerRates.Bandwidth})
}

func (e *Endpoint) emitNAK(k trace.Kind, rs []packet.SeqRange) {
	n := 0
	for _, r := range rs {
		n += seqno.Offset(seqno.SeqFromWire(r.First), seqno.SeqFromWire(r.Last)) + 1
	}
	e.emitEvent(trace.Event{Kind: k, Ranges: len(rs), Packets: n})
}

func (e *Endpoint) emitRTT() {
	e.emitEvent(trace.Event{Kind: trace.RTTUpdated, RTT: e.rtt.RTT(), RTTVar: e.rtt.RTTVar()})
}

func (e *Endpoint) emitTimeout() {
	d := "timeout"
	if e.rtoCount == 1 {
		d = "probe"
	}
	e.emitEvent(trace.Event{Kind: trace.Timeout, Packets: e.rtoCount, Detail: d})
}

func (e *Endpoint) emitDelivery(d *congestion.Delivery) {
	ev := trace.Event{Kind: trace.DeliveryRate, Bytes: int(d.Delivered), Interval: d.Interval, RTT: d.RTT}
	ev.Detail = deliveryDetail(d)
	e.emitEvent(ev)
}

func (e *Endpoint) emitCC() {
	ph := ""
	if e.tr.phase != nil {
		ph = e.tr.phase()
	}
	if e.tr.ccOnce && e.period == e.tr.period && e.cwnd == e.tr.cwnd && ph == e.tr.ph {
		return
	}
	e.tr.ccOnce, e.tr.period, e.tr.cwnd, e.tr.ph = true, e.period, e.cwnd, ph
	e.emitEvent(trace.Event{Kind: trace.CongestionState, Period: e.period, CWnd: e.cwnd, Detail: ph})
}

// SetTracer replaces the engine's tracer (nil: none) and whether it gets per-packet events.
func (e *Endpoint) SetTracer(t trace.Tracer, packets bool) {
	e.tr.t, e.tr.pkts = t, packets && t != nil
}

// deliveryDetail is a DeliveryRate event's Detail: the sample's flags, comma-separated (from a
// table, so that a traced connection allocates nothing per ACK for it).
func deliveryDetail(d *congestion.Delivery) string {
	i := 0
	if d.AppLimited {
		i |= 1
	}
	if d.Repair {
		i |= 2
	}
	if d.RTT > 0 && d.RTTHeld {
		i |= 4
	}
	return deliveryDetails[i]
}

var deliveryDetails = [8]string{"", "app-limited", "repair", "app-limited,repair", "rtt-held",
	"app-limited,rtt-held", "repair,rtt-held", "app-limited,repair,rtt-held"}
