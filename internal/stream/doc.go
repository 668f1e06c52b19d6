// Package stream is the sans-IO protocol engine of one established UDT4 connection: the sender
// (send buffer, sender loss list, flow and congestion window, pacing, retransmission), the
// receiver (receive buffer, loss detection, NAK, ACK, light ACK, ACK2, the spec §6 estimates) and
// the connection timers (ACK, periodic NAK, retransmission, keep-alive, dead peer), as the UDT4
// spec (docs/udt4-spec.md in the repository, §2, §4, §6) describes them, with the departures listed below.
//
// Building blocks: internal/packet (codec), internal/seqno (sequence and message numbers),
// internal/buffer (send and receive buffers), internal/losslist (both loss lists),
// internal/arrival (receive speed and packet-pair capacity, sender smoothing), internal/rtt (ACK
// history for ACK2, RTT estimator), pacer.Scheduler (departure schedule) and a
// congestion.Controller.
//
// # Boundary with conn
//
// The engine reads no clock, starts no goroutine, does no I/O, never blocks, never calls back and
// is not safe for concurrent use: package conn serialises every call with one mutex per
// connection and passes the time in. Times are on the monotonic clock; the engine keeps them as
// durations since Config.Start. Every call only changes state; conn then pulls what it must do and
// does it after releasing its mutex (effects.go), so no system call and no wait happens under it.
//
//   - Application side: Write copies bytes into the bounded send buffer and returns the count
//     (0 = full: wait for CanWrite; or the connection stopped sending: see Err and PeerClosed).
//     Read returns in-order bytes: (0, nil) = nothing yet (wait for CanRead); (0, io.EOF) after
//     the peer's Shutdown once all in-order data has been read (a *TruncatedError instead if a
//     hole was left); (0, Err()) once broken. Both copy what they are given: conn bounds each
//     call's chunk. Close starts a close that still delivers what was written, up to a linger
//     time, then sends Shutdown (close.go); CloseResult says whether everything written was
//     acknowledged, Done when the engine has nothing more to do.
//   - Network side: HandlePacket takes one datagram addressed to this connection (data or
//     control; the source address is conn's to check). Hostile input is dropped and counted in
//     Stats().Drops, never a panic; nothing a packet says can make the engine allocate more than
//     its configured buffers. Handshake packets are counted as ignored (conn answers them).
//   - Pacer side: data packets leave only through Release, which encodes the packets due at now
//     into caller buffers and returns when the next one is due, or ReleaseViews, which encodes
//     only their headers and points at their payloads in the send buffer, pinned there until the
//     caller's Unpin (so that the send can run without the caller's lock). Departure reports that time after
//     any other call (zero = nothing sendable until new data, an ACK or a NAK). Packets are cut
//     at PacketSize (path MTU discovery, pmtud.go); a longer packet ends a Release batch and is
//     either the probe (ProbeSeq: send it with Don't Fragment like the rest) or one cut before
//     the size fell (send it with fragmentation allowed).
//   - Path hints: OnPathMTU / OnTooBig (the kernel's path MTU, a send refused with EMSGSIZE) and
//     OnUnreachable (an ICMP port unreachable: shortens the dead-peer timer, unreachable.go).
//   - Control packets (ACK, ACK2, NAK, keep-alive, Shutdown), produced by any call (Read included:
//     a window update), wait in an engine-owned queue; conn takes them with PopControl and sends
//     them through the same batched writer as data.
//   - Timers: OnTimer runs whatever timer is due (early or late calls are harmless); NextTimer
//     tells when to call it next. The ACK timer is also checked after every HandlePacket, so a
//     busy receiver needs no timer wakeups for its ACKs.
//   - Effects returns, after any call, everything conn acts on: Departure (the one source of the
//     next departure time), NextTimer (the one source of the next timer), the queued control
//     packets, readiness (CanRead, CanWrite), Err and Done.
//
// # Timers
//
//   - ACK (spec §2.3, §4.4): an ACK when new data has arrived and the ACK period (SYN = 10 ms; a
//     quarter of the RTT, at least 1 ms, on paths shorter than 40 ms; or the controller's shorter
//     ACKPeriod) has passed since the previous ACK, full (6 words) if SYN has; a medium ACK
//     (4 words) when an ACK is due sooner (after a short packet, as UDT4 does, or every ACKInterval packets
//     if the controller asks); a light ACK (1 word) every 64 data packets in between. An ACK not
//     yet confirmed by ACK2 is repeated after max(SYN, RTT + 4·RTTVar), doubling for each repeat
//     of the same number (at most ×128). Not armed when everything received has been acknowledged
//     and confirmed. The period's ACK leaves with the first data packet that arrives after it
//     (UDT 4.11's receiver checks its timers after each packet), and from the timer only once no
//     data packet has arrived for a period (ackDue), so its time is an arrival time.
//   - Periodic NAK (draft-gg-udt-03 §4.4; removed from UDT 4.9+, restored here): while the
//     receiver loss list is non-empty, every NAK interval/4 the ranges last reported at least one
//     NAK interval ago, 4·RTT + RTTVar + SYN, are reported again (lowest first, as many as fit in
//     one packet), but not again before something is heard from the peer (a dead path gets one).
//   - Lost reports (delivery_imply.go's lostHeadDue, RFC 8985's RACK rule): the first
//     unacknowledged packet is queued again once the cumulative ACK still names it missing
//     SRTT + 4·RTTVAR + SYN + the reordering window after it left, if it is a repair (UDT4
//     reports a gap once) or an original that an ACK sent after a later NAK's frontier still
//     names (its NAK was lost, and that frontier had read it as delivered: renege takes that
//     back).
//   - Reordering windows (reorder.go): a gap waits the receiver's reordering window before its
//     NAK, and a NAKed packet sent less than minRTT + the sender's window ago waits that long
//     before its resend (a UDT 4.11 receiver NAKs at once); both windows are 0 until reordering
//     is observed and then the largest reordering extent observed (RFC 8985 RACK's time-based
//     window, SRT's reorder tolerance), so the controller is told of losses, not of reordering.
//   - Retransmission timer (spec §4.5, adapted; UDT4's EXP): armed while data is unacknowledged.
//     Its first expiry, max(RTT + 4·RTTVar + SYN, 2·SYN) after the last ACK progress, is a
//     tail-loss probe (RFC 8985 §7, RFC 9002 §6.2): the first unacknowledged and the last sent
//     packet are retransmitted (the receiver's ACK names the former as missing; the latter exposes
//     a lost tail to the receiver's loss detection), without telling the controller. Each later
//     expiry, max(RTT + 4·RTTVar + SYN, 100 ms)·2^(N−2) after the previous one (N = expiries so
//     far: exponential backoff, RFC 6298 §5.5, at most 60 s), is a retransmission timeout that
//     tells the controller (OnTimeout) and probes again with the same two packets; once the peer
//     answers (an ACK or NAK) after the third expiry or a later one, every unacknowledged packet
//     is re-queued (UDT4's go-back-N, for peers that do not re-report losses), once per expiry. A dead path thus
//     costs two packets per expiry with the intervals doubling, not a flight each time. A
//     controller's RTO replaces both bases.
//   - Keep-alive: sent when nothing was sent for T = min(1 s, IdleTimeout/8) (SRT-style; UDT4 sends
//     one per EXP expiry while idle, about every 0.3 s). A keep-alive from the peer is answered at
//     once when nothing was sent for 3T/4, after which our own timer waits 2T: the two ends settle
//     into one leading and one answering, so an idle pair costs about 1.5 timer wakeups per T
//     instead of two, with the same packets; each end still sends at least every 2T (timers.go
//     gives the reasoning and bounds). An idle connection also returns its buffers' spare pages
//     then.
//   - Dead peer: when nothing at all has been received for IdleTimeout, the connection breaks with a
//     *PeerIdleError (a net.Error whose Timeout() is true). UDT4 also requires 16 EXP expiries, which
//     stretches its detection to ≈ 46 s; here IdleTimeout alone decides, by when at least 8
//     keep-alives or retransmissions have gone unanswered.
//
// An idle, fully acknowledged connection arms only the keep-alive and dead-peer timers: at most one
// wakeup per second.
//
// # Departures from UDT 4.11 (spec §9.6 and the issue)
//
//   - A forged ACK (ACK number beyond the last packet sent + 1) and a NAK naming a number never sent
//     are ignored and counted; UDT4 breaks the connection.
//   - Light ACKs release send-buffer memory too (the data has reached the peer).
//   - Read returns all contiguous received data, without waiting for the next ACK.
//   - When the application frees a significant part of a nearly full receive buffer, a medium ACK
//     carrying the new flow window (ACK sequence number 0, so that it gives no RTT sample) is sent at
//     once instead of waiting for a retransmission timeout.
//   - The first RTT sample replaces the initial 100 ms guess (RFC 6298) instead of being smoothed
//     into it; an ACK's RTT field still equal to UDT4's initial 100/50 ms is not taken as a sample.
//   - ACK2 RTT samples are taken once per ACK (a duplicated ACK2 cannot skew the RTT).
//   - In stream mode every data packet is a solo message (FF = 11, O = 0) with its own message
//     number; UDT4 receivers ignore message boundaries in stream mode (spec §7.3). Message mode
//     (Config.Messages, message.go) keeps whole messages, with its own departures listed there.
//   - The packet pair's second packet takes the next slot of the pacing schedule, so pairs do not
//     raise the average rate (UDT4 sends it for free); a controller that never reads the
//     receiver's capacity estimate (congestion.PacketPairer: BBR, the default, and Fixed) gets
//     no pairs.
//   - Gaps wait a reordering window before their NAK, and NAKed packets a window before their
//     resend (reorder.go); the controller hears only of packets declared lost.
//   - When the receive buffer holds fewer than 512 packets, the light ACK every 64 packets is
//     replaced by a window update every RecvBuffer/8 packets, so a window-limited sender gets its
//     credit back within a round trip instead of once per SYN (flow.go).
//   - Full ACKs' receive rate and capacity measured over a pause of the sender for data are
//     ignored unless higher than the current estimate, and the controller sees 0 (unknown)
//     instead of UDT4's pre-load (16 and 1 packets/s) until one has been taken (applimit.go).
package stream
