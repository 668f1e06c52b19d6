package congestion

import "time"

// Delivery is what one acknowledgement event taught the sender about its own packets: the
// delivery-rate sample of draft-cheng-iccrg-delivery-rate-estimation-02 ("the rate sample", §3)
// and the event's delivered, lost and in-flight byte counts. The sender computes it from what it
// sent and saw acknowledged, never from the receiver's arrival-speed or packet-pair fields (spec
// §6), which bursts fool.
//
// An event is a cumulative ACK (full, medium or light, spec §2.3), a NAK (spec §2.4) or the
// sender's own inference that packets arrived (NewlyAcked, between ACKs and NAKs). UDT4 has
// no selective acknowledgement, so the sender reads a NAK as one: a receiver reports the gap
// [a, b] when packet b+1 arrives (spec §4.4), so every packet sent up to b+1 and not reported
// missing has been received. A later cumulative ACK that jumps over a repaired hole then counts
// only the packets no NAK had already covered, and the sample's interval is at least the time
// over which the counted packets were sent; so a retransmission that fills a hole cannot make
// the burst of packets it releases look like bandwidth.
//
// Byte counts are whole datagrams (UDT header and payload, without the 28 bytes of IP and UDP
// header), as a bottleneck queue sees them: PacketSize for full-size packets. A rate taken from
// Delivered/Interval is in these bytes per second (Params.MSS and Fixed's rates include the 28).
//
// The sample's reference packet is the one whose departure opens its window (the rate-estimation
// draft's most recently sent packet among those the event delivered): an original transmission
// acknowledged in time if the event delivered one, else a Repair. A packet acknowledged later
// than the tracker's SRTT plus UDT's 10 ms ACK period after it left (it waited behind a hole), a
// resend the receiver never reported missing, and a resend shown spurious are never the
// reference; an event that delivered only such packets gives no sample (Delivered 0), though
// PriorDelivered, TxInFlight, LostSinceSent and AppLimited still describe the packet that opens
// the event's round-trip accounting.
//
// A controller should drop samples whose Interval is shorter than its min RTT, as BBR does (the
// rate-estimation draft, §3.3: ACKs compressed closer than the path delivers); after that, a
// sample reads at most about one PacketSize per min RTT above the bottleneck (the count is whole
// packets: TestDeliverySamplesNeverExceedTheBottleneck in internal/stream), unless it is a
// Repair whose original was only late (see Repair).
type Delivery struct {
	// Delivered is the number of bytes delivered over Interval: the sample's numerator. 0 means
	// the event gave no valid sample: it delivered nothing, or no packet that can be the
	// reference (above), or the late packets left out cancelled what it counted. Packets
	// acknowledged late count only in a sample whose time span holds their estimated arrival
	// (departure + SRTT), and never in a Repair sample.
	Delivered int64
	// Interval is the sample's denominator: the largest of the rate-estimation draft's send and
	// ACK intervals (§3.3; for a Repair sample the ACK interval starts no earlier than the
	// previous repair's ACK) and the span of departures of everything the sample counts. It is
	// positive whenever Delivered is.
	Interval time.Duration
	// AppLimited reports that the sample's reference packet was sent while the sender was
	// application-limited (no data to send, or held back by the peer's flow window, not by the
	// congestion window or the pacing rate): the sample may understate the path (draft §3.4).
	AppLimited bool
	// Repair reports that the sample's reference packet is a retransmission of a packet the
	// receiver reported missing (the event delivered no original transmission in time). Its
	// delivery is dated by its ACK, as Linux's tcp_rate.c dates a retransmitted segment's, but
	// UDT's cumulative ACK stops at the next hole, so what arrived beyond it during the sample is
	// not counted yet: the sample may understate the path. Treat it as an application-limited
	// one: let it raise a bandwidth estimate, never lower one or count as evidence of a plateau
	// (BBR does so). It may also read high, if its original was in fact only late and the resend
	// was not detected as spurious (Linux accepts the same error to keep measuring during heavy
	// loss). Repair implies Delivered > 0; RTT comes only from original packets (Karn's rule), so
	// it is usually 0 in such events; AppLimited may be set as well. It is what a sender that
	// sends nothing but repairs (a long loss list) measures; without it such a sender's model
	// could not move until the list was worked off.
	Repair bool
	// RTT is the round-trip time of the newest packet this event delivered that was never
	// retransmitted (Karn's rule): from its departure to this event. 0 if there is none.
	RTT time.Duration
	// RTTHeld reports that RTT's packet reached the receiver before another packet whose
	// arrival was reported first: one sent later and reported by an earlier ACK or NAK, or a
	// retransmission sent later that this event acknowledges too. On a FIFO path the report of
	// RTT's packet then waited for the other's (behind a hole: UDT's ACK is cumulative), so RTT
	// includes that wait, up to a round trip. Such an RTT is an upper bound of the path's (it may
	// still lower a min-RTT filter) but no measure of its queue: a delay signal should skip it,
	// as Linux TCP times a segment at its SACK and never again at the cumulative ACK that covers
	// it later.
	RTTHeld bool

	// PriorDelivered is TotalDelivered when the sample's reference packet was sent: a packet-timed
	// round trip ends when it reaches the TotalDelivered at the round's start (BBR's round
	// counting, draft-ietf-ccwg-bbr §4.5.1).
	PriorDelivered int64
	// TxInFlight is the bytes in flight when the sample's reference packet was sent (BBR's
	// P.tx_in_flight, draft-ietf-ccwg-bbr §4.5.10.2).
	TxInFlight int64
	// LostSinceSent is the bytes declared lost between the reference packet's departure and this
	// event (TotalLost now − TotalLost then): the numerator of the loss rate of the flight that
	// packet belonged to.
	LostSinceSent int64

	// NewlyDelivered and NewlyLost are the bytes this event delivered and declared lost.
	NewlyDelivered, NewlyLost int64
	// NewlyAcked is the bytes this event showed received for the first time (Linux TCP's
	// acked_sacked, by which BBR grows its window): newly delivered, or taken out of the flight
	// because silence implies their arrival. A UDT4 receiver reports a gap as soon as a later
	// packet arrives (spec §4.4), so a packet sent more than a round trip plus four RTT
	// deviations ago, followed by another sent as long ago, and never reported missing, is taken
	// to have arrived; a NAK naming it later declares it lost (it is not counted again when its
	// repair is acknowledged). UDT acknowledges cumulatively, every 10 ms or 64 packets, and a
	// hole holds every ACK back for its repair's round trip: the sender learns of most arrivals
	// this way first, as a TCP sender does from SACK blocks. Implied packets are not delivered:
	// they count in no rate sample until an ACK or NAK reports them, and then not again here.
	NewlyAcked int64
	// LostSentFirst and LostSentLast are the earliest and the latest departure among the packets
	// this event declared lost (zero if none): losses belong to the flight, and the controller
	// state, that sent them.
	LostSentFirst, LostSentLast time.Time
	// LostTxInFlight is the largest TxInFlight among the packets this event declared lost: the
	// flight they left in, the level at which the path dropped them (0 if none).
	LostTxInFlight int64
	// TotalDelivered and TotalLost are the connection's running totals after this event.
	TotalDelivered, TotalLost int64
	// InFlight is the bytes in flight after this event (sent, and neither delivered nor declared
	// lost; retransmissions count again once sent), PriorInFlight before it.
	InFlight, PriorInFlight int64
	// Spurious is the bytes of packets declared lost before that this event showed were not: an
	// ACK covered them before their resend left, or sooner after it than a round trip (RFC 8985's
	// spurious-retransmission test). A controller may undo what those losses made it do (RFC 3522).
	Spurious int64
	// CwndLimited reports that the congestion window held the sender back since the previous
	// event (the draft-ietf-ccwg-bbr-01 is_cwnd_limited).
	CwndLimited bool
	// PacketSize is the size in bytes of a full data packet on this connection now, the size
	// the sender cuts packets at: a conservative base until path-MTU discovery confirms more, up
	// to MSS − 28, and less again after a black hole. It is the unit in which to turn byte counts
	// into State.Window's packets.
	PacketSize int
}

// DeliveryController is a Controller that models the path from the sender's own delivery
// accounting (BBR-style controllers). The connection calls OnDelivery after every ACK and NAK
// that delivered or declared lost some data, or changed the bytes in flight, before the event's
// OnACK or OnLoss; and whenever it infers arrivals or declares losses between them (a release or
// a timer), in events that carry no rate sample, RTT or NewlyDelivered (see NewlyAcked). For such
// a controller the congestion window (State.Window, in packets: divide byte counts by
// Delivery.PacketSize) bounds the packets in flight in the sense of
// Delivery.InFlight (packets neither delivered, implied nor declared lost), while the flow window
// still bounds the packets sent and not cumulatively acknowledged (the peer buffers them).
type DeliveryController interface {
	Controller
	OnDelivery(now time.Time, d Delivery)
}
