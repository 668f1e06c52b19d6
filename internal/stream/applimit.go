package stream

import (
	"github.com/udtgo/udt/internal/arrival"
	"github.com/udtgo/udt/internal/seqno"
)

// Receiver measurements taken while the sender had nothing to send describe the application,
// not the path (draft-cheng-iccrg-delivery-rate-estimation-02 §3.4: application-limited samples
// must not lower an estimate of the path). The receiver's two estimates in full ACKs (spec §6) —
// the arrival speed over its last 16 packet intervals and the link capacity from the packet
// pairs of its last 64 probes — read the application's pace after the sender paused for data:
// after a phase of small request/response messages the arrival speed reads a few packets per
// second (one message per RTT), and a pair whose second packet was written later reads the pause
// as the pair's gap. The native controller sets its period to 1/RecvRate when it leaves slow
// start (spec §5.2, §5.3), so the first loss of the next bulk transfer left it there at tens of
// ms, and it crawled.
//
// So the sender notes the first packet it sends after a pause for data, and while a full ACK's
// windows still hold the interval ending at that packet, each word of that ACK is folded into the
// smoothed rates only if it exceeds the current, measured value. (A pause for flow-window credit
// is not such a pause: the receiver's speed filter keeps the bursts' spacing and drops the gaps
// between them, spec §6.1, so it reads the rate the window allows, no lower.)
//
// Until a word has been accepted once, the controller is told 0 ("no value", congestion.ACK)
// instead of UDT4's pre-load (16 packets/s receive rate, 1 packet/s capacity, CUDT::open), which
// the smoothing then starts from as in UDT4. (Replacing the pre-load by the first value, as the
// first RTT sample replaces the initial RTT, made the since-removed loss-tolerant controller
// leave slow start at the rate of its overshoot: 3.5 % instead of 3.1 % queue drops when a second
// flow joins, in congestion's TestConnTwoFlows.)

// notePause records that Release stopped for want of data: nothing written beyond what was sent
// and no retransmission pending.
func (e *Endpoint) notePause() {
	if e.sloss.Len() == 0 && e.snd.Unsent() == 0 {
		e.sndPaused = true
	}
}

// noteFirstAfterPause is called for each new packet sent.
func (e *Endpoint) noteFirstAfterPause(seq seqno.Seq) {
	if e.sndPaused {
		e.pauseSeq, e.pauseSet, e.sndPaused = seq, true, false
	}
}

// foldPeerRates takes the receive-rate and capacity words (packets/s) of a full ACK numbered ack
// into the smoothed peer rates (spec §6.3): a word measured over the interval before the first
// packet after a pause counts only if it exceeds the current measured value.
func (e *Endpoint) foldPeerRates(ack seqno.Seq, rcvRate, capacity uint32) {
	since := arrival.ArrivalWindow*arrival.ProbeWindow + 1 // packets acknowledged since the pause
	if e.pauseSet {
		if since = seqno.Offset(e.pauseSeq, ack); since > arrival.ArrivalWindow*arrival.ProbeWindow {
			e.pauseSet = false
		}
	}
	rcvRate = e.rateWord(0, rcvRate, since <= arrival.ArrivalWindow, &e.peerRates.RcvRate)
	capacity = e.rateWord(1, capacity, since <= arrival.ArrivalWindow*arrival.ProbeWindow, &e.peerRates.Bandwidth)
	e.peerRates.OnFullACK(rcvRate, capacity)
}

// rateWord filters one word (see foldPeerRates): it returns the word to smooth in, or 0 when it
// is to be ignored.
func (e *Endpoint) rateWord(i int, w uint32, paused bool, cur *int) uint32 {
	v := int32(w)
	if v <= 0 || paused && (!e.rateMeasured[i] || int(v) <= *cur) {
		return 0
	}
	e.rateMeasured[i] = true
	return w
}

// measuredPeerRates returns the smoothed peer rates for the controller: 0 (unknown) for a word
// not measured yet.
func (e *Endpoint) measuredPeerRates() (rcvRate, bandwidth int) {
	if e.rateMeasured[0] {
		rcvRate = e.peerRates.RcvRate
	}
	if e.rateMeasured[1] {
		bandwidth = e.peerRates.Bandwidth
	}
	return rcvRate, bandwidth
}
