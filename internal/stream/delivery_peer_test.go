package stream

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/seqno"
)

// Tests of the receiver's clock in delivery-rate samples (delivery_peer.go). The samples' bound
// with ACK aggregation is in TestDeliverySamplesNeverExceedTheBottleneck.

// The receiver's clock only ever lengthens a sample's interval, and by no more than a round trip:
// a peer whose timestamps are garbage (random, or jumping ahead) lowers samples at most to what
// an extra round trip in their interval gives, never to nothing, and never raises one.
func TestDeliveryPeerClockBounded(t *testing.T) {
	for _, clock := range []struct {
		name string
		f    func(rng *rand.Rand, sent time.Duration) uint32
	}{
		{"random", func(rng *rand.Rand, _ time.Duration) uint32 { return rng.Uint32() }},
		{"jumps ahead", func(rng *rand.Rand, sent time.Duration) uint32 {
			return uint32(sent/time.Microsecond) + uint32(rng.IntN(4))*1e9
		}},
		{"runs 10× fast", func(_ *rand.Rand, sent time.Duration) uint32 { return uint32(10 * sent / time.Microsecond) }},
		// Within a round trip of ours for the shorter samples, beyond it for the longer: these
		// catch a bound looser than one round trip.
		{"runs 1.5× fast", func(_ *rand.Rand, sent time.Duration) uint32 { return uint32(3 * sent / 2 / time.Microsecond) }},
		{"runs 2× fast", func(_ *rand.Rand, sent time.Duration) uint32 { return uint32(2 * sent / time.Microsecond) }},
		{"runs 3× fast", func(_ *rand.Rand, sent time.Duration) uint32 { return uint32(3 * sent / time.Microsecond) }},
	} {
		t.Run(clock.name, func(t *testing.T) {
			isn := seqno.MaxSeq.Add(-500)
			run := func(peer bool) []congestion.Delivery {
				p := &bottleneckPath{d: newDeliveryTracker(isn, 1<<16), isn: isn, sendGap: time.Millisecond, linkGap: time.Millisecond,
					owd: 5 * time.Millisecond, size: 1000, loss: 0.03, rng: rand.New(rand.NewPCG(3, 7)), ackAgg: 5 * time.Millisecond}
				if peer {
					crng := rand.New(rand.NewPCG(9, 9))
					p.peerClock = func(sent time.Duration) uint32 { return clock.f(crng, sent) }
				}
				p.run(3000, 4*time.Second)
				return p.samples
			}
			plain, broken := run(false), run(true)
			if len(plain) != len(broken) || len(plain) < 100 {
				t.Fatalf("%d samples without the peer's clock, %d with it: the clock changed more than intervals", len(plain), len(broken))
			}
			var maxRTT time.Duration
			for _, s := range plain {
				maxRTT = max(maxRTT, s.RTT)
			}
			for i, a := range plain {
				b := broken[i]
				if a.Delivered != b.Delivered || b.Interval < a.Interval || b.Interval > a.Interval+maxRTT {
					t.Fatalf("sample %d: %d bytes over %v without the peer's clock, %d over %v with it; want the same bytes over at most %v more",
						i, a.Delivered, a.Interval, b.Delivered, b.Interval, maxRTT)
				}
			}
		})
	}
}

// peerClockRun drives the bottleneckPath of TestDeliverySamplesNeverExceedTheBottleneck with the
// receiver's header timestamps from clock (nil: the tracker never hears of one).
func peerClockRun(seed uint64, sendGap time.Duration, loss float64, owd, ackAgg time.Duration, clock func(sent time.Duration) uint32) []congestion.Delivery {
	isn := seqno.MaxSeq.Add(-500)
	p := &bottleneckPath{d: newDeliveryTracker(isn, 1<<16), isn: isn, sendGap: sendGap, linkGap: time.Millisecond,
		owd: owd, size: 1000, loss: loss, rng: rand.New(rand.NewPCG(seed, 7)), ackAgg: ackAgg, peerClock: clock}
	p.run(3000, 4*time.Second)
	return p.samples
}

// UDT 4.11 stamps every control packet 0 (docs/udt4-spec.md §1.3): its ACKs and NAKs leave every
// sample exactly as a tracker that never hears of a timestamp computes it, which is the tracker
// before the peer's clock was used (peerInterval only ever returns 0 then).
func TestDeliveryPeerClockZeroIsNoClock(t *testing.T) {
	for _, c := range []struct {
		sendGap     time.Duration
		loss        float64
		owd, ackAgg time.Duration
	}{
		{time.Millisecond, 0, 25 * time.Millisecond, 0},
		{time.Millisecond, 0.03, 25 * time.Millisecond, 0},
		{500 * time.Microsecond, 0.03, 25 * time.Millisecond, 0},
		{time.Millisecond, 0.1, 2 * time.Millisecond, 0},
		{time.Millisecond, 0.03, 5 * time.Millisecond, 5 * time.Millisecond},
		{800 * time.Microsecond, 0.01, 10 * time.Millisecond, 5 * time.Millisecond},
	} {
		for seed := uint64(1); seed <= 4; seed++ {
			none := peerClockRun(seed, c.sendGap, c.loss, c.owd, c.ackAgg, nil)
			zero := peerClockRun(seed, c.sendGap, c.loss, c.owd, c.ackAgg, func(time.Duration) uint32 { return 0 })
			if len(none) < 20 || !reflect.DeepEqual(none, zero) {
				t.Fatalf("%+v seed %d: %d samples without timestamps, %d with all-zero ones, or they differ", c, seed, len(none), len(zero))
			}
		}
	}
}

// A receiver clock that runs fast by less than a round trip per sample lowers every sample by
// its rate error, and a controller's max filter sees nothing else: BBR's estimate settles at the
// bottleneck / rate error, and collapses once the error exceeds ProbeBW's 1.25 gain (simulated,
// 100 Mbit/s · 20 ms: 1.3× fast, 51 % of the link after 20 s; 1.5×, 1 % after 17 s). A clock
// whose rate is not ours is no clock: samples must not read much lower than without it.
func TestDeliveryPeerClockRateError(t *testing.T) {
	for _, f := range []float64{1.1, 1.3, 1.5} {
		var kept, keptClock []float64
		minRTT := 2*5*time.Millisecond + time.Millisecond
		for seed := uint64(1); seed <= 4; seed++ {
			none := peerClockRun(seed, time.Millisecond, 0.03, 5*time.Millisecond, 5*time.Millisecond, nil)
			fast := peerClockRun(seed, time.Millisecond, 0.03, 5*time.Millisecond, 5*time.Millisecond, func(sent time.Duration) uint32 {
				return uint32(int64(f * float64(sent/time.Microsecond)))
			})
			for _, s := range none {
				if s.Interval >= minRTT {
					kept = append(kept, rate(s))
				}
			}
			for _, s := range fast {
				if s.Interval >= minRTT {
					keptClock = append(keptClock, rate(s))
				}
			}
		}
		mean := func(x []float64) float64 {
			s := 0.0
			for _, v := range x {
				s += v
			}
			return s / float64(len(x))
		}
		// 5 % for the ACK-aggregation correction itself (a truthful clock: 0.918 against 0.935 of
		// the path, -1.8 %), and no more.
		if r := mean(keptClock) / mean(kept); r < 0.95 {
			t.Errorf("peer clock %.2f× ours: mean kept sample %.3f of what it is without the clock", f, r)
		}
	}
}
