package stream

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/seqno"
)

// Bytes in flight count sent packets that are neither delivered nor declared lost; a NAK read as
// SACK takes the packets before its frontier out; a retransmission counts again.
func TestDeliveryInFlight(t *testing.T) {
	isn := seqno.Seq(10)
	d := newDeliveryTracker(isn, 64)
	for k := 0; k < 10; k++ {
		d.onSend(isn.Add(k), 100, time.Duration(k)*time.Millisecond, false)
	}
	if d.inflight != 1000 || d.inflightPkts != 10 {
		t.Fatalf("in flight %d bytes, %d packets; want 1000, 10", d.inflight, d.inflightPkts)
	}
	d.begin()
	d.onLost(isn.Add(3), isn.Add(4)) // NAK [3,4], frontier 5
	d.onNAKFrontier(isn.Add(5), func(s seqno.Seq) bool { return s == isn.Add(3) || s == isn.Add(4) }, 20*time.Millisecond)
	s, ok := d.sample(20*time.Millisecond, time.Time{}, 100)
	if !ok || s.NewlyLost != 200 || s.NewlyDelivered != 400 || s.InFlight != 400 {
		t.Fatalf("after the NAK: %+v, want 200 lost, 400 delivered (0–2 and 5), 400 in flight", s)
	}
	if first, last := s.LostSentFirst.Sub(time.Time{}), s.LostSentLast.Sub(time.Time{}); first != 3*time.Millisecond || last != 4*time.Millisecond {
		t.Fatalf("the lost packets left at %v … %v; want 3 ms … 4 ms", first, last)
	}
	d.onSend(isn.Add(3), 100, 21*time.Millisecond, true)
	if d.inflight != 500 {
		t.Fatalf("after a retransmission: %d bytes in flight, want 500", d.inflight)
	}
	d.begin()
	d.onCumAck(isn.Add(4), 40*time.Millisecond, 20*time.Millisecond) // 3 repaired, 4 still lost
	s, _ = d.sample(40*time.Millisecond, time.Time{}, 100)
	// The repair of a loss the receiver reported dates its own delivery: 100 bytes since the
	// NAK that made room for it (20 ms).
	if s.NewlyDelivered != 100 || s.InFlight != 400 || s.Delivered != 100 || s.Interval != 20*time.Millisecond {
		t.Fatalf("after the ACK of the retransmission: %+v, want 100 newly delivered, 400 in flight, a sample of 100 bytes over 20 ms", s)
	}
	// Packets 6–9 were sent long enough ago with later packets: silence implies they arrived.
	d.imply(200*time.Millisecond, 20*time.Millisecond)
	if d.inflightPkts != 1 { // 9 has no later packet to reveal a loss
		t.Fatalf("after imply: %d packets in flight, want 1", d.inflightPkts)
	}
}

// Packets that silence implies arrived count once in NewlyAcked — when implied, in an event of
// their own — and are delivered (in rate samples and TotalDelivered) only when an ACK reports them,
// without counting in NewlyAcked again; a NAK naming an implied packet after all declares it lost
// and its repair's ACK does not count it again either.
func TestDeliveryNewlyAckedByImply(t *testing.T) {
	isn := seqno.Seq(1<<31 - 4) // the 31-bit wrap falls inside the flight
	d := newDeliveryTracker(isn, 64)
	for k := 0; k < 10; k++ {
		d.onSend(isn.Add(k), 100, time.Duration(k)*time.Millisecond, false)
	}
	d.begin()
	d.onLost(isn, isn) // NAK [0], frontier 1: the hole that holds every cumulative ACK back
	d.onNAKFrontier(isn.Add(1), func(s seqno.Seq) bool { return s == isn }, 20*time.Millisecond)
	s, _ := d.sample(20*time.Millisecond, time.Time{}, 100)
	if s.NewlyDelivered != 100 || s.NewlyAcked != 100 || s.NewlyLost != 100 {
		t.Fatalf("the NAK: %+v, want 1 packet delivered and acked, 1 lost", s)
	}
	d.begin()
	d.imply(200*time.Millisecond, 20*time.Millisecond) // 2–8 old enough, each with a later packet
	s, ok := d.sample(200*time.Millisecond, time.Time{}, 100)
	if !ok || s.NewlyAcked != 700 || s.NewlyDelivered != 0 || s.Delivered != 0 || s.TotalDelivered != 100 || s.InFlight != 100 {
		t.Fatalf("imply: ok %v %+v, want 700 newly acked, nothing delivered, 100 in flight", ok, s)
	}
	d.begin()
	d.onLost(isn.Add(8), isn.Add(8)) // a late NAK names 8 after all
	s, _ = d.sample(210*time.Millisecond, time.Time{}, 100)
	if s.NewlyLost != 100 || s.NewlyAcked != 0 {
		t.Fatalf("the late NAK: %+v, want 100 lost, nothing acked", s)
	}
	d.onSend(isn, 100, 211*time.Millisecond, true)
	d.onSend(isn.Add(8), 100, 212*time.Millisecond, true)
	d.begin()
	d.onCumAck(isn.Add(10), 300*time.Millisecond, 20*time.Millisecond)
	s, _ = d.sample(300*time.Millisecond, time.Time{}, 100)
	// Delivered now: 0 (repaired), 2–7 (implied), 8 (repaired, implied before), 9 (new news).
	if s.NewlyDelivered != 900 || s.NewlyAcked != 200 || s.TotalDelivered != 1000 || s.InFlight != 0 {
		t.Fatalf("the cumulative ACK: %+v, want 900 delivered, 200 newly acked (0 and 9), 1000 in all, none in flight", s)
	}
}

// A sample taken while application-limited says so, and the mark clears once what was in flight
// then has been delivered (draft-cheng-iccrg-delivery-rate-estimation §3.4).
func TestDeliveryAppLimited(t *testing.T) {
	isn := seqno.Seq(0)
	d := newDeliveryTracker(isn, 64)
	d.onSend(isn, 100, 0, false)
	d.markAppLimited()
	d.onSend(isn.Add(1), 100, time.Millisecond, false)
	d.begin()
	d.onCumAck(isn.Add(2), 30*time.Millisecond, 20*time.Millisecond)
	s, _ := d.sample(30*time.Millisecond, time.Time{}, 100)
	if !s.AppLimited {
		t.Fatalf("sample of an app-limited send: %+v, want AppLimited", s)
	}
	d.onSend(isn.Add(2), 100, 31*time.Millisecond, false)
	d.begin()
	d.onCumAck(isn.Add(3), 60*time.Millisecond, 20*time.Millisecond)
	if s, _ = d.sample(60*time.Millisecond, time.Time{}, 100); s.AppLimited {
		t.Fatalf("sample after the app-limited flight was delivered: %+v, want not AppLimited", s)
	}
}

// bottleneckPath drives a deliveryTracker over a model path: the sender sends a packet every
// sendGap (faster than the bottleneck when sendGap < linkGap, so a queue builds), a FIFO
// bottleneck delivers one packet per linkGap after owd, each transmission is lost with
// probability loss, the receiver ACKs cumulatively every SYN and NAKs each new gap when the next
// packet arrives, reports take owd back, and the sender resends a packet when its NAK arrives
// (and again, as a timer would, 3 RTT later while the hole stays open). The true delivery rate
// can never exceed size/linkGap.
type bottleneckPath struct {
	d                 *deliveryTracker
	isn               seqno.Seq
	sendGap, linkGap  time.Duration
	owd               time.Duration
	size              int
	loss              float64
	rng               *rand.Rand
	samples           []congestion.Delivery
	linkFree          time.Duration // when the bottleneck finishes its last packet
	rcvd              map[int]bool
	lrsn, nextSend, n int
	// ackAgg, if positive, holds every report on the return path until the next multiple of it
	// (ACK aggregation); peerClock, if set, gives each report the receiver's header timestamp
	// for the time it was sent.
	ackAgg    time.Duration
	peerClock func(sent time.Duration) uint32
}

type pathEvent struct {
	at   time.Duration
	kind int           // 0 send, 1 arrival at the receiver, 2 ACK at the sender, 3 NAK at the sender, 4 resend timer
	k    int           // packet index (send: -1 = next new one)
	a, b int           // ACK: first missing; NAK: range
	gen  time.Duration // ACK, NAK: when the receiver sent it
}

type pathEvents []pathEvent

func (h pathEvents) Len() int           { return len(h) }
func (h pathEvents) Less(i, j int) bool { return h[i].at < h[j].at }
func (h pathEvents) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pathEvents) Push(x any)        { *h = append(*h, x.(pathEvent)) }
func (h *pathEvents) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// back returns when a report the receiver sends at gen reaches the sender.
func (p *bottleneckPath) back(gen time.Duration) time.Duration {
	at := gen + p.owd
	if p.ackAgg > 0 {
		at = (at + p.ackAgg - 1).Truncate(p.ackAgg)
	}
	return at
}

func (p *bottleneckPath) run(n int, end time.Duration) {
	p.n, p.lrsn, p.rcvd = n, -1, map[int]bool{}
	q := &pathEvents{{at: 0, kind: 0, k: -1}}
	for at := SYN; at < end; at += SYN {
		heap.Push(q, pathEvent{at: at, kind: 5}) // the receiver's ACK timer
	}
	transmit := func(k int, at time.Duration, retrans bool) {
		p.d.onSend(p.isn.Add(k), p.size, at, retrans)
		if p.rng.Float64() < p.loss {
			return
		}
		p.linkFree = max(p.linkFree, at) + p.linkGap
		heap.Push(q, pathEvent{at: p.linkFree + p.owd, kind: 1, k: k})
	}
	for q.Len() > 0 {
		e := heap.Pop(q).(pathEvent)
		if e.at > end {
			break
		}
		switch e.kind {
		case 0:
			transmit(p.nextSend, e.at, false)
			if p.nextSend++; p.nextSend < n {
				heap.Push(q, pathEvent{at: e.at + p.sendGap, kind: 0})
			}
		case 1: // arrival
			if p.rcvd[e.k] {
				break
			}
			p.rcvd[e.k] = true
			if e.k > p.lrsn+1 {
				heap.Push(q, pathEvent{at: p.back(e.at), kind: 3, a: p.lrsn + 1, b: e.k - 1, gen: e.at})
			}
			p.lrsn = max(p.lrsn, e.k)
		case 5: // receiver ACK timer
			first := 0
			for p.rcvd[first] {
				first++
			}
			heap.Push(q, pathEvent{at: p.back(e.at), kind: 2, a: first, gen: e.at})
		case 2, 3:
			p.d.begin()
			if p.peerClock != nil {
				p.d.peerReport(p.peerClock(e.gen), e.at)
			}
			if e.kind == 3 {
				from, to := p.isn.Add(e.a), p.isn.Add(e.b)
				p.d.onLost(from, to)
				p.d.onNAKFrontier(p.isn.Add(e.b+1), func(s seqno.Seq) bool {
					return seqno.Offset(from, s) >= 0 && seqno.Offset(s, to) >= 0
				}, e.at)
				for k := e.a; k <= e.b; k++ {
					transmit(k, e.at, true)
					heap.Push(q, pathEvent{at: e.at + 6*p.owd, kind: 4, k: k})
				}
			} else if seqno.Offset(p.d.base, p.isn.Add(e.a)) > 0 {
				p.d.onCumAck(p.isn.Add(e.a), e.at, 2*p.owd)
			}
			if s, ok := p.d.sample(e.at, time.Time{}, p.size); ok && s.Delivered > 0 {
				p.samples = append(p.samples, s)
			}
		case 4: // resend timer for a hole still open
			if !p.rcvd[e.k] && seqno.Offset(p.d.base, p.isn.Add(e.k)) >= 0 {
				p.d.begin()
				p.d.onLost(p.isn.Add(e.k), p.isn.Add(e.k))
				p.d.sample(e.at, time.Time{}, p.size)
				transmit(e.k, e.at, true)
				heap.Push(q, pathEvent{at: e.at + 6*p.owd, kind: 4, k: e.k})
			}
		}
	}
}

// No delivery-rate sample reads above the bottleneck's rate by more than one packet in the
// shortest window BBR keeps (its min RTT: samples shorter than that are dropped) — under random
// loss (retransmissions lost too), with a queue building behind the bottleneck, on long and short
// paths, and across sequence-number wrap — and on a clean paced path the samples read its rate.
// UDT's cumulative ACK makes this hard: a repaired hole acknowledges every packet behind it at
// once (delivery.go). Repairs' samples (Delivery.Repair) are held to the same bound; before their
// window counted the departures of everything they counted (found by review), one read 1.40× on
// the 2 ms path.
func TestDeliverySamplesNeverExceedTheBottleneck(t *testing.T) {
	for _, c := range []struct {
		name             string
		sendGap, linkGap time.Duration
		loss             float64
		owd              time.Duration // one-way delay; 25 ms when 0
		ackAgg           time.Duration // the return path's release period (bottleneckPath.ackAgg)
	}{
		{"clean, paced at the rate", time.Millisecond, time.Millisecond, 0, 0, 0},
		{"1 % loss, paced at the rate", time.Millisecond, time.Millisecond, 0.01, 0, 0},
		{"3 % loss, paced at the rate", time.Millisecond, time.Millisecond, 0.03, 0, 0},
		{"1 % loss, 1.25× the rate", 800 * time.Microsecond, time.Millisecond, 0.01, 0, 0},
		{"3 % loss, 2× the rate", 500 * time.Microsecond, time.Millisecond, 0.03, 0, 0},
		{"5 ms path, 3 % loss, paced at the rate", time.Millisecond, time.Millisecond, 0.03, 2 * time.Millisecond, 0},
		{"5 ms path, 10 % loss, paced at the rate", time.Millisecond, time.Millisecond, 0.1, 2 * time.Millisecond, 0},
		{"11 ms path, 10 % loss, paced at the rate", time.Millisecond, time.Millisecond, 0.1, 5 * time.Millisecond, 0},
		{"ACKs in 5 ms batches, paced at the rate", time.Millisecond, time.Millisecond, 0, 5 * time.Millisecond, 5 * time.Millisecond},
		{"ACKs in 5 ms batches, 3 % loss, paced at the rate", time.Millisecond, time.Millisecond, 0.03, 5 * time.Millisecond, 5 * time.Millisecond},
		{"ACKs in 5 ms batches, 1 % loss, 1.25× the rate", 800 * time.Microsecond, time.Millisecond, 0.01, 10 * time.Millisecond, 5 * time.Millisecond},
	} {
		for _, clock := range []bool{false, true} {
			if c.ackAgg > 0 && !clock {
				continue // the draft's ACK elapsed alone over-reads there (1.07–1.20×): delivery_peer.go
			}
			name := c.name + ", no receiver clock (UDT 4.11)"
			if clock {
				name = c.name + ", the receiver's clock"
			}
			t.Run(name, func(t *testing.T) {
				isn := seqno.MaxSeq.Add(-500) // wraps after 500 packets
				owd := c.owd
				if owd == 0 {
					owd = 25 * time.Millisecond
				}
				minRTT := 2*owd + c.linkGap // the round trip of one packet through the idle bottleneck
				worst, worstRepair, repairs := 0.0, 0.0, 0
				for seed := uint64(1); seed <= 8; seed++ {
					p := &bottleneckPath{d: newDeliveryTracker(isn, 1<<16), isn: isn, sendGap: c.sendGap, linkGap: c.linkGap,
						owd: owd, size: 1000, loss: c.loss, rng: rand.New(rand.NewPCG(seed, 7)), ackAgg: c.ackAgg}
					if clock {
						p.peerClock = func(sent time.Duration) uint32 {
							return uint32(sent/time.Microsecond) - 1e6 // the receiver's clock wraps a second in
						}
					}
					p.run(3000, 4*time.Second)
					if len(p.samples) < 20 {
						t.Fatalf("seed %d: only %d samples", seed, len(p.samples))
					}
					path := float64(p.size) / c.linkGap.Seconds()
					sum := 0.0
					for _, s := range p.samples {
						if s.Interval < minRTT {
							continue // BBR drops these (sampleRate)
						}
						worst = max(worst, rate(s)/path)
						if s.Repair {
							worstRepair = max(worstRepair, rate(s)/path)
							repairs++
						}
						sum += rate(s)
					}
					if seed == 1 {
						t.Logf("seed 1: %d samples, mean %.3f of the path", len(p.samples), sum/float64(len(p.samples))/path)
					}
					if mean := sum / float64(len(p.samples)) / path; c.loss == 0 && mean < 0.9 {
						t.Errorf("seed %d: mean sample %.3f of the path's rate, want ≥ 0.9", seed, mean)
					}
				}
				t.Logf("highest sample over 8 seeds: %.3f× the bottleneck's rate (of the %d repairs' samples: %.3f×)", worst, repairs, worstRepair)
				// One packet more than the bottleneck delivers in a min RTT: a window's count is
				// whole packets, and its first may have left the bottleneck just before the window
				// began. The 11 ms path reaches the bound exactly (12 packets in 11 ms), so the
				// comparison allows floating-point rounding (1e-9), not a fraction of a packet.
				if bound := 1 + float64(c.linkGap)/float64(minRTT); worst > bound*(1+1e-9) {
					t.Errorf("a sample read %.3f× the bottleneck's rate, want ≤ %.3f× (one packet more per min RTT)", worst, bound)
				}
			})
		}
	}
}

func rate(s congestion.Delivery) float64 { return float64(s.Delivered) / s.Interval.Seconds() }

// The suffix-minimum stack stays bounded under in-order delivery (which pops nothing), answers
// the recent events exactly, and never answers an older event with a later send time than the
// truth: merged entries keep the oldest, so a sample's interval can only grow.
func TestDeliverySpansBounded(t *testing.T) {
	d := newDeliveryTracker(0, 1)
	const n = 5 * maxSpans
	sent := func(ev uint64) time.Duration { return time.Duration(ev) * time.Millisecond }
	for ev := uint64(1); ev <= n; ev++ {
		d.pushSpan(sent(ev))
		if len(d.spans) > maxSpans {
			t.Fatalf("after %d events the stack holds %d entries, want ≤ %d", ev, len(d.spans), maxSpans)
		}
	}
	for e := uint64(0); e < n; e++ {
		got, ok := d.sentSince(e)
		if !ok {
			t.Fatalf("sentSince(%d): none", e)
		}
		if want := sent(e + 1); got > want {
			t.Fatalf("sentSince(%d) = %v, later than the true %v", e, got, want)
		} else if e >= n-maxSpans/2 && got != want {
			t.Fatalf("sentSince(%d) = %v, want %v for one of the last %d events", e, got, want, maxSpans/2)
		}
	}
	if _, ok := d.sentSince(n); ok {
		t.Fatal("sentSince(last event) found an entry")
	}
}

// BenchmarkDeliverySpans is one delivery event's push onto a full suffix-minimum stack, as in-order
// delivery keeps it (one push per ACK or NAK that delivered something).
func BenchmarkDeliverySpans(b *testing.B) {
	d := newDeliveryTracker(0, 1)
	for ev := range maxSpans {
		d.pushSpan(time.Duration(ev))
	}
	b.ResetTimer()
	for i := range b.N {
		d.pushSpan(time.Duration(maxSpans + i))
	}
}

// A NAK read as SACK restarts the retransmission timer only when it delivers a packet sent before
// the first unacknowledged packet's latest transmission (sackedBeforeHead): the hole's repair is
// under way and the path delivers. Packets sent after that repair never do, so a head whose
// repairs keep being lost still meets the timer.
func TestSackedBeforeHead(t *testing.T) {
	const ms = time.Millisecond
	isn := seqno.MaxSeq.Add(-3) // the flight wraps
	d := newDeliveryTracker(isn, 64)
	for k := range 10 {
		d.onSend(isn.Add(k), 1000, time.Duration(k)*ms, false)
	}
	nak := func(first, last int, at time.Duration) bool { // the receiver misses [first, last] and holds last+1
		d.begin()
		from, to := isn.Add(first), isn.Add(last)
		d.onLost(from, to)
		d.onNAKFrontier(isn.Add(last+1), func(s seqno.Seq) bool {
			return seqno.Offset(from, s) >= 0 && seqno.Offset(s, to) >= 0
		}, at)
		got := d.sackedBeforeHead()
		d.sample(at, time.Time{}, 1000)
		return got
	}
	if nak(0, 0, 40*ms) { // packet 1 arrived; the head, sent before it, is missing and not yet resent
		t.Fatal("a NAK delivering only a packet sent after the head's latest transmission restarted the timer")
	}
	d.onSend(isn, 1000, 50*ms, true) // the head's repair
	if !nak(4, 4, 60*ms) {           // packets 2, 3 and 5, sent at 2–5 ms, before the repair
		t.Fatal("a NAK delivering packets sent before the head's repair did not restart the timer")
	}
	for k := 10; k < 13; k++ {
		d.onSend(isn.Add(k), 1000, time.Duration(60+k)*ms, false)
	}
	d.begin()
	d.onNAKFrontier(isn.Add(9), func(seqno.Seq) bool { return false }, 90*ms) // 6–9: sent before the repair
	if !d.sackedBeforeHead() {
		t.Fatal("packets 6–9 were sent before the repair")
	}
	d.sample(90*ms, time.Time{}, 1000)
	if nak(11, 11, 130*ms) { // delivers only packet 10 (and 12 as the frontier), sent after the repair
		t.Fatal("packets sent after the head's repair restarted the timer")
	}
	if nak(12, 12, 131*ms) { // delivers nothing new: the frontier 13 was never sent
		t.Fatal("a NAK that delivered nothing restarted the timer")
	}
}

// A given-up message's number (skip: never sent) is no evidence for imply: implyDue must not
// report a time already past on its account (a window-limited sender's timer then fired again and
// again at the same instant, and TestMessagesTTLExpiry/bbr stalled), and imply must not take the
// last packet sent before it out of the flight.
func TestImplyIgnoresSkippedNumbers(t *testing.T) {
	isn := seqno.Seq(100)
	d := newDeliveryTracker(isn, 64)
	wait := 20 * time.Millisecond
	d.onSend(isn, 100, time.Second, false)
	d.skip(isn.Add(1))
	now := time.Second + time.Millisecond
	if due, ok := d.implyDue(wait); ok && due <= now {
		t.Errorf("implyDue = %v, at or before now (%v), though nothing was sent %v (imply's wait) ago", due, now, d.implyWait(wait))
	}
	d.imply(time.Second+d.implyWait(wait)+time.Millisecond, wait)
	if d.inflight != 100 || d.implied != 0 {
		t.Errorf("imply took the last packet sent out of the flight on a never-sent number's account: %d bytes in flight, %d implied; want 100, 0", d.inflight, d.implied)
	}
}

// The implied front follows cumulative ACKs: on traffic whose every packet is acknowledged
// before imply's wait, it stayed at the initial sequence number, and once the ACKs had moved
// more than 2^30 past it the wrapped offset made imply skip the next 2^30 packets (found by
// review: nothing implied after a jump of 3·2^29).
func TestImpliedFrontFollowsTheACK(t *testing.T) {
	for _, jump := range []int{0, 1 << 29, 3 << 29} {
		isn := seqno.Seq(100)
		d := newDeliveryTracker(isn, 64)
		wait := 20 * time.Millisecond
		now := time.Second
		// Request/response: each packet acknowledged at once, before imply's wait.
		seq := isn
		for range 4 {
			d.onSend(seq, 100, now, false)
			now += time.Millisecond
			d.begin()
			d.onCumAck(seq.Inc(), now, wait)
			seq = seq.Inc()
		}
		// The sequence space moves on (a long transfer's worth of ACKed packets, modelled by
		// the ACK of one packet numbered jump later).
		for left := jump; left > 0; left -= 1 << 28 {
			seq = seq.Add(min(left, 1<<28))
			d.onCumAck(seq, now, wait)
		}
		for range 3 {
			d.onSend(seq, 300, now, false)
			seq = seq.Inc()
		}
		d.imply(now+d.implyWait(wait)+time.Millisecond, wait)
		if d.implied != 600 {
			t.Errorf("jump %d: %d bytes implied, want 600 (the two older of three packets sent together)", jump, d.implied)
		}
	}
}

// A sender that has nothing to send but repairs (a long loss list) gets delivery-rate samples
// from them, at the rate the repairs are delivered, and none that read above it; repairs that
// are ambiguous (resent without the receiver's report of a loss, as a timer's go-back-N does)
// give none. Before repairs gave samples, such a sender's model never moved while the list was
// worked off, at whatever rate the model had when the losses happened.
func TestDeliveryRepairsGiveSamples(t *testing.T) {
	ms := time.Millisecond
	for _, blind := range []bool{false, true} {
		isn := seqno.MaxSeq.Add(-20) // the repairs cross the 31-bit wrap
		d := newDeliveryTracker(isn, 256)
		for k := 0; k <= 100; k++ {
			d.onSend(isn.Add(k), 1000, time.Duration(k)*10*time.Microsecond, false)
		}
		// The receiver got 0–9 and 100: a NAK of [10, 99] with frontier 100, at 10 ms.
		d.begin()
		d.onLost(isn.Add(10), isn.Add(99))
		if blind {
			d.markBlind(isn.Add(10), isn.Add(99))
		}
		d.onNAKFrontier(isn.Add(100), func(s seqno.Seq) bool { return seqno.Offset(isn.Add(10), s) >= 0 && seqno.Offset(s, isn.Add(99)) <= 0 }, 10*ms)
		d.sample(10*ms, time.Time{}, 1000)
		// One repair every 4 ms, each acknowledged 10 ms (a round trip) after it left.
		var samples []congestion.Delivery
		for k := 10; k < 100; k++ {
			at := 10*ms + time.Duration(k-10)*4*ms
			d.onSend(isn.Add(k), 1000, at, true)
			if k >= 13 {
				d.begin()
				d.onCumAck(isn.Add(k-2), at, 20*ms) // the repair sent 10 ms (2.5 gaps) ago, rounded
				if s, ok := d.sample(at, time.Time{}, 1000); ok && s.Delivered > 0 {
					samples = append(samples, s)
				}
			}
		}
		if blind {
			if len(samples) != 0 {
				t.Errorf("blind resends: %d samples (first %+v), want none", len(samples), samples[0])
			}
			continue
		}
		if len(samples) < 80 {
			t.Fatalf("%d samples from 87 repairs' ACKs, want one from nearly each", len(samples))
		}
		want := 1000 / (4 * ms).Seconds()
		for _, s := range samples[1:] { // the first one's window began at the NAK
			if !s.Repair {
				t.Fatalf("sample %+v: not marked a repair's", s)
			}
			if r := rate(s); r > 1.03*want || r < 0.5*want {
				t.Fatalf("sample %+v reads %.0f B/s; the repairs left at %.0f B/s", s, r, want)
			}
		}
	}
}

// A timer's go-back-N resends blindly (no sample from those copies), but once the receiver
// reports one of them missing, its next resend is a repair again and gives a sample (found by
// review: the blind mark stayed, and every later repair of that packet gave none).
func TestDeliveryRepairAfterBlindResend(t *testing.T) {
	ms := time.Millisecond
	isn := seqno.Seq(100)
	d := newDeliveryTracker(isn, 256)
	for k := range 10 {
		d.onSend(isn.Add(k), 1000, time.Duration(k)*ms, false)
	}
	// A timeout, then the peer answers at 300 ms: go-back-N declares 0–9 lost, blind.
	d.begin()
	d.onLost(isn, isn.Add(9))
	d.markBlind(isn, isn.Add(9))
	d.sample(300*ms, time.Time{}, 1000)
	for k := range 10 {
		d.onSend(isn.Add(k), 1000, 300*ms+time.Duration(k)*ms, true)
	}
	// The blind copy of 0 is lost, 1–9 arrive; the receiver NAKs 0 at 330 ms, its repair leaves
	// then and is acknowledged with 1–9 at 350 ms.
	d.begin()
	d.onLost(isn, isn)
	d.onNAKFrontier(isn.Add(1), func(s seqno.Seq) bool { return s == isn }, 330*ms)
	d.sample(330*ms, time.Time{}, 1000)
	d.onSend(isn, 1000, 330*ms, true)
	d.begin()
	d.onCumAck(isn.Add(10), 350*ms, 20*ms)
	if s, _ := d.sample(350*ms, time.Time{}, 1000); s.Delivered == 0 || !s.Repair {
		t.Errorf("the repair of a reported loss after go-back-N: %+v, want a repair's sample", s)
	}
}

// Silence implies at most implyLimit packets beyond the highest one a report showed received: a
// receiver that reports nothing, descheduled or overwhelmed, is not known to be running. Without
// the cap a loopback bulk sender whose window was a few hundred packets took a stalled reader's
// silence for arrivals and filled the flow window, 25 000 packets, into its socket.
func TestImplyCappedBeyondTheReports(t *testing.T) {
	isn := seqno.Seq(1<<31 - 16) // the 31-bit wrap falls inside the flight
	d := newDeliveryTracker(isn, 64)
	d.implyLimit = 8
	wait := 20 * time.Millisecond
	for k := range 40 {
		d.onSend(isn.Add(k), 100, time.Duration(k)*time.Millisecond, false)
	}
	d.begin()
	d.onCumAck(isn.Add(10), 15*time.Millisecond, wait) // 0–9 received: the highest is 9
	d.sample(15*time.Millisecond, time.Time{}, 100)
	late := time.Second // everything sent is old enough, and nothing more is reported
	d.begin()
	d.imply(late, wait)
	if d.implied != 800 || d.inflight != 2200 {
		t.Fatalf("imply: %d bytes implied, %d in flight; want 800 (10–17), 2200", d.implied, d.inflight)
	}
	d.sample(late, time.Time{}, 100)
	if due, ok := d.implyDue(wait); ok {
		t.Fatalf("implyDue = %v, true at the cap: a sender held by its window would wake for nothing", due)
	}
	d.begin()
	d.imply(2*late, wait)
	if d.implied != 0 {
		t.Fatalf("imply implied %d bytes more without a report", d.implied)
	}
	d.sample(2*late, time.Time{}, 100)
	// A NAK reports 20 missing and 21 received (spec §4.4): the cap moves to 21 + 8.
	d.begin()
	d.onLost(isn.Add(20), isn.Add(20))
	d.onNAKFrontier(isn.Add(21), func(s seqno.Seq) bool { return s == isn.Add(20) }, 2*late)
	d.imply(2*late, wait)
	if s, _ := d.sample(2*late, time.Time{}, 100); s.InFlight != 1000 {
		t.Fatalf("after the NAK: %d bytes in flight, want 1000 (30–39: the cap 21 + 8 = 29)", s.InFlight)
	}
}

// implyDue asks for a wake only when imply can take a packet out of the flight: found by review,
// it took the record at impliedFront whatever its state, so records a NAK had delivered (read as
// SACK) or declared lost each cost a window-limited sender a wake that implied nothing (12 of 19
// here; 40–70 % of the imply wakes in a bulk transfer at 1–3 % loss).
func TestImplyDueOnlyWhenImplyCanTakeOut(t *testing.T) {
	isn := seqno.Seq(1<<31 - 4)
	d := newDeliveryTracker(isn, 256)
	d.implyLimit = 12
	wait := 20 * time.Millisecond
	ms := time.Millisecond
	for k := range 20 { // 0–19 sent 1 ms apart
		d.onSend(isn.Add(k), 100, time.Duration(k)*ms, false)
	}
	// At 15 ms (before any is old enough) a NAK: 0 missing, 1–11 received (highest 11).
	d.begin()
	d.onLost(isn, isn)
	d.onNAKFrontier(isn.Add(11), func(s seqno.Seq) bool { return s == isn }, 15*ms)
	d.imply(15*ms, wait)
	d.sample(15*ms, time.Time{}, 100)
	// In flight: 12–19 (8 packets), all within the cap (11 + 12 = 23). Imply can only ever take out
	// 12–18; the first wake that can is at 13's departure + wait = 33 ms.
	wakes, empty := 0, 0
	for {
		due, ok := d.implyDue(wait)
		if !ok || wakes > 100 {
			break
		}
		before := d.inflightPkts
		d.begin()
		d.imply(due, wait)
		d.sample(due, time.Time{}, 100)
		wakes++
		if d.inflightPkts == before {
			empty++
			t.Logf("wake at %v implied nothing", due)
		}
	}
	if empty > 0 {
		t.Errorf("%d of %d imply wakes implied nothing (records already delivered by the NAK)", empty, wakes)
	}
}

// The imply cap counts packets sent, not sequence numbers: found by review, a given-up message's
// numbers (never sent, pktSkipped) used it up, so behind a hole whose repair was pending imply
// took nothing out past a skipped run of implyLimit numbers, though only a few packets had left.
func TestImplyCapCountsPacketsNotSkippedNumbers(t *testing.T) {
	isn := seqno.Seq(1<<31 - 16)
	d := newDeliveryTracker(isn, 256)
	d.implyLimit = 8
	wait := 20 * time.Millisecond
	for k := range 4 { // 0–3 sent
		d.onSend(isn.Add(k), 100, time.Duration(k)*time.Millisecond, false)
	}
	for k := 4; k < 54; k++ { // 4–53: a given-up message, never sent
		d.skip(isn.Add(k))
	}
	for k := 54; k < 60; k++ { // 54–59 sent
		d.onSend(isn.Add(k), 100, time.Duration(k)*time.Millisecond, false)
	}
	// A NAK: 0 missing, 1 received (highest 1); the repair of 0 is pending.
	d.begin()
	d.onLost(isn, isn)
	d.onNAKFrontier(isn.Add(1), func(s seqno.Seq) bool { return s == isn }, 60*time.Millisecond)
	d.sample(60*time.Millisecond, time.Time{}, 100)
	// Sent beyond the highest reported: 2, 3 and 54–59, 8 packets; the cap is 8 packets beyond 1.
	d.begin()
	d.imply(time.Second, wait)
	d.sample(time.Second, time.Time{}, 100)
	if d.inflightPkts > 1 { // 59 may stay as the evidence-less last one
		t.Errorf("%d packets still in flight after imply, want ≤ 1: the 50 skipped numbers counted against the cap of 8 sent packets", d.inflightPkts)
	}
}

// A NAK lost on the way leaves its packet to the next NAK's frontier, which reads it as delivered;
// the cumulative ACK still naming it missing takes that back (renege): the packet is counted lost
// once, its resend is in flight, and its bytes are not counted delivered a second time when the
// ACK finally covers it.
func TestRenegeCountsOnce(t *testing.T) {
	const ms = time.Millisecond
	isn := seqno.MaxSeq.Add(-1) // the flight wraps
	d := newDeliveryTracker(isn, 64)
	for k := range 6 {
		d.onSend(isn.Add(k), 1000, time.Duration(k)*ms, false)
	}
	d.begin() // the NAK naming packet 0 was lost; the next one names 4 and holds 5
	d.onLost(isn.Add(4), isn.Add(4))
	d.onNAKFrontier(isn.Add(5), func(s seqno.Seq) bool { return s == isn.Add(4) }, 40*ms)
	d.sample(40*ms, time.Time{}, 1000)
	if d.delivered != 5000 || d.inflight != 0 {
		t.Fatalf("after the NAK: delivered %d, in flight %d; want 5000, 0 (packets 0–3 and 5 read as delivered)", d.delivered, d.inflight)
	}
	if _, ok := d.lostHeadDue(20*ms, 41*ms); ok {
		t.Fatal("lostHeadDue judges a head the NAK's reading delivered without an ACK naming it missing after that NAK")
	}
	d.ackNames(isn) // an ACK that left after the NAK still names packet 0 missing
	if _, ok := d.lostHeadDue(20*ms, 41*ms); !ok {
		t.Fatal("lostHeadDue does not judge a head the NAK's reading delivered and a later ACK names missing")
	}
	d.begin()
	d.renege(isn, isn)
	d.onLost(isn, isn)
	s, _ := d.sample(45*ms, time.Time{}, 1000)
	if s.NewlyLost != 1000 || d.lost != 2000 {
		t.Fatalf("reneged head: NewlyLost %d, lost %d; want 1000, 2000", s.NewlyLost, d.lost)
	}
	d.onSend(isn, 1000, 46*ms, true)
	d.onSend(isn.Add(4), 1000, 46*ms, true)
	if d.inflight != 2000 {
		t.Fatalf("in flight %d after both resends, want 2000", d.inflight)
	}
	d.begin()
	d.onCumAck(isn.Add(6), 90*ms, 40*ms)
	s, _ = d.sample(90*ms, time.Time{}, 1000)
	if d.delivered != 6000 || s.NewlyDelivered != 1000 || d.inflight != 0 {
		t.Fatalf("after the ACK: delivered %d (newly %d), in flight %d; want 6000 (1000), 0: the reneged packet counted again", d.delivered, s.NewlyDelivered, d.inflight)
	}
}

// A head the NAK's reading took for delivered and that the periodic NAK then names is taken back
// and resent as a repair: the rule judges it from that resend, not from its first departure. A
// given-up message's number at the head (never sent) is not judged at all. (Both found by a
// review: the resend went out again about 1 ms later on a 9 ms path, and given-up numbers were
// counted as lost NAKs.)
func TestLostHeadDueFromTheLatestSend(t *testing.T) {
	const ms = time.Millisecond
	isn := seqno.Seq(100)
	d := newDeliveryTracker(isn, 64)
	for k := range 6 {
		d.onSend(isn.Add(k), 1000, time.Duration(k)*ms, false)
	}
	d.begin() // the NAK naming 0 was lost; the next one names 4 and holds 5: 0 read as delivered
	d.onLost(isn.Add(4), isn.Add(4))
	d.onNAKFrontier(isn.Add(5), func(s seqno.Seq) bool { return s == isn.Add(4) }, 15*ms)
	d.sample(15*ms, time.Time{}, 1000)
	d.begin() // the periodic NAK names 0 at 30 ms: taken back, declared lost, resent
	d.renege(isn, isn)
	d.onLost(isn, isn)
	s, _ := d.sample(30*ms, time.Time{}, 1000)
	d.onSend(isn, 1000, 30*ms, true)
	if s.NewlyLost != 1000 {
		t.Errorf("the named head: NewlyLost %d, want 1000", s.NewlyLost)
	}
	const wait = 25 * ms
	if due, ok := d.lostHeadDue(wait, 31*ms); !ok || due <= 30*ms+wait {
		t.Errorf("resent at 30 ms: lostHeadDue = %v, %v; want after 30 ms + the wait (%v) (flags %015b)", due, ok, wait, d.at(0).flags)
	}

	d = newDeliveryTracker(isn, 64)
	d.onSend(isn, 1000, 1*ms, false)
	d.skip(isn.Add(1))
	d.skip(isn.Add(2))
	d.onSend(isn.Add(3), 1000, 2*ms, false)
	d.begin()
	d.onCumAck(isn.Add(1), 12*ms, 10*ms) // the head is a given-up number now
	d.sample(12*ms, time.Time{}, 1000)
	if due, ok := d.lostHeadDue(20*ms, 13*ms); ok {
		t.Errorf("a given-up number that was never sent is judged lost at %v", due)
	}
	d.renege(isn.Add(1), isn.Add(3))
	if f := d.at(0).flags; f&pktDelivered == 0 || f&pktReneged != 0 {
		t.Errorf("renege took back a given-up number's delivery: flags %015b", f)
	}
}

// Only a NAK frontier beyond the head makes a later ACK naming the head evidence of its loss
// (ackNames): a frontier at the head itself showed it received.
func TestAckNamesNeedsAFrontierBeyondTheHead(t *testing.T) {
	const ms = time.Millisecond
	isn := seqno.MaxSeq // the flight wraps
	d := newDeliveryTracker(isn, 64)
	for k := range 4 {
		d.onSend(isn.Add(k), 1000, time.Duration(k)*ms, false)
	}
	d.begin()
	d.onNAKFrontier(isn, func(seqno.Seq) bool { return false }, 10*ms) // the receiver holds the head
	d.sample(10*ms, time.Time{}, 1000)
	d.ackNames(isn)
	if d.headMissing {
		t.Fatal("a frontier at the head made an ACK naming it evidence of its loss")
	}
	d.begin()
	d.onNAKFrontier(isn.Add(2), func(s seqno.Seq) bool { return s == isn.Add(1) }, 11*ms)
	d.sample(11*ms, time.Time{}, 1000)
	d.ackNames(isn)
	if !d.headMissing {
		t.Fatal("an ACK naming the head after a frontier beyond it is not noted")
	}
}

// An RTT sample is marked held (congestion.Delivery.RTTHeld) when its packet reached the receiver
// before another whose arrival was reported first: a packet sent later and reported by an earlier
// ACK or NAK, or a repair this ACK delivers that left later (its report waited for the repair).
// A packet that left after the repair, reported by the same ACK, gives a plain sample, as do
// on-time ACKs and a NAK's frontier.
func TestDeliveryRTTHeldBehindAHole(t *testing.T) {
	isn := seqno.Seq(1<<31 - 2) // the 31-bit wrap falls inside the flight
	ms := time.Millisecond
	d := newDeliveryTracker(isn, 64)
	for k := 0; k < 4; k++ {
		d.onSend(isn.Add(k), 100, time.Duration(k)*ms, false)
	}
	d.begin()
	d.onCumAck(isn.Add(2), 21*ms, 20*ms) // 0 and 1 on time
	s, _ := d.sample(21*ms, time.Time{}, 100)
	if s.RTT != 20*ms || s.RTTHeld {
		t.Fatalf("on-time ACK: RTT %v held %v, want 20ms, not held", s.RTT, s.RTTHeld)
	}
	// 2 is lost; 3 arrives, and the receiver's NAK names 2 with 3 as its frontier.
	d.begin()
	d.onLost(isn.Add(2), isn.Add(2))
	d.onNAKFrontier(isn.Add(3), func(q seqno.Seq) bool { return q == isn.Add(2) }, 23*ms)
	if s, _ = d.sample(23*ms, time.Time{}, 100); s.RTT != 20*ms || s.RTTHeld {
		t.Fatalf("NAK frontier: RTT %v held %v, want 20ms, not held", s.RTT, s.RTTHeld)
	}
	// 4–9 follow; 2's repair leaves at 24 ms and is lost too, so the cumulative ACK covering
	// 4–9 comes only with the second repair (left at 50 ms), 70 ms after 9 left.
	for k := 4; k < 10; k++ {
		d.onSend(isn.Add(k), 100, time.Duration(k)*ms, false)
	}
	d.onSend(isn.Add(2), 100, 24*ms, true)
	d.onSend(isn.Add(2), 100, 50*ms, true)
	d.begin()
	d.onCumAck(isn.Add(10), 79*ms, 20*ms)
	s, _ = d.sample(79*ms, time.Time{}, 100)
	if s.RTT != 70*ms || !s.RTTHeld {
		t.Fatalf("ACK after the repair: RTT %v held %v, want 70ms, held", s.RTT, s.RTTHeld)
	}
	// 10–14 leave; 10 is lost and repaired at 105 ms; 11–13 left before the repair, 14 after
	// it: the repair's ACK gives 14's sample, not held.
	for k := 10; k < 14; k++ {
		d.onSend(isn.Add(k), 100, time.Duration(90+k)*ms, false)
	}
	d.onSend(isn.Add(10), 100, 105*ms, true)
	d.onSend(isn.Add(14), 100, 106*ms, false)
	d.begin()
	d.onCumAck(isn.Add(15), 127*ms, 20*ms)
	if s, _ = d.sample(127*ms, time.Time{}, 100); s.RTT != 21*ms || s.RTTHeld {
		t.Fatalf("repair ACK with a packet sent after the repair: RTT %v held %v, want 21ms, not held", s.RTT, s.RTTHeld)
	}
	// 16 is named missing, 17 is the NAK's frontier; 16 then turns up (reordered, before its
	// resend) and the ACK that covers it has it as its newest newly delivered packet, which left
	// before 17, reported already: held, with no repair in the event.
	for k := 15; k < 18; k++ {
		d.onSend(isn.Add(k), 100, time.Duration(100+k)*ms, false)
	}
	d.begin()
	d.onLost(isn.Add(16), isn.Add(16))
	d.onNAKFrontier(isn.Add(17), func(q seqno.Seq) bool { return q == isn.Add(16) }, 138*ms)
	d.sample(138*ms, time.Time{}, 100)
	d.begin()
	d.onCumAck(isn.Add(18), 140*ms, 20*ms)
	if s, _ = d.sample(140*ms, time.Time{}, 100); s.RTT != 24*ms || !s.RTTHeld {
		t.Fatalf("ACK of a packet reported after a later one: RTT %v held %v, want 24ms, held", s.RTT, s.RTTHeld)
	}
}

// No loss, no hole: the queue grows at 0.25 s/s (UP at gain 1.25 on a full link) on a 100 ms path
// whose receiver ACKs every SYN (12 Mbit/s: light ACKs every 64 packets come only every 64 ms),
// and the tracker's SRTT falls behind the rising samples. None may be marked held, or BBR's UP
// never sees the queue it builds (a review found the first rule, SRTT + SYN, marking 12 of 19).
func TestDeliveryRampIsNotHeld(t *testing.T) {
	ms := time.Millisecond
	owd, gap, t0 := 50*ms, ms, 3000*ms
	q := func(s time.Duration) time.Duration {
		if s < t0 {
			return 0
		}
		return (s - t0) / 4
	}
	isn := seqno.Seq(1)
	d := newDeliveryTracker(isn, 1<<16)
	sent, nextAck := 0, 10*ms
	held, plain := 0, 0
	for now := time.Duration(0); now < t0+300*ms; now += 100 * time.Microsecond {
		for time.Duration(sent)*gap <= now {
			d.onSend(isn.Add(sent), 1456, time.Duration(sent)*gap, false)
			sent++
		}
		if now == nextAck+owd {
			k := 0
			for k < sent && time.Duration(k)*gap+owd+q(time.Duration(k)*gap) <= nextAck {
				k++
			}
			d.begin()
			d.onCumAck(isn.Add(k), now, 100*ms)
			d.imply(now, 100*ms)
			s, ok := d.sample(now, time.Time{}, 1456)
			if ok && s.RTT > 0 && now > t0+40*ms {
				if s.RTTHeld {
					held++
				} else {
					plain++
				}
			}
			nextAck += 10 * ms
		}
		if now%gap == 0 {
			d.begin()
			d.imply(now, 100*ms)
			d.sample(now, time.Time{}, 1456)
		}
	}
	if held > 0 || plain < 10 {
		t.Errorf("no hole, no loss: %d of %d ramp samples marked RTTHeld, want none of at least 10", held, held+plain)
	}
}
