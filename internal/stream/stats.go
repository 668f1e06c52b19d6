package stream

import "time"

// Stats are the connection's counters, after UDT4's perfmon (spec §7.4), plus byte counts and
// drops by reason. Counters are totals since New.
type Stats struct {
	PktSent           uint64 // data packets sent, retransmissions included (pktSentTotal)
	PktRecv           uint64 // data packets received, duplicates included (pktRecvTotal)
	PktRetrans        uint64 // data packets retransmitted (pktRetransTotal)
	PktRecvFilled     uint64 // received packets that filled a gap (retransmitted or reordered)
	PktReordered      uint64 // received packets that arrived after a packet sent later: late, not lost
	PktSpurious       uint64 // retransmissions an ACK showed unnecessary (it came sooner than a round trip after them)
	SndLoss           uint64 // packets declared lost from the peer's NAKs and put in the loss list (pktSndLossTotal)
	LossDeferred      uint64 // NAKed packets held for the sender's reordering window before a resend
	LossDeferredAcked uint64 // of which acknowledged within it: late, not lost (never resent)
	LossUnsent        uint64 // packets declared lost that an ACK covered before their resend left: late
	RcvLoss           uint64 // packets reported missing here, after the reordering window (pktRcvLossTotal)
	ACKSent           uint64 // full and medium ACKs sent (pktSentACKTotal)
	ACKRecv           uint64 // full and medium ACKs received (pktRecvACKTotal)
	LightACKSent      uint64
	LightACKRecv      uint64
	WindowUpdates     uint64 // window-only ACKs: Read freed receive buffer, or a small buffer's self-clock (flow.go)
	NAKSent           uint64 // NAK packets sent (pktSentNAKTotal), periodic ones included
	NAKPeriodic       uint64 // NAK packets sent by the periodic re-report
	NAKRecv           uint64 // NAK packets accepted (pktRecvNAKTotal)
	ACK2Sent          uint64
	ACK2Recv          uint64
	KeepAliveSent     uint64
	KeepAliveRecv     uint64
	KeepAliveAnswers  uint64 // keep-alives sent in answer to the peer's (included in KeepAliveSent)
	CtrlSent          uint64 // control packets of every type sent
	Probes            uint64 // tail-loss probes (first timer expiry without ACK progress)
	Timeouts          uint64 // retransmission timeouts (later expiries, each a probe and Controller.OnTimeout)
	GoBackN           uint64 // times every unacknowledged packet was re-queued, the peer answering after a timeout
	RetransLost       uint64 // retransmissions declared lost: an ACK named them missing a round trip after (lostHeadDue)
	NAKLost           uint64 // originals declared lost without a NAK: the ACK named them missing after a later packet was delivered (lostHeadDue)
	EncodeErrors      uint64 // control packets our encoder refused (a bug if non-zero)
	Unreachable       uint64 // port-unreachable reports about packets to the peer (OnUnreachable)
	PMTUProbes        uint64 // path MTU probes sent (pmtud.go)
	PMTUProbeLosses   uint64 // of which lost
	PMTUBlackHoles    uint64 // falls back to the base size after a retransmission timeout
	PathMTUChanges    uint64 // times the packet size changed
	CtrlQueueDrops    uint64 // control packets dropped because the caller did not drain PopControl (a bug if non-zero)

	BytesSent    uint64 // payload bytes sent, retransmissions included
	BytesRecv    uint64 // payload bytes accepted into the receive buffer
	BytesWritten uint64 // bytes accepted by Write
	BytesRead    uint64 // bytes returned by Read

	RTT               time.Duration // smoothed RTT (msRTT)
	RTTVar            time.Duration // smoothed RTT variance
	MinRTT            time.Duration // sender: smallest time from a packet's only transmission to its ACK
	RecvReorderWindow time.Duration // how long a gap waits here before its NAK (reorder.go)
	SendReorderWindow time.Duration // how long after a round trip a NAKed packet waits before its resend
	SendPeriod        time.Duration // packet send period in use (usPktSndPeriod); 0 = unpaced
	FlowWindow        int           // packets: the peer's advertised flow window (pktFlowWindow)
	CongestionWindow  int           // packets: the controller's window, 0 = none (pktCongestionWindow)
	FlightSize        int           // packets sent and not acknowledged (pktFlightSize)
	Bandwidth         int           // packets/s: smoothed link capacity from the peer's ACKs
	RecvRate          int           // packets/s: smoothed peer arrival speed from its ACKs
	LocalRecvRate     int           // packets/s: this receiver's arrival speed (ACK word 4)
	SendBufferFree    int           // bytes free in the send buffer (byteAvailSndBuf)
	RecvBufferFree    int           // packets free in the receive buffer (byteAvailRcvBuf / MSS)
	PacketSize        int           // bytes: the size data packets are cut at now (UDP payload)

	Drops    Drops
	Messages MessageStats // message mode (Config.Messages) only
}

// Drops counts incoming packets dropped or ignored, by reason.
type Drops struct {
	Malformed   uint64 // too short, bad length, bad NAK or ACK body
	WrongDest   uint64 // destination socket ID is not ours
	ForgedACK   uint64 // ACK number beyond the last packet sent + 1
	ForgedNAK   uint64 // NAK naming a number never sent
	OutOfWindow uint64 // data beyond the receive buffer
	Duplicate   uint64 // data already received or already read
	UnknownACK2 uint64 // ACK2 for no recorded ACK (late, duplicated or forged)
	IgnoredCtrl uint64 // control types a stream connection does not use (handshake, 4, 7, 0x7FFF)
}

// Stats returns the counters and the instantaneous state.
func (e *Endpoint) Stats() Stats {
	s := e.stats
	s.RTT, s.RTTVar = e.rtt.RTT(), e.rtt.RTTVar()
	s.MinRTT = e.sro.minRTT
	s.RecvReorderWindow, s.SendReorderWindow = e.rcvReorderWindow(), e.sndReorderWindow()
	s.SendPeriod = e.period
	s.FlowWindow = e.flowWindow
	s.CongestionWindow = e.cwnd
	s.FlightSize = e.inFlight()
	s.Bandwidth = e.peerRates.Bandwidth
	s.RecvRate = e.peerRates.RcvRate
	s.LocalRecvRate = e.arrivals.RecvSpeed()
	s.SendBufferFree = e.snd.Free()
	s.RecvBufferFree = e.rcv.Available()
	s.PacketSize = e.pmtu.size
	s.PathMTUChanges = e.pmtu.changes
	e.messageStats(&s)
	return s
}
