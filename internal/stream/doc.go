// Package stream is the sans-IO protocol engine of one established UDT4 connection: the sender
// (send buffer, sender loss list, flow and congestion window, retransmission), the receiver (receive
// buffer, loss detection, NAK, ACK, light ACK, ACK2) and the connection timers (ACK, periodic NAK,
// EXP/retransmission timeout, keep-alive, dead-peer detection), as the UDT4 spec
// (../shared/udt4-spec.md §2, §4, §6) describes them, with the departures listed below.
//
// # Boundary
//
// The engine reads no clock, starts no goroutine, does no I/O and is not safe for concurrent use:
// package conn serialises every call with one mutex per connection and passes the time in.
//
//   - Application side: Write copies bytes into the bounded send buffer (0 = full: wait for
//     CanWrite); Read returns in-order bytes ((0, nil) = nothing yet: wait for CanRead; io.EOF after
//     the peer's Shutdown once everything received in order has been read; Err() once broken).
//   - Network side: HandlePacket takes one datagram addressed to this connection. Hostile input is
//     dropped and counted in Stats().Drops, never a panic.
//   - Pacer side: data packets leave only through Release, which encodes the packets due at now into
//     caller buffers and tells when the next one is due. Departure reports that time after any other
//     call (zero = nothing sendable until new data, an ACK or a NAK).
//   - Timers: OnTimer runs whatever timer is due; NextTimer tells when to call it next.
//   - Control packets (ACK, ACK2, NAK, keep-alive, Shutdown) leave synchronously through
//     Config.Output during any of these calls.
//
// # Timers (all intervals in µs-resolution time.Duration)
//
//   - ACK (spec §2.3, §4.4): a full ACK (6 words) when new data has arrived and SYN = 10 ms (or the
//     controller's ACKPeriod) has passed since the previous ACK; a medium ACK (4 words) when an ACK is
//     due sooner (after a short packet, or the controller's ACKInterval); a light ACK (1 word) every
//     64 packets received in between. An unconfirmed ACK (no ACK2 yet) is repeated after
//     RTT + 4·RTTVar. Not armed when everything received has been acknowledged and confirmed.
//   - Periodic NAK (draft-gg-udt-03 §4.4; removed from UDT 4.9+, restored here): every
//     4·RTT + RTTVar + SYN while the receiver loss list is non-empty, the numbers known missing for at
//     least one interval are reported again (as many as fit in one packet, lowest first).
//   - Retransmission timer (spec §4.5, adapted; UDT4's EXP): armed while data is unacknowledged.
//     Its first expiry, max(RTT + 4·RTTVar + SYN, 2·SYN) after the last ACK progress, is a
//     tail-loss probe: the first unacknowledged and the last sent packet are retransmitted (the
//     receiver's ACK names the former as missing; the latter exposes a lost tail to the receiver's
//     immediate NAK), without telling the controller. Each later expiry, N·max(RTT + 4·RTTVar + SYN,
//     100 ms) after the previous one (N = expiries so far, capped at 16), is a retransmission
//     timeout that tells the controller (OnTimeout): the second probes again, the third and later
//     re-queue every unacknowledged packet (UDT4's go-back-N, for peers that do not re-report
//     losses). A controller's RTO replaces both intervals.
//   - Keep-alive: sent when nothing was sent for min(1 s, IdleTimeout/8) (SRT-style; UDT4 sends one
//     per EXP expiry while idle).
//   - Dead peer: when nothing at all has been received for IdleTimeout, the connection breaks with a
//     *PeerIdleError (a net.Error whose Timeout() is true). UDT4 also requires 16 EXP expiries, which
//     stretches its detection to ≈ 46 s; here IdleTimeout alone decides, and at least 8 keep-alives
//     or retransmissions have been sent by then.
//
// An idle, fully acknowledged connection arms only the keep-alive and dead-peer timers: about one
// wakeup per second.
//
// # Departures from UDT 4.11 (spec §9.6 and the issue)
//
//   - A forged ACK (ACK number beyond the last packet sent + 1) and a NAK naming a number never sent
//     are ignored and counted; UDT4 breaks the connection.
//   - Light ACKs release send-buffer memory too (the data has reached the peer).
//   - Read returns all contiguous received data, without waiting for the next ACK.
//   - When the application frees a significant part of a nearly full receive buffer, an ACK carrying
//     the new flow window is sent at once instead of waiting for a retransmission timeout.
//   - NAK and ACK bodies are bounds-checked (spec §9.6 item 7); ACK2 RTT samples are taken once per
//     ACK (a duplicated ACK2 cannot skew the RTT).
//   - Every data packet is a solo message (FF = 11, O = 0) with its own message number; UDT4 receivers
//     ignore message boundaries in stream mode (spec §7.3).
package stream
