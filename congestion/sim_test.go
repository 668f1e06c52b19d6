package congestion

// An idealised packet-level model of UDT flows through one bottleneck, to check the controllers'
// dynamics without conn: the sender paces at the controller's period within min(cwnd, flow
// window), sends the packet pairs of spec §4.3 (the second packet taking the next slot, so the
// average rate is the controller's, as internal/stream does) and retransmits from a loss list; the bottleneck is
// a drop-tail FIFO at a fixed rate with optional random loss; the receiver reports losses at once
// (and again after 2 RTT while they are missing), sends a full ACK every SYN carrying the arrival
// speed and packet-pair capacity of spec §6, and the sender smooths them 7/8 from 16 and 1 packets/s
// as the C++ core does. RTT samples are the propagation delay plus the bottleneck's queueing delay
// (the ACK2 waits behind data). Simplified away: light ACKs, ACK2 loss, the ACK history, buffers.
// The real connections over the in-memory network are conn's tests.

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

const simMSS = 1500

type simEvent struct {
	at  int64 // ns since the start
	seq int64 // tie-break: insertion order
	fn  func()
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// sim is the event loop and the shared bottleneck.
type sim struct {
	now    int64
	n      int64
	events simQueue
	rng    *rand.Rand

	rate      float64 // bottleneck, bit/s
	queueMax  int     // packets
	lossProb  float64 // random loss before the queue
	oneWay    int64   // ns, each direction
	busyUntil int64   // the bottleneck's last departure
	drops     int
}

func (s *sim) at(t int64, fn func()) {
	s.n++
	heap.Push(&s.events, simEvent{at: t, seq: s.n, fn: fn})
}

func (s *sim) run(until int64) {
	for len(s.events) > 0 && s.events[0].at <= until {
		e := heap.Pop(&s.events).(simEvent)
		s.now = e.at
		e.fn()
	}
	s.now = until
}

// serialise is the bottleneck's service time of one packet, ns.
func (s *sim) serialise() int64 { return int64(math.Round(simMSS * 8 / s.rate * 1e9)) }

// queueDelay is the wait a packet entering the bottleneck now would have, ns.
func (s *sim) queueDelay() int64 { return max(s.busyUntil-s.now, 0) }

// forward sends a data packet through the bottleneck; deliver runs at the receiver.
func (s *sim) forward(deliver func()) {
	if s.lossProb > 0 && s.rng.Float64() < s.lossProb {
		s.drops++
		return
	}
	svc := s.serialise()
	if int(s.queueDelay()/svc) >= s.queueMax {
		s.drops++
		return
	}
	s.busyUntil = max(s.busyUntil, s.now) + svc
	s.at(s.busyUntil+s.oneWay, deliver)
}

// simFlow is one sender–receiver pair. Sequence numbers are unwrapped int64 here; the controller
// sees them as 31-bit numbers from isn.
type simFlow struct {
	s   *sim
	cc  Controller
	isn uint32

	// Sender.
	curr, lastAck int64   // largest sent; first unacknowledged
	loss          []int64 // sorted retransmission list
	nextSend      int64
	wake          int64 // time of the pending send event, −1 if none
	rtt, rttVar   float64
	recvRate, bw  int
	lastRsp       int64
	flowWindow    int
	pairDebt      int64 // ns: the slot the second packet of a pair took

	// Receiver.
	lrsn      int64
	missing   []int64 // sorted
	reported  map[int64]int64
	lastArr   int64
	arrivals  [16]int64 // µs
	ai        int
	probe1    int64
	pairs     [64]int64 // µs
	pi        int
	lastACKed int64
	delivered int64 // unique packets received
}

func newSimFlow(s *sim, cc Controller, isn uint32, start int64) *simFlow {
	f := &simFlow{s: s, cc: cc, isn: isn, curr: -1, wake: -1, rtt: 100e6, rttVar: 50e6,
		recvRate: 16, bw: 1, flowWindow: 25600, lrsn: -1, reported: map[int64]int64{}}
	for i := range f.arrivals {
		f.arrivals[i] = 1e6
	}
	for i := range f.pairs {
		f.pairs[i] = 1000
	}
	s.at(start, func() {
		f.lastRsp = s.now
		cc.Init(f.t(), Params{MSS: simMSS, FlowWindow: f.flowWindow, ISN: isn})
		f.trySend()
		f.ackTimer()
		f.expTimer()
	})
	return f
}

func (f *simFlow) t() time.Time        { return t0.Add(time.Duration(f.s.now)) }
func (f *simFlow) wire(x int64) uint32 { return uint32(int64(f.isn)+x) & maxSeq }

// trySend sends the next packet if the pacing time has come, else arms a wake-up.
func (f *simFlow) trySend() {
	s := f.s
	if s.now < f.nextSend {
		if f.wake != f.nextSend {
			f.wake = f.nextSend
			at := f.nextSend
			s.at(at, func() {
				if f.wake == at {
					f.wake = -1
					f.trySend()
				}
			})
		}
		return
	}
	for len(f.loss) > 0 && f.loss[0] < f.lastAck {
		f.loss = f.loss[1:]
	}
	st := f.cc.State()
	var seq int64
	switch {
	case len(f.loss) > 0:
		seq, f.loss = f.loss[0], f.loss[1:]
	case f.curr-f.lastAck+1 < int64(min(st.Window, float64(f.flowWindow))):
		f.curr++
		seq = f.curr
	default:
		return // window full: an ACK or NAK restarts the sender
	}
	f.cc.OnPacketSent(f.t(), f.wire(seq), simMSS)
	s.forward(func() { f.receive(seq) })
	period := int64(f.cc.State().Period)
	switch {
	case seq == f.curr && f.wire(seq)&0xF == 0:
		f.nextSend = s.now // the probing packet pair: its second packet goes at once …
		f.pairDebt = period
	default:
		f.nextSend = s.now + period + f.pairDebt // … and takes the next slot, as conn does
		f.pairDebt = 0
	}
	s.at(f.nextSend, f.trySend)
}

func (f *simFlow) receive(seq int64) {
	s := f.s
	us := func(ns int64) int64 { return ns / 1000 }
	if f.lastArr != 0 {
		f.arrivals[f.ai%16] = max(us(s.now-f.lastArr), 1)
		f.ai++
	}
	f.lastArr = s.now
	switch f.wire(seq) & 0xF {
	case 0:
		f.probe1 = s.now
	case 1:
		f.pairs[f.pi%64] = max(us(s.now-f.probe1), 1)
		f.pi++
	}
	switch {
	case seq > f.lrsn+1:
		var gap []int64
		for x := f.lrsn + 1; x < seq; x++ {
			gap = append(gap, x)
			f.reported[x] = s.now
		}
		f.missing = append(f.missing, gap...)
		f.nak(gap)
		f.lrsn = seq
		f.delivered++
	case seq == f.lrsn+1:
		f.lrsn = seq
		f.delivered++
	default:
		if i, ok := slices.BinarySearch(f.missing, seq); ok {
			f.missing = slices.Delete(f.missing, i, i+1)
			delete(f.reported, seq)
			f.delivered++
		}
	}
}

// nak reports lost packets to the sender as ranges.
func (f *simFlow) nak(lost []int64) {
	var rs []Range
	for i := 0; i < len(lost); {
		j := i
		for j+1 < len(lost) && lost[j+1] == lost[j]+1 {
			j++
		}
		rs = append(rs, Range{f.wire(lost[i]), f.wire(lost[j])})
		i = j + 1
	}
	f.s.at(f.s.now+f.s.oneWay, func() {
		f.lastRsp = f.s.now
		f.cc.OnLoss(f.t(), Loss{Ranges: rs, CurrSeq: f.wire(f.curr)})
		for _, x := range lost {
			if x >= f.lastAck {
				if i, ok := slices.BinarySearch(f.loss, x); !ok {
					f.loss = slices.Insert(f.loss, i, x)
				}
			}
		}
		f.trySend()
	})
}

// ackTimer sends a full ACK every SYN and re-reports losses missing for 2 RTT.
func (f *simFlow) ackTimer() {
	s := f.s
	s.at(s.now+int64(SYN), f.ackTimer)
	ackNo := f.lrsn + 1
	if len(f.missing) > 0 {
		ackNo = f.missing[0]
	}
	var again []int64
	for _, x := range f.missing {
		if s.now-f.reported[x] > max(2*int64(f.rtt), int64(20*time.Millisecond)) {
			again = append(again, x)
			f.reported[x] = s.now
		}
	}
	if len(again) > 0 {
		f.nak(again)
	}
	if ackNo == f.lastACKed {
		return
	}
	f.lastACKed = ackNo
	rate, bw := f.speed(), f.capacity()
	rttSample := float64(2*s.oneWay + s.queueDelay())
	s.at(s.now+s.oneWay, func() {
		f.lastRsp = s.now
		f.rttVar = (3*f.rttVar + math.Abs(rttSample-f.rtt)) / 4
		f.rtt = (7*f.rtt + rttSample) / 8
		if rate > 0 {
			f.recvRate = (7*f.recvRate + rate) / 8
		}
		f.bw = (7*f.bw + bw) / 8
		if ackNo <= f.lastAck {
			return
		}
		f.lastAck = ackNo
		f.cc.OnACK(f.t(), ACK{Seq: f.wire(ackNo), RTT: time.Duration(f.rtt), RTTVar: time.Duration(f.rttVar),
			RecvRate: f.recvRate, Bandwidth: f.bw, CurrSeq: f.wire(f.curr)})
		f.trySend()
	})
}

// expTimer is the retransmission timeout of spec §4.5 (ExpCount 1).
func (f *simFlow) expTimer() {
	s := f.s
	s.at(s.now+int64(SYN), f.expTimer)
	exp := max(int64(f.rtt+4*f.rttVar)+int64(SYN), int64(300*time.Millisecond))
	if f.curr >= f.lastAck && s.now-f.lastRsp > exp {
		f.lastRsp = s.now
		if len(f.loss) == 0 {
			for x := f.lastAck; x <= f.curr; x++ {
				f.loss = append(f.loss, x)
			}
		}
		f.cc.OnTimeout(f.t())
		f.trySend()
	}
}

// speed is the receiver's packet arrival speed (spec §6.1), packets/s; 0 if too few samples agree.
func (f *simFlow) speed() int {
	m := median(f.arrivals[:])
	var sum, n int64
	for _, x := range f.arrivals {
		if x > m/8 && x < 8*m {
			sum += x
			n++
		}
	}
	if n <= 8 {
		return 0
	}
	return int(math.Ceil(1e6 / float64(sum/n)))
}

// capacity is the packet-pair link capacity estimate (spec §6.2), packets/s.
func (f *simFlow) capacity() int {
	m := median(f.pairs[:])
	sum, n := m, int64(1)
	for _, x := range f.pairs {
		if x > m/8 && x < 8*m {
			sum += x
			n++
		}
	}
	return int(math.Ceil(1e6 / float64(sum/n)))
}

func median(xs []int64) int64 {
	c := slices.Clone(xs)
	slices.Sort(c)
	return max(c[len(c)/2], 1)
}
