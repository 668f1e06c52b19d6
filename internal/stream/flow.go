package stream

import (
	"time"

	"github.com/udtgo/udt/internal/packet"
)

// Flow control with a small receive buffer.
//
// The sender keeps at most the advertised flow window unacknowledged, counted from the ACK
// number (spec §2.3 word 3: the receiver's free slots from there on). Credit comes back only
// when an ACK carries the room the application freed by reading: a light ACK moves the ACK
// number but, as UDT4 does, shrinks the window by as much (spec §2.3), so it returns no credit.
// UDT4 sends window-carrying ACKs only every SYN, so a receive buffer of W packets allows at
// most W packets per SYN whatever the RTT: with RecvBuffer 64 KiB (45 packets) 52 Mbit/s on a
// 0.1 ms loopback path that would carry 5 Gbit/s, and far less once the controller's period
// follows that rate.
//
// A window-limited sender that gets credit for every k of its W packets k packet times after
// they arrive sends W packets per RTT·(1 + k/W) (each packet's credit comes back at most k
// arrivals late). So when the receive buffer is smaller than lightACKEvery·windowACKDivisor
// packets, the receiver replaces each light ACK by a window update — a medium ACK with ACK
// sequence number 0 (no ACK2, no RTT sample, as the read-triggered update) — every
// k = W/windowACKDivisor packets: within 1/windowACKDivisor (11 %) of window/RTT. Larger
// buffers keep UDT4's light ACK every 64 packets (a 64-packet credit delay is then at most
// 1/8 of the window).

// windowACKDivisor is W/k: a window-limited sender's rate is within 1/(1 + divisor) of
// window/RTT.
const windowACKDivisor = 8

// selfClockEvery is the number of data packets between the receiver's self-clocking ACKs: light
// ACKs every 64 packets (spec §2.3), or window updates every RecvBuffer/8 packets when that is
// fewer.
func (e *Endpoint) selfClockEvery() int {
	return max(1, min(lightACKEvery, e.rcv.Cap()/windowACKDivisor))
}

// sendSelfClockACK sends the ACK due every selfClockEvery packets.
func (e *Endpoint) sendSelfClockACK(t time.Duration) {
	if e.selfClockEvery() == lightACKEvery {
		e.sendLightACK(t)
		return
	}
	e.pktsSinceLight = 0
	e.sendWindowACK(t)
}

// sendWindowACK sends a medium ACK carrying the ACK number and the flow window, with ACK sequence
// number 0: it is not in the ACK history (no ACK2, no RTT sample) and leaves the timer ACK's
// state alone, so full ACKs with their measurements still follow every SYN.
func (e *Endpoint) sendWindowACK(t time.Duration) {
	free := max(e.rcv.Available(), 2)
	e.ack = packet.ACK{
		AckSeq: 0, Form: packet.ACKMedium, AckNo: uint32(e.rcv.AckSeq()),
		RTT: e.rtt.RTTMicros(), RTTVar: e.rtt.RTTVarMicros(),
		AvailBuf: uint32(free),
	}
	e.sendACKPacket(t, &e.ack)
	e.advertised = free
	e.stats.ACKSent++
	e.stats.WindowUpdates++
	e.traceACKSent()
}
