package conn

import (
	"time"

	"github.com/udtgo/udt/internal/stream"
	"github.com/udtgo/udt/pacer"
)

// Stats are a connection's performance counters, after UDT4's perfmon (spec §7.4), plus byte
// counts and drops by reason. Counters are totals since the connection was established; the
// rest is the state at the call.
//
// Bandwidth and RecvRate are the peer's receiver-side estimates (packet pairs and arrival speed,
// spec §6), kept for UDT4's perfmon and its native controller: where packets arrive in batches
// (GRO, loopback, a shaper or a virtualised NIC releasing several at once) they read the batch
// spacing, not the path, and can be off by orders of magnitude either way. The default
// controller does not use them; it measures the delivery rate itself (congestion.Delivery), and
// declines the packet pairs Bandwidth is measured from (congestion.PacketPairer), so under it
// Bandwidth reads this side's own spacing, about its sending rate, not the link's capacity.
// Before there is an estimate they hold starting values (RecvRate 16, Bandwidth 1,
// LocalRecvRate 1 on a side that has received no data), not measurements.
//
// RTT and RTTVar start at UDT4's 100 ms and 50 ms (spec §4.2) and follow the ACK2 round trips
// once data flows; the handshake's round trip seeds only the controller (congestion.Params.RTT).
// CongestionWindow bounds the packets in the network (neither acknowledged, nor shown received
// by a NAK or by silence, nor declared lost: congestion.DeliveryController), FlightSize counts
// those not yet cumulatively acknowledged, so it may exceed the window while a hole holds the
// ACK back; the flow window bounds FlightSize.
type Stats struct {
	PktSent       uint64 // data packets sent, retransmissions included (pktSentTotal)
	PktRecv       uint64 // data packets received, duplicates included (pktRecvTotal)
	PktRetrans    uint64 // data packets retransmitted (pktRetransTotal)
	PktRecvFilled uint64 // received packets that filled a gap (retransmitted or reordered)
	PktReordered  uint64 // received packets that arrived after a packet sent later: late, not lost
	PktSpurious   uint64 // retransmissions an ACK showed unnecessary (the receiver had the first copy)
	LossDeferred  uint64 // NAKed packets held for the reordering window before a resend (UDT 4.11 peers)
	LossLate      uint64 // of the packets NAKed or declared lost, those ACKed before their resend: late, not lost
	PktSndLoss    uint64 // packets the peer reported lost to us (pktSndLossTotal)
	PktRcvLoss    uint64 // packets detected missing here (pktRcvLossTotal)
	PktSentACK    uint64 // full and medium ACKs sent (pktSentACKTotal)
	PktRecvACK    uint64 // full and medium ACKs received (pktRecvACKTotal)
	LightACKSent  uint64 // light ACKs sent (one per 64 packets)
	LightACKRecv  uint64 // light ACKs received
	PktSentNAK    uint64 // NAK packets sent, periodic re-reports included (pktSentNAKTotal)
	NAKPeriodic   uint64 // NAK packets sent by the periodic re-report
	PktRecvNAK    uint64 // NAK packets accepted (pktRecvNAKTotal)
	ACK2Sent      uint64 // ACK2 packets sent
	ACK2Recv      uint64 // ACK2 packets received
	KeepAliveSent uint64 // keep-alive packets sent
	KeepAliveRecv uint64 // keep-alive packets received
	Probes        uint64 // tail-loss probes: the first timer expiry without ACK progress (two packets)
	Timeouts      uint64 // retransmission timeouts: later expiries, each a two-packet probe, backing off ×2
	GoBackN       uint64 // times every unacknowledged packet was re-sent, the peer answering after a timeout
	KernelDrops   uint64 // datagrams the kernel dropped at this connection's UDP socket, its receive buffer full (Linux; shared by the socket's connections)

	// Path MTU discovery (see Config.MSS). PacketSize is the size in bytes of the data packets
	// sent now (UDP payload, UDT header included; a full packet carries PacketSize−16 bytes of
	// data) and PathMTU the IP packet that makes (PacketSize + 28 for IPv4, + 48 for IPv6).
	PacketSize      int
	PathMTU         int
	PathMTUChanges  uint64 // times PacketSize changed
	PMTUProbes      uint64 // probes sent (data packets of a size being tried)
	PMTUProbeLosses uint64 // probes lost or refused
	PMTUBlackHoles  uint64 // falls back to the base size after a retransmission timeout
	Unreachable     uint64 // ICMP port-unreachable reports about packets to the peer (a hint)

	BytesSent    uint64 // payload bytes sent, retransmissions included
	BytesRecv    uint64 // payload bytes accepted into the receive buffer
	BytesWritten uint64 // bytes accepted by Write
	BytesRead    uint64 // bytes returned by Read

	RTT               time.Duration // smoothed round-trip time (msRTT)
	RTTVar            time.Duration // smoothed RTT variance
	MinRTT            time.Duration // smallest time from a packet's only transmission to its ACK
	ReorderWindow     time.Duration // how long a gap waits here before its NAK (largest reordering seen; 0 = none seen)
	SendReorderWindow time.Duration // how long a UDT 4.11 peer's NAK waits here, after a round trip, before the resend
	SendPeriod        time.Duration // packet send period (STP) in use (usPktSndPeriod); 0 = unpaced
	FlowWindow        int           // packets: the peer's advertised flow window (pktFlowWindow)
	CongestionWindow  int           // packets: the controller's window, 0 = none (pktCongestionWindow)
	FlightSize        int           // packets sent and not yet acknowledged (pktFlightSize)
	Bandwidth         int           // packets/s: smoothed packet-pair capacity estimate from the peer's ACKs (spec §6.2; see above)
	RecvRate          int           // packets/s: smoothed arrival speed the peer reports (spec §6.1; see below)
	LocalRecvRate     int           // packets/s: this side's arrival speed (ACK word 4)
	SendBufferFree    int           // bytes free in the send buffer (byteAvailSndBuf)
	RecvBufferFree    int           // packets free in the receive buffer

	Drops    DropStats    // incoming packets dropped or ignored, by reason
	Messages MessageStats // message mode (Config.MessageMode) only
}

// DropStats counts incoming packets a connection dropped or ignored, by reason. None of them
// affects the connection: hostile or stale input is dropped, never fatal.
type DropStats struct {
	ForeignSource uint64 // addressed to this connection from another address or port (spec §3.1)
	Malformed     uint64 // too short, bad length, bad ACK or NAK body
	ForgedACK     uint64 // ACK number beyond anything sent (the reference breaks the connection)
	ForgedNAK     uint64 // NAK naming a number never sent (the reference breaks the connection)
	OutOfWindow   uint64 // data beyond the receive buffer
	Duplicate     uint64 // data already received or already read
	UnknownACK2   uint64 // ACK2 for no recorded ACK (late, duplicated or forged)
	IgnoredCtrl   uint64 // control types a stream connection does not use
}

// Stats returns the connection's counters. It is safe to call at any time, also after Close.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	s := c.ep.Stats()
	c.mu.Unlock()
	st := statsFrom(&s, c.foreignDrops.Load())
	st.KernelDrops = c.mux.kernelDrops() // a syscall: not under c.mu
	st.PathMTU = st.PacketSize + ipUDPOverhead(c.peer)
	return st
}

// PacerStats returns the statistics of the pacer goroutine that times this connection's data
// packets: wakes, lateness (µs) and packets per wake. The pacer is shared by every connection
// on the same UDP socket (a Listener's accepted connections share one).
func (c *Conn) PacerStats() pacer.Stats { return c.mux.send.Stats() }

// PacerName is the pacer backend in use on this connection's socket (Config.Pacer).
func (c *Conn) PacerName() string { return c.mux.pacerName }

func statsFrom(s *stream.Stats, foreign uint64) Stats {
	return Stats{
		PktSent: s.PktSent, PktRecv: s.PktRecv, PktRetrans: s.PktRetrans, PktRecvFilled: s.PktRecvFilled,
		PktReordered: s.PktReordered, PktSpurious: s.PktSpurious, LossDeferred: s.LossDeferred,
		LossLate: s.LossDeferredAcked + s.LossUnsent, Probes: s.Probes, GoBackN: s.GoBackN,
		MinRTT: s.MinRTT, ReorderWindow: s.RecvReorderWindow, SendReorderWindow: s.SendReorderWindow,
		PktSndLoss: s.SndLoss, PktRcvLoss: s.RcvLoss,
		PktSentACK: s.ACKSent, PktRecvACK: s.ACKRecv, LightACKSent: s.LightACKSent, LightACKRecv: s.LightACKRecv,
		PktSentNAK: s.NAKSent, NAKPeriodic: s.NAKPeriodic, PktRecvNAK: s.NAKRecv,
		ACK2Sent: s.ACK2Sent, ACK2Recv: s.ACK2Recv, KeepAliveSent: s.KeepAliveSent, KeepAliveRecv: s.KeepAliveRecv,
		Timeouts:   s.Timeouts,
		PacketSize: s.PacketSize, PathMTUChanges: s.PathMTUChanges, PMTUProbes: s.PMTUProbes,
		PMTUProbeLosses: s.PMTUProbeLosses, PMTUBlackHoles: s.PMTUBlackHoles, Unreachable: s.Unreachable,
		BytesSent: s.BytesSent, BytesRecv: s.BytesRecv, BytesWritten: s.BytesWritten, BytesRead: s.BytesRead,
		RTT: s.RTT, RTTVar: s.RTTVar, SendPeriod: s.SendPeriod, FlowWindow: s.FlowWindow,
		CongestionWindow: s.CongestionWindow, FlightSize: s.FlightSize, Bandwidth: s.Bandwidth,
		RecvRate: s.RecvRate, LocalRecvRate: s.LocalRecvRate,
		SendBufferFree: s.SendBufferFree, RecvBufferFree: s.RecvBufferFree,
		Drops: DropStats{
			ForeignSource: foreign, Malformed: s.Drops.Malformed, ForgedACK: s.Drops.ForgedACK,
			ForgedNAK: s.Drops.ForgedNAK, OutOfWindow: s.Drops.OutOfWindow, Duplicate: s.Drops.Duplicate,
			UnknownACK2: s.Drops.UnknownACK2, IgnoredCtrl: s.Drops.IgnoredCtrl + s.Drops.WrongDest,
		},
		Messages: MessageStats(s.Messages),
	}
}
