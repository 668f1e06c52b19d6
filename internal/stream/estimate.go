package stream

import "time"

// rttEstimator is UDT4's smoothed RTT and RTT variance (spec §2.5, §4.2):
// RTTVar ← (3·RTTVar + |rtt − RTT|)/4, RTT ← (7·RTT + rtt)/8, starting at 100 ms / 50 ms.
//
// Departure (RFC 6298 §2.2): the first real sample replaces the initial guess (RTT = s,
// RTTVar = s/2) instead of moving it 1/8 of the way, so the periodic NAK and the retransmission
// timeout fit the path after one round trip rather than after ~20 ACKs (200 ms at one per SYN).
// An ACK's RTT field equal to UDT4's initial 100 000/50 000 µs carries no measurement and is
// ignored while we have none of our own.
type rttEstimator struct {
	rtt, rttVar time.Duration
	measured    bool
}

// maxRTTSample bounds accepted RTT values (samples and ACK fields are hostile input).
const maxRTTSample = time.Minute

func (r *rttEstimator) init() { r.rtt, r.rttVar = initialRTT, initialRTTVar }

// sample folds in a measured round-trip time.
func (r *rttEstimator) sample(s time.Duration) {
	if s < 0 || s > maxRTTSample {
		return
	}
	if !r.measured {
		r.measured = true
		r.rtt, r.rttVar = s, s/2
		return
	}
	d := s - r.rtt
	if d < 0 {
		d = -d
	}
	r.rttVar = (3*r.rttVar + d) / 4
	r.rtt = (7*r.rtt + s) / 8
}

// peerField folds in the RTT word of a full or medium ACK (µs), the peer's smoothed RTT, which
// the sender takes as a sample (spec §4.2).
func (r *rttEstimator) peerField(rttUs, rttVarUs uint32) {
	if int32(rttUs) <= 0 {
		return
	}
	if !r.measured && time.Duration(rttUs)*time.Microsecond == initialRTT &&
		time.Duration(rttVarUs)*time.Microsecond == initialRTTVar {
		return
	}
	r.sample(time.Duration(rttUs) * time.Microsecond)
}
