package stream

import (
	"slices"
	"time"
)

// rttEstimator is UDT4's smoothed RTT and RTT variance (spec §2.5, §4.2):
// RTTVar ← (3·RTTVar + |rtt − RTT|)/4, RTT ← (7·RTT + rtt)/8, starting at 100 ms / 50 ms.
type rttEstimator struct {
	rtt, rttVar time.Duration
}

// maxRTTSample bounds accepted RTT values (samples and ACK fields are hostile input).
const maxRTTSample = 60 * time.Second

func (r *rttEstimator) init() { r.rtt, r.rttVar = initialRTT, initialRTTVar }

func (r *rttEstimator) sample(s time.Duration) {
	if s < 0 || s > maxRTTSample {
		return
	}
	d := s - r.rtt
	if d < 0 {
		d = -d
	}
	r.rttVar = (3*r.rttVar + d) / 4
	r.rtt = (7*r.rtt + s) / 8
}

// arrivalWindow is the receiver's packet arrival speed and packet-pair link capacity estimator
// (spec §6.1–6.2, UDT4's CPktTimeWindow(16, 64)). Intervals are in µs.
type arrivalWindow struct {
	arr      [16]int64 // last 16 inter-arrival times
	arrNext  int
	lastArr  time.Duration
	haveLast bool

	probe     [64]int64 // last 64 packet-pair gaps
	probeNext int
	probeSeq  uint32 // sequence number of the pending pair's first packet
	probeAt   time.Duration
	probeOK   bool

	scratch [64]int64
}

func (w *arrivalWindow) init() {
	for i := range w.arr {
		w.arr[i] = 1_000_000
	}
	for i := range w.probe {
		w.probe[i] = 1000
	}
}

// onData records the arrival of data packet seq at t.
func (w *arrivalWindow) onData(t time.Duration, seq uint32) {
	if w.haveLast {
		w.arr[w.arrNext] = int64((t - w.lastArr) / time.Microsecond)
		w.arrNext = (w.arrNext + 1) % len(w.arr)
	}
	w.lastArr, w.haveLast = t, true
	// Packet pairs (spec §6.2): the receiver records the gap between a packet with seq&0xF == 0 and
	// its successor. Unlike UDT4 the sample counts only if the successor is the very next arrival.
	if w.probeOK && seq == seqInc(w.probeSeq) && seq&0xF == 1 {
		w.probe[w.probeNext] = int64((t - w.probeAt) / time.Microsecond)
		w.probeNext = (w.probeNext + 1) % len(w.probe)
	}
	w.probeOK = seq&0xF == 0
	w.probeSeq, w.probeAt = seq, t
}

// median returns UDT4's median of xs (nth_element on all but the last entry, index n/2).
func (w *arrivalWindow) median(xs []int64) int64 {
	s := w.scratch[:len(xs)-1]
	copy(s, xs)
	slices.Sort(s)
	return s[len(xs)/2]
}

// speed is the packet receiving speed in packets/s, 0 when fewer than 9 intervals are near the
// median (spec §6.1).
func (w *arrivalWindow) speed() uint32 {
	m := w.median(w.arr[:])
	var sum, n int64
	for _, x := range w.arr {
		if x > m/8 && x < m*8 {
			sum += x
			n++
		}
	}
	if n <= 8 {
		return 0
	}
	mean := sum / n
	if mean <= 0 {
		return 1_000_000
	}
	return uint32((1_000_000 + mean - 1) / mean)
}

// bandwidth is the estimated link capacity in packets/s (spec §6.2).
func (w *arrivalWindow) bandwidth() uint32 {
	m := w.median(w.probe[:])
	sum, n := m, int64(1)
	for _, x := range w.probe {
		if x > m/8 && x < m*8 {
			sum += x
			n++
		}
	}
	mean := sum / n
	if mean <= 0 {
		return 1_000_000
	}
	return uint32((1_000_000 + mean - 1) / mean)
}

// ackRecord remembers one full or medium ACK for the RTT sample its ACK2 gives (spec §2.5).
type ackRecord struct {
	ackNo uint32 // ACK sequence number
	ack   uint32 // the ACK number it carried
	at    time.Duration
	valid bool
}

type ackWindow [ackHistory]ackRecord

func (w *ackWindow) store(ackNo, ack uint32, t time.Duration) {
	w[ackNo%ackHistory] = ackRecord{ackNo: ackNo, ack: ack, at: t, valid: true}
}

// take returns and forgets the record for ackNo.
func (w *ackWindow) take(ackNo uint32) (ackRecord, bool) {
	r := &w[ackNo%ackHistory]
	if !r.valid || r.ackNo != ackNo {
		return ackRecord{}, false
	}
	rec := *r
	r.valid = false
	return rec, true
}
