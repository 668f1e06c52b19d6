package stream

import (
	"time"

	"github.com/udtgo/udt/internal/rtt"
)

// The smoothed RTT and RTT variance are UDT4's (rtt.Estimator, spec §2.5, §4.2):
// RTTVar ← (3·RTTVar + |rtt − RTT|)/4, RTT ← (7·RTT + rtt)/8 in µs, starting at 100 ms / 50 ms.
//
// Departure (RFC 6298 §2.2): the first real sample replaces the initial guess (RTT = s,
// RTTVar = s/2) instead of moving it 1/8 of the way, so the periodic NAK and the retransmission
// timeout fit the path after one round trip rather than after ~20 ACKs (200 ms at one per SYN).
// An ACK's RTT field equal to UDT4's initial 100 000/50 000 µs carries no measurement and is
// ignored while we have none of our own. Samples outside [0, rtt.MaxSample] (hostile ACK fields)
// are ignored rather than clamped.

// rttSample folds in a measured round-trip time.
func (e *Endpoint) rttSample(s time.Duration) {
	if s < 0 || s > rtt.MaxSample {
		return
	}
	if !e.rtt.Measured() {
		e.rtt.Set(s, s/2)
		return
	}
	e.rtt.Update(s)
}

// rttPeerField folds in the RTT words of a full or medium ACK (µs), the peer's smoothed RTT, which
// the sender takes as a sample (spec §4.2). It returns the sample taken, 0 if none.
func (e *Endpoint) rttPeerField(rttUs, rttVarUs uint32) time.Duration {
	if int32(rttUs) <= 0 {
		return 0
	}
	if !e.rtt.Measured() && time.Duration(rttUs)*time.Microsecond == rtt.InitialRTT &&
		time.Duration(rttVarUs)*time.Microsecond == rtt.InitialRTTVar {
		return 0
	}
	s := time.Duration(rttUs) * time.Microsecond
	e.rttSample(s)
	return s
}
