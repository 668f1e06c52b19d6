// Package congestion holds udt's congestion controllers: the Controller interface (shaped after
// UDT4's CCC class, spec §5.7), the default model-based controller (BBR, "bbr"), UDT 4.11's native
// DAIMD algorithm (Native, spec §5, "udt") and a fixed-rate controller for benchmarks (Fixed). "spec §N" refers to docs/udt4-spec.md in the
// repository.
//
// A controller only computes: it is told events with the time passed in and answers with a packet
// send period (STP) and a congestion window. It never reads a clock, sleeps or sends, so it can be
// tested as a timeline of events, and the same code runs under testing/synctest and in real time.
//
// # How a connection drives a controller
//
// A connection gets a fresh Controller from its Factory (BBRFactory by default; ParseSpec turns
// a command-line name such as "bbr", "udt" or "fixed:500mbit" into one), calls Init once, then one event
// method at a time from one goroutine, and reads State after each event (UDT's CCUpdate, spec
// §5.5): the period paces the sender, min(Window, flow window) bounds the packets in flight, and
// the optional fields set the receiver's ACK timer, ACK interval and the retransmission timeout.
// A cap on the sending rate (Config.MaxBandwidth, UDT_MAXBW) is applied by wrapping the controller
// with WithMaxBandwidth, or by clamping the period to MinPeriod.
//
// # Custom controllers
//
// Any type with the seven methods of Controller is a controller; see the examples of a
// window-based AIMD driven by hand and of a rate-based controller plugged into a connection
// (Config.Congestion in package conn). Sequence numbers are 31-bit and wrap (spec §1.6): compare them with circular arithmetic.
package congestion

import "time"

// Params describe the connection a controller is attached to. They are given once, to Init.
type Params struct {
	MSS        int    // maximum segment size in bytes, IP and UDP headers included (UDT_MSS, default 1500)
	FlowWindow int    // the peer's flow window in packets (UDT_FC, default 25600)
	ISN        uint32 // the sender's initial sequence number (31 bits)
	// RTT is the round-trip time the connection's handshake measured: from a handshake request
	// sent once to the reply it drew (Karn's rule), 0 if there is none (the listening side, whose
	// cookie exchange keeps no state; a rendezvous connection; a request that was resent). TCP
	// seeds its RTT estimate from the SYN exchange the same way (RFC 6298 §2); BBR paces its first
	// window with it (draft-ietf-ccwg-bbr §4.2.1).
	RTT time.Duration
}

// ACK is an acknowledgement as the sender sees it (spec §2.3, §6.3). As in UDT4, only ACKs that
// advance the acknowledged sequence number reach a controller; light ACKs carry no measurements. A
// zero RTT, RecvRate or Bandwidth means "no value"; the native controller then keeps the previous
// one.
type ACK struct {
	Seq    uint32        // the ACK number: the first sequence number not yet received (31 bits)
	RTT    time.Duration // the sender's smoothed RTT after this ACK (spec §4.2)
	RTTVar time.Duration // the sender's smoothed RTT variance
	// PeerRTT is the RTT the ACK carries (ACK word 2, spec §2.3): the receiver's smoothed RTT,
	// which RTT smooths once more; it follows a growing queue sooner. 0 if none.
	PeerRTT time.Duration
	// RecvRate and Bandwidth are the receiver's estimates (arrival speed and packet pairs, spec
	// §6), as UDT4's native controller uses them: where packets arrive in batches (GRO,
	// loopback, a shaper or virtualised NIC) they read the batches, not the path. A receiver
	// that saw no usable pair keeps its estimator's starting value (1000 packets/s, as UDT 4.11
	// does), so a steady 1000 is no measurement. The default controller uses neither.
	// Bandwidth comes from the gap between the two packets of each pair the sender sends back
	// to back (spec §6.2): to a controller that declines pairs (PacketPairer, BBR) it reads
	// the sender's own spacing, about its sending rate, not the link's.
	RecvRate  int    // the receiver's packet arrival speed, smoothed 7/8, packets/s; 0 if unknown
	Bandwidth int    // the packet-pair capacity estimate (see above), smoothed 7/8, packets/s; 0 if unknown
	CurrSeq   uint32 // the largest sequence number sent so far
}

// Range is an inclusive range of lost sequence numbers (31 bits, wrap-aware).
type Range struct{ First, Last uint32 }

// Loss is a loss report (NAK, spec §2.4) as the sender sees it.
type Loss struct {
	Ranges  []Range // the reported losses, in the order the NAK carried them; only valid during the call
	CurrSeq uint32  // the largest sequence number sent so far
}

// State is what a controller decides. conn reads it after every event; zero optional fields
// leave the connection's defaults in place.
type State struct {
	// Period is the packet send period (STP): the gap between two data packets' departures.
	// 0 means no rate limit.
	Period time.Duration
	// Window is the congestion window in packets; the sender keeps at most min(Window, flow
	// window) packets unacknowledged.
	Window float64
	// ACKPeriod, if non-zero, is the receiver's full-ACK period (at most SYN = 10 ms). Optional.
	ACKPeriod time.Duration
	// ACKInterval, if non-zero, asks for an ACK every ACKInterval packets. Optional.
	ACKInterval int
	// RTO, if non-zero, replaces the retransmission timeout of spec §4.5. Optional.
	RTO time.Duration
}

// Controller is a congestion control algorithm, in the shape of UDT4's CCC class (spec §5.7).
// All methods are called from one goroutine at a time; now is the event's time on the monotonic clock.
type Controller interface {
	// Init is called once before any other method.
	Init(now time.Time, p Params)
	// OnACK is called for each ACK that advances the acknowledged sequence number.
	OnACK(now time.Time, a ACK)
	// OnLoss is called for each loss report (NAK) the sender accepts.
	OnLoss(now time.Time, l Loss)
	// OnTimeout is called when the retransmission (EXP) timer fires with packets in flight.
	OnTimeout(now time.Time)
	// OnPacketSent is called for each data packet sent (first transmission or retransmission).
	// size is the packet's length in bytes, its 16-byte UDT header included (the UDP payload;
	// traces count the data alone, 16 bytes fewer).
	OnPacketSent(now time.Time, seq uint32, size int)
	// OnPacketReceived is called for each data packet received; size as in OnPacketSent.
	OnPacketReceived(now time.Time, seq uint32, size int)
	// State returns the controller's current decision.
	State() State
}

// PacketPairer is implemented by a Controller that says whether the sender should send packet
// pairs: every packet whose sequence number is a multiple of 16 followed at once by the next
// one (spec §6.2), so that the receiver can estimate the link capacity from their gap for
// ACK.Bandwidth. A Controller without the method gets them, as from UDT4's sender. The
// connection asks once, looking through wrappers with Unwrap() Controller
// (WithMaxBandwidth); a wrapper that embeds the Controller interface without Unwrap hides the
// method (embed the concrete type, or add Unwrap). A controller that does not read
// ACK.Bandwidth should decline them: the pair's second packet puts a packet of queue on the
// bottleneck every 16 packets. BBR and Fixed decline them; Native reads them.
type PacketPairer interface {
	PacketPairs() bool
}
