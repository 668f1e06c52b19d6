package stream

import (
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
)

// Whole transfers over the link harness (link_test.go) with a BBR that records every Delivery it
// is given: the events' sums must match the tracker's totals.

// recBBR is BBR with a record of every Delivery it was given.
type recBBR struct {
	*congestion.BBR
	newlyAcked, newlyDelivered, newlyLost, sp int64
	last                                      congestion.Delivery
}

func (r *recBBR) OnDelivery(now time.Time, d congestion.Delivery) {
	r.newlyAcked += d.NewlyAcked
	r.newlyDelivered += d.NewlyDelivered
	r.newlyLost += d.NewlyLost
	r.sp += d.Spurious
	r.last = d
	r.BBR.OnDelivery(now, d)
}

func runRec(t *testing.T, seed uint64, r linkRules, size int) (*recBBR, *link) {
	l := newLink(seed, r, linkRules{delay: r.delay})
	cc := &recBBR{BBR: congestion.NewBBR()}
	newPair(l, pairOpts{isnA: 1<<31 - 50, isnB: 7, ccA: cc, sendBuf: 0, recvBuf: 0, flow: 0})
	a := &app{src: randomBytes(seed, size), rbuf: make([]byte, 64<<10)}
	b := &app{rbuf: make([]byte, 64<<10), dst: make([]byte, 0, size)}
	ok := l.run([2]*app{a, b}, l.now.Add(5*time.Minute), func() bool {
		return len(b.dst) >= size && l.ep[0].Flushed()
	})
	if !ok {
		e := l.ep[0]
		t.Fatalf("transfer incomplete: got %d of %d; stats %+v; cwnd %d period %v inflight %d dlv %d/%d sloss %d unsent %d flow %d awaiting %v phase %s",
			len(b.dst), size, e.Stats(), e.cwnd, e.period, e.inFlight(), e.dlv.inflightPkts, e.dlv.n, e.sloss.Len(), e.snd.Unsent(), e.flowWindow, e.awaitingPeer, cc.Phase())
	}
	return cc, l
}

// Every byte delivered counts once in NewlyAcked and once in NewlyDelivered; every loss once in
// NewlyLost (less the spurious ones).
func TestDeliveryEventsCountEachByteOnce(t *testing.T) {
	for i, r := range []linkRules{
		{delay: 10 * time.Millisecond, rate: 6_000_000, loss: 0.02, reorder: 0.02},
		{delay: 20 * time.Millisecond, rate: 6_000_000, loss: 0.05},
		{delay: 5 * time.Millisecond, rate: 6_000_000, queue: 40},
	} {
		cc, l := runRec(t, uint64(10+i), r, 8<<20)
		d := cc.last
		st := l.ep[0].Stats()
		t.Logf("case %d: sent %d retrans %d; ΣNewlyDelivered %d ΣNewlyAcked %d TotalDelivered %d; ΣNewlyLost %d ΣSpurious %d TotalLost %d (d.lost %d)",
			i, st.PktSent, st.PktRetrans, cc.newlyDelivered, cc.newlyAcked, d.TotalDelivered, cc.newlyLost, cc.sp, d.TotalLost, l.ep[0].dlv.lost)
		if cc.newlyDelivered != d.TotalDelivered {
			t.Errorf("case %d: ΣNewlyDelivered %d != TotalDelivered %d", i, cc.newlyDelivered, d.TotalDelivered)
		}
		if cc.newlyAcked != d.TotalDelivered {
			t.Errorf("case %d: ΣNewlyAcked %d != TotalDelivered %d (each packet once)", i, cc.newlyAcked, d.TotalDelivered)
		}
		if got := cc.newlyLost - cc.sp; got != l.ep[0].dlv.lost {
			t.Errorf("case %d: ΣNewlyLost−ΣSpurious %d != the tracker's lost %d: %d lost bytes never reached the controller", i, got, l.ep[0].dlv.lost, l.ep[0].dlv.lost-got)
		}
	}
}

// Losses declared on the timer path (a lost repair, checkLostRepair) reach the controller as
// NewlyLost: outside a delivery event they counted in TotalLost only (32 of 40 seeds lost some).
func TestDeliveryTimerLossesReachController(t *testing.T) {
	bad := 0
	for seed := uint64(100); seed < 140; seed++ {
		cc, l := runRec(t, seed, linkRules{delay: 20 * time.Millisecond, rate: 6_000_000, loss: 0.05}, 4<<20)
		if got := cc.newlyLost - cc.sp; got != l.ep[0].dlv.lost {
			bad++
			t.Logf("seed %d: %d lost bytes never reached the controller (RetransLost %d)", seed, l.ep[0].dlv.lost-got, l.ep[0].Stats().RetransLost)
		}
	}
	if bad > 0 {
		t.Errorf("%d of 40 runs: ΣNewlyLost−ΣSpurious != the tracker's lost bytes", bad)
	}
}
