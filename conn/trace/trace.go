// Package trace describes what happens inside one udt connection, event by event, for tools
// that log, count or plot it: packets sent, retransmitted, received and lost, ACKs and NAKs
// both ways, RTT updates, the congestion controller's decisions, retransmission timeouts, the
// pacer's lateness, path MTU changes and the end of the connection. It is udt's counterpart of
// quic-go's logging tracers and qlog.
//
// Set conn.Config.Tracer to a function that returns a Tracer for each new connection (or nil
// not to trace it); NewJSONWriter writes events as JSON lines, which NewReader reads back
// (udtperf's -trace and `udtperf plot` use both). A connection without a tracer pays one
// predictable branch per event site and allocates nothing.
package trace

import (
	"net"
	"time"
)

// Kind says what an Event reports. Each constant lists the Event fields it sets; the others
// are zero.
type Kind uint8

const (
	// PacketSent: a data packet left for the first time. Seq, Bytes (payload).
	PacketSent Kind = iota + 1
	// PacketRetransmitted: a data packet left again. Seq, Bytes.
	PacketRetransmitted
	// PacketReceived: a data packet was accepted into the receive buffer (duplicates and
	// packets beyond the window are dropped before: see conn.Stats().Drops). Seq, Bytes.
	PacketReceived
	// LossDetected (receiver): data packets [Seq, Last] are missing: a later one arrived. An
	// immediate NAK reports them (spec §2.4). Seq, Last, Packets.
	LossDetected
	// PacketsLost (sender): [Seq, Last] were reported lost (NAK) or presumed lost (a
	// retransmission timeout) and queued for retransmission; Packets is how many of them were
	// not queued already. The preceding NAKReceived or Timeout event says which.
	PacketsLost
	// ACKSent (receiver): an ACK acknowledging everything before Seq. Detail: "full",
	// "medium" or "light" (spec §2.3); FlowWindow: the window advertised, packets (not for
	// light ACKs).
	ACKSent
	// ACKReceived (sender): an ACK that moved the acknowledged sequence number to Seq.
	// Detail: "full", "medium" or "light"; RTT, RTTVar: the smoothed values after it;
	// FlowWindow: the peer's window; InFlight: packets still unacknowledged; RecvRate and
	// Bandwidth: the peer's smoothed arrival speed and capacity estimates, packets/s (full
	// ACKs; spec §6; Bandwidth reads the sending rate under a controller that declines packet
	// pairs, congestion.PacketPairer).
	ACKReceived
	// NAKSent (receiver): a periodic re-report of missing packets (the immediate NAK of a new
	// loss is a LossDetected event). Packets: packets named; Ranges: ranges.
	NAKSent
	// NAKReceived (sender): a loss report was accepted. Packets: packets named; Ranges:
	// ranges. PacketsLost events follow.
	NAKReceived
	// RTTUpdated (receiver): an ACK2 gave an RTT sample (spec §2.5). RTT, RTTVar after it.
	RTTUpdated
	// CongestionState: the controller's decision changed (spec §5.5). Period: the packet send
	// period (0: unpaced); CWnd: the congestion window, packets (0: none); Detail: the
	// controller's phase, if it tells it ("slow start", "congestion avoidance", or what its
	// Phase() string method says).
	CongestionState
	// Timeout: the retransmission timer expired with data in flight. Detail: "probe" (a
	// tail-loss probe, not told to the controller) or "timeout"; Packets: expiries since the
	// last ACK progress.
	Timeout
	// PacerLate: the pacer released data later than its schedule said. Late: by how much.
	PacerLate
	// PathMTU: the packet size in use changed. Bytes: the new MSS (IP and UDP headers
	// included); Detail: why.
	PathMTU
	// Closed: the connection ended. Detail: "closed" (Close), "peer closed", or the error
	// that broke it.
	Closed
	// EventsLost: the tracer fell behind and Packets events were dropped before this one.
	EventsLost
	// DeliveryRate (sender, delivery-based controllers such as BBR): a delivery-rate sample
	// (congestion.Delivery): Bytes delivered over Interval; RTT: the sample's RTT (0: none);
	// Detail: comma-separated flags, "app-limited" when the sender was, "repair" when the
	// sample's reference packet was a retransmission (either way the sample may understate the
	// path), "rtt-held" when the RTT's packet waited behind a hole for its report
	// (congestion.Delivery.RTTHeld: an upper bound of the path's RTT, no measure of its queue).
	DeliveryRate

	numKinds
)

var kindNames = [numKinds]string{
	PacketSent: "sent", PacketRetransmitted: "retrans", PacketReceived: "recv", LossDetected: "loss",
	PacketsLost: "lost", ACKSent: "ack_sent", ACKReceived: "ack", NAKSent: "nak_sent", NAKReceived: "nak",
	RTTUpdated: "rtt", CongestionState: "cc", Timeout: "timeout", PacerLate: "late", PathMTU: "mtu",
	Closed: "closed", EventsLost: "events_lost", DeliveryRate: "delivery",
}

// String is the kind's name in JSON lines ("sent", "ack", "cc", …).
func (k Kind) String() string {
	if k < numKinds && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n != "" && n == s {
			return Kind(k), true
		}
	}
	return 0, false
}

// Event is one thing that happened to a connection. Kind says which fields are set; sequence
// numbers are 31-bit and wrap (spec §1.6).
type Event struct {
	Time time.Time
	Kind Kind

	Seq, Last  uint32        // a packet's sequence number; a range [Seq, Last]; an ACK number (Seq)
	Packets    int           // packets in a range or report; expiries (Timeout); events lost
	Ranges     int           // ranges in a NAK
	Bytes      int           // payload bytes (packets); MSS (PathMTU)
	RTT        time.Duration // smoothed round-trip time
	RTTVar     time.Duration // smoothed RTT variance
	FlowWindow int           // packets
	InFlight   int           // packets sent and not acknowledged
	RecvRate   int           // packets/s
	Bandwidth  int           // packets/s
	Period     time.Duration // send period
	CWnd       int           // congestion window, packets
	Late       time.Duration // pacer lateness
	Interval   time.Duration // the time a delivery-rate sample spans
	Detail     string        // a short word or phrase, per Kind
}

// Tracer receives one connection's events, in order, from one goroutine at a time. It is
// called without the connection's locks held and may do I/O, but while it is behind the
// connection queues events (a bounded number: the excess is dropped and reported by an
// EventsLost event).
type Tracer interface {
	Event(ev Event)
}

// Func adapts a function to a Tracer.
type Func func(Event)

// Event calls f(ev).
func (f Func) Event(ev Event) { f(ev) }

// ConnInfo describes a connection when it is established.
type ConnInfo struct {
	Start         time.Time // when the handshake completed
	Local, Remote net.Addr  // UDP addresses
	LocalID       uint32    // this side's UDT socket ID
	PeerID        uint32    // the peer's
	MSS           int       // negotiated maximum segment size, bytes (IP and UDP headers included; payload MSS−44)
	Server        bool      // accepted by a Listener (else dialed)
	Congestion    string    // the controller as congestion.ParseSpec names it ("bbr", "udt", "fixed:…"), or its Go type
}
