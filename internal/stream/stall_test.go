package stream

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/packet"
	"github.com/udtgo/udt/internal/seqno"
)

// A lost repair holds UDT's cumulative ACK, and the receiver then says nothing (its ACK number
// does not move): only the sender's timers can act. The packets behind the hole leave the flight
// once imply's wait has passed (delivery.go), so a window-limited sender resumes then instead of
// waiting for the tail-loss probe (2·SYN at least): the longest pause while the hole is open is
// about imply's wait, not the probe's. Asserted with a margin of 1.5× the longest wait imply
// asked for during the hole, over short paths where the probe's floor dominates. And the receiver
// re-reports the hole once its repair is overdue, so the repair is resent within about a round
// trip of that, long before the probe.
func TestLostRepairDoesNotStallTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration // one way
		rate  int64         // bytes/s
	}{
		{"100Mbit-1ms", 500 * time.Microsecond, 12_500_000},
		{"100Mbit-4ms", 2 * time.Millisecond, 12_500_000},
		{"20Mbit-2ms", time.Millisecond, 2_500_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const isn = 1<<31 - 1000 // the hole lies past the wrap
			target := seqno.Seq(isn).Add(3000)
			var (
				tx       int           // transmissions of target seen
				holeFrom time.Time     // the first repair's departure
				holeTo   time.Time     // the repair that arrived
				last     time.Time     // the previous data departure while the hole is open
				maxGap   time.Duration // the longest pause between data departures then
				maxWait  time.Duration // the longest imply wait seen then
				maxRcvTO time.Duration // the receiver's longest SRTT + 4·RTTVAR then
				l        *link
			)
			fwd := linkRules{delay: tc.delay, rate: tc.rate, queue: 200, drop: func(b []byte) bool {
				if b[0]&0x80 != 0 {
					return false
				}
				seq := seqno.SeqFromWire(binary.BigEndian.Uint32(b))
				open := !holeFrom.IsZero() && holeTo.IsZero()
				if open {
					if g := l.now.Sub(last); g > maxGap {
						maxGap = g
					}
					last = l.now
					e := l.ep[0]
					maxWait = max(maxWait, e.dlv.implyWait(e.rtt.RTT()))
					maxRcvTO = max(maxRcvTO, l.ep[1].rtt.Timeout()+l.ep[1].rcvReorderWindow())
				}
				if seq != target {
					return false
				}
				tx++
				switch tx {
				case 1:
					return true
				case 2:
					holeFrom, last = l.now, l.now
					return true
				case 3:
					holeTo = l.now
				}
				return false
			}}
			l = newLink(7, fwd, linkRules{delay: tc.delay})
			bbr := func() congestion.Controller { return congestion.BBRFactory()() }
			newPair(l, pairOpts{isnA: isn, isnB: 9, ccA: bbr(), ccB: bbr()})
			transfer(t, l, 12<<20, false, time.Minute)
			if holeTo.IsZero() {
				t.Fatalf("the target was sent %d times, want 3", tx)
			}
			hole := holeTo.Sub(holeFrom)
			t.Logf("hole open %v (receiver's SRTT + 4·RTTVAR + reordering window up to %v); longest pause %v, longest imply wait %v; probes %d",
				hole, maxRcvTO, maxGap, maxWait, l.ep[0].Stats().Probes)
			if maxGap > maxWait*3/2 {
				t.Errorf("the sender paused %v while the lost repair held the ACK, want ≤ 1.5 × imply's wait (%v)", maxGap, maxWait)
			}
			// The receiver re-reports the hole once a repair is overdue (nakInterval); the sender
			// resends on that NAK: the second repair leaves within about two of its intervals.
			if hole > 2*maxRcvTO {
				t.Errorf("the lost repair was resent %v after it, want ≤ 2 × (SRTT + 4·RTTVAR + window) = %v", hole, 2*maxRcvTO)
			}
		})
	}
}

// A lost NAK leaves the receiver's cumulative ACK naming the packet as missing while NAKs about
// later gaps show later packets delivered: the sender declares it lost a round trip (and the
// reordering window) after it left (lostHeadDue, RFC 8985's RACK), instead of waiting for the
// receiver's periodic re-report or the tail-loss probe, which holds new data back until the peer
// answers. Over paths of 2–100 ms with 1 % random loss forward (so that NAKs keep arriving), the
// repair must leave within 1.5 × the sender's own wait of the first transmission, no tail-loss
// probe may be sent from then to the end of the transfer, and no transmission may follow the
// previous one sooner than a round trip (the third transmission that the rule sent about 1 ms
// after a periodic NAK's resend, timing it from the first, on short paths). On the 2 and 9 ms
// paths the receiver's periodic NAK usually comes first; without the rule the 20 and 100 ms paths
// took 1.44 and 1.50 × the wait and a probe each.
func TestLostNAKRepairedFromTheACK(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration // one way
	}{
		{"2ms", time.Millisecond},
		{"9ms", 4500 * time.Microsecond},
		{"20ms", 10 * time.Millisecond},
		{"100ms", 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const isn = 1<<31 - 1000 // the hole lies past the wrap
			target := seqno.Seq(isn).Add(3000)
			var (
				txs       []time.Time // the target's transmissions
				dropped   bool        // the NAK naming it was dropped
				wait      time.Duration
				probesAt1 uint64
				l         *link
			)
			fwd := linkRules{delay: tc.delay, rate: 12_500_000, queue: 2000, loss: 0.01, drop: func(b []byte) bool {
				if len(txs) == 1 {
					wait = max(wait, l.ep[0].lostRepairWait())
				}
				if b[0]&0x80 != 0 || seqno.SeqFromWire(binary.BigEndian.Uint32(b)) != target {
					return false
				}
				txs = append(txs, l.now)
				if len(txs) == 1 {
					probesAt1 = l.ep[0].Stats().Probes
					return true
				}
				return false
			}}
			rev := linkRules{delay: tc.delay, drop: dropFirstNAKNaming(target, &dropped)}
			l = newLink(11, fwd, rev)
			bbr := func() congestion.Controller { return congestion.BBRFactory()() }
			newPair(l, pairOpts{isnA: isn, isnB: 9, ccA: bbr(), ccB: bbr()})
			transfer(t, l, 8<<20, false, time.Minute)
			if !dropped || len(txs) < 2 {
				t.Fatalf("NAK dropped %v, target sent %d times: the scenario did not happen", dropped, len(txs))
			}
			st := l.ep[0].Stats()
			hole := txs[1].Sub(txs[0])
			probes := st.Probes - probesAt1
			t.Logf("repair left %v after the first transmission (the sender's longest wait then %v); %d transmissions; NAKLost %d, probes from the first transmission on %d",
				hole, wait, len(txs), st.NAKLost, probes)
			if hole > wait*3/2 {
				t.Errorf("the packet whose NAK was lost was resent %v after it left, want ≤ 1.5 × the wait (%v)", hole, wait)
			}
			if probes > 0 {
				t.Errorf("%d tail-loss probes from the first transmission on, want none", probes)
			}
			for i := 2; i < len(txs); i++ {
				if gap := txs[i].Sub(txs[i-1]); gap < 2*tc.delay {
					t.Errorf("transmission %d left %v after transmission %d, less than the round trip (%v): its ACK could not have come back", i+1, gap, i, 2*tc.delay)
				}
			}
		})
	}
}

// The NAK naming a packet is lost and the next NAK's frontier reads it as delivered; the
// receiver's periodic NAK then names it again on a 9 ms path, before the sender's own rule would:
// the resend is a repair, judged from when it left, so nothing goes out again before its ACK can
// return, and the resend is in flight as a repair. (A review found the rule timing it from the
// first transmission: a third one left 1.3 ms after the second.)
func TestPeriodicNAKResendNotRepeated(t *testing.T) {
	const delay = 4500 * time.Microsecond
	const isn = 1000
	target := seqno.Seq(isn).Add(3000)
	other := target.Add(20) // its NAK's frontier reads target as delivered
	var txs []time.Time
	nakDropped, repairTracked := false, false
	var l *link
	fwd := linkRules{delay: delay, rate: 25_000_000, queue: 2000, drop: func(b []byte) bool {
		if b[0]&0x80 != 0 {
			return false
		}
		switch s := seqno.SeqFromWire(binary.BigEndian.Uint32(b)); s {
		case target:
			txs = append(txs, l.now)
			if d := l.ep[0].dlv; len(txs) == 2 && seqno.Offset(d.base, s) == 0 {
				repairTracked = d.at(0).flags&(pktRetrans|pktInFlight) == pktRetrans|pktInFlight
			}
			return len(txs) == 1
		case other:
			d := l.ep[0].dlv
			return d.at(seqno.Offset(d.base, s)).flags&pktRetrans == 0
		}
		return false
	}}
	rev := linkRules{delay: delay, drop: dropFirstNAKNaming(target, &nakDropped)}
	l = newLink(11, fwd, rev)
	bbr := func() congestion.Controller { return congestion.BBRFactory()() }
	newPair(l, pairOpts{isnA: isn, isnB: 9, ccA: bbr(), ccB: bbr()})
	transfer(t, l, 8<<20, false, time.Minute)
	if !nakDropped || len(txs) < 2 {
		t.Fatalf("NAK dropped %v, target sent %d times: the scenario did not happen", nakDropped, len(txs))
	}
	for i := 2; i < len(txs); i++ {
		if gap := txs[i].Sub(txs[i-1]); gap < 2*delay {
			t.Errorf("transmission %d of %v left %v after transmission %d (RTT %v): its ACK could not have come back", i+1, target, gap, i, 2*delay)
		}
	}
	if !repairTracked {
		t.Error("the resend the periodic NAK asked for is not in flight as a repair: the NAK's reading still holds it delivered")
	}
	t.Logf("%d transmissions of the target; NAKLost %d", len(txs), l.ep[0].Stats().NAKLost)
}

// dropFirstNAKNaming returns a link drop rule that drops the first NAK naming target and sets
// *dropped then.
func dropFirstNAKNaming(target seqno.Seq, dropped *bool) func([]byte) bool {
	return func(b []byte) bool {
		if *dropped || !isNAK(b) {
			return false
		}
		rs, err := packet.AppendLossList(nil, b[headerSize:])
		if err != nil {
			return false
		}
		for _, r := range rs {
			if seqno.Offset(seqno.SeqFromWire(r.First), target) >= 0 && seqno.Offset(target, seqno.SeqFromWire(r.Last)) >= 0 {
				*dropped = true
				return true
			}
		}
		return false
	}
}

// An application-limited sender (8 packets every 60 ms) on a 100 ms path with a steady RTT loses
// one data packet X (and, in half the cases, the first ACK naming X as the first missing). The NAK
// naming X arrives; its frontier reads the packets before X as delivered, rightly: the receiver
// holds them, and its ACK for them trails their arrival by up to 1.25 ACK periods (or a round
// trip, when that ACK is lost and repeated). No packet the receiver holds may be resent as lost,
// except by the retransmission timer: the lost-head rule needs an ACK sent after the frontier
// arrived that still names the head missing (ackNames). (From a review: a rule on time alone
// resent the packet before X in all ten cases.)
func TestLostHeadRuleSparesHeldPackets(t *testing.T) {
	for _, dropACK := range []bool{false, true} {
		for off := 202; off <= 206; off++ {
			const isn = 1000
			x := seqno.Seq(isn).Add(off)
			var l *link
			xDropped, ackDropped := false, false
			var held []seqno.Seq
			fwd := linkRules{delay: 50 * time.Millisecond, rate: 12_500_000, drop: func(b []byte) bool {
				if b[0]&0x80 != 0 {
					return false
				}
				s := seqno.SeqFromWire(binary.BigEndian.Uint32(b))
				r := l.ep[1]
				if rec := l.ep[0].sent.at(s); rec != nil && rec.flags&sentRetrans != 0 && rec.flags&sentByTimer == 0 &&
					(seqno.Offset(s, r.rcv.AckSeq()) > 0 || seqno.Offset(s, r.lrsn) >= 0 && !r.rloss.Contains(s)) {
					held = append(held, s)
				}
				if s == x && !xDropped {
					xDropped = true
					return true
				}
				return false
			}}
			rev := linkRules{delay: 50 * time.Millisecond, drop: func(b []byte) bool {
				if ty, err := packet.Type(b); !dropACK || err != nil || ty != packet.TypeACK || ackDropped || !xDropped {
					return false
				}
				if seqno.SeqFromWire(binary.BigEndian.Uint32(b[16:])) == x {
					ackDropped = true
					return true
				}
				return false
			}}
			l = newLink(3, fwd, rev)
			newPair(l, pairOpts{isnA: isn, isnB: 9, ccA: congestion.NewBBR()})
			const burst, total = 8 * 1456, 80 * 8 * 1456
			src := randomBytes(1, total)
			a := &app{rbuf: make([]byte, 64<<10)}
			b := &app{rbuf: make([]byte, 64<<10), dst: make([]byte, 0, total)}
			start, written := l.now, 0
			l.inject = func(i int, now time.Time) {
				for i == 0 && written < total && now.Sub(start) >= time.Duration(written/burst)*60*time.Millisecond {
					written += l.ep[0].Write(src[written : written+burst])
				}
			}
			if !l.run([2]*app{a, b}, l.now.Add(time.Minute), func() bool { return len(b.dst) >= total && l.ep[0].Flushed() }) {
				t.Fatal("transfer incomplete")
			}
			if !xDropped || dropACK && !ackDropped {
				t.Fatalf("X at +%d: the scenario did not happen", off)
			}
			st := l.ep[0].Stats()
			if len(held) > 0 {
				t.Errorf("X at +%d, ACK dropped %v: packets the receiver held resent as lost: %v; retransmissions %d, spurious %d, lost bytes %d (X alone: 1472)",
					off, dropACK, held, st.PktRetrans, st.PktSpurious, l.ep[0].dlv.lost)
			}
		}
	}
}
