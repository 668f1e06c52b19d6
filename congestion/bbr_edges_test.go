package congestion

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Edge cases of BBR's state machine found by review (2026-12-06): an undo armed with too few
// losses, ProbeRTT's samples taken for a Startup plateau, ProbeRTT entered without settling the
// flow, an ACK-aggregation filter that stopped ageing, and Startup teaching the background loss
// rate its own excessive losses. Each test drives OnDelivery with hand-built events.

const edgePkt = 1472

// edgeFlow is a synthetic sender: a flight per round trip, acknowledged by one event a round trip
// later with a sample of the flight over the round trip.
type edgeFlow struct {
	b         *BBR
	now       time.Time
	rtt       time.Duration
	delivered int64
	lost      int64
}

func newEdgeFlow(rtt time.Duration) *edgeFlow {
	b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 2)))
	b.Init(t0, Params{MSS: 1500, RTT: rtt})
	return &edgeFlow{b: b, now: t0, rtt: rtt}
}

// newEdgeFlowInDown returns a flow past Startup (three rounds of pkts packets) that has just
// entered ProbeBW_DOWN, with its next bandwidth probe held off.
func newEdgeFlowInDown(pkts int) *edgeFlow {
	f := newEdgeFlow(10 * time.Millisecond)
	for range 3 {
		f.round(pkts, 0, f.rtt, false)
	}
	f.b.filledPipe = true
	f.b.startProbeBWDown(f.now)
	f.b.bwProbeWait, f.b.roundsSinceBwProbe = time.Hour, -1000
	return f
}

// round sends pkts packets and acknowledges them rtt later, lost of them declared lost by the
// same event.
func (f *edgeFlow) round(pkts, lost int, rtt time.Duration, appLimited bool) {
	prior := f.delivered
	for range pkts {
		f.b.OnPacketSent(f.now, 0, edgePkt)
	}
	tx := int64(pkts * edgePkt)
	f.now = f.now.Add(rtt)
	got := int64((pkts - lost) * edgePkt)
	f.delivered += got
	f.lost += int64(lost * edgePkt)
	d := Delivery{
		Delivered: got, Interval: rtt, AppLimited: appLimited, RTT: rtt,
		PriorDelivered: prior, TxInFlight: tx, LostSinceSent: int64(lost * edgePkt),
		NewlyDelivered: got, NewlyAcked: got, NewlyLost: int64(lost * edgePkt),
		TotalDelivered: f.delivered, TotalLost: f.lost, InFlight: edgePkt, PriorInFlight: tx,
		CwndLimited: true, PacketSize: edgePkt,
	}
	if lost > 0 {
		d.LostSentLast, d.LostTxInFlight = f.now.Add(-rtt), tx
	}
	f.b.OnDelivery(f.now, d)
}

// The losses that trigger a loss response may have been declared by earlier events (a flight's
// LostSinceSent): undo must count them, so that one spurious packet among 20 losses undoes
// nothing. Armed with the arming event's NewlyLost (0 here), the first spurious packet took the
// response back and re-entered Startup, and the next ACK took it again.
func TestBBRUndoNeedsTheResponseLossesSpurious(t *testing.T) {
	f := newEdgeFlow(10 * time.Millisecond)
	f.round(16, 0, f.rtt, false)
	// A NAK declares 20 packets lost, then an ACK shows its flight of 100 lost 20 since: the
	// per-ACK loss exit of Startup.
	f.now = f.now.Add(time.Millisecond)
	f.lost += 20 * edgePkt
	f.b.OnDelivery(f.now, Delivery{NewlyLost: 20 * edgePkt, TotalDelivered: f.delivered, TotalLost: f.lost,
		InFlight: 80 * edgePkt, PriorInFlight: 100 * edgePkt, PacketSize: edgePkt, LostSentLast: f.now, LostTxInFlight: 100 * edgePkt})
	f.now = f.now.Add(time.Millisecond)
	f.delivered += 10 * edgePkt
	f.b.OnDelivery(f.now, Delivery{Delivered: 10 * edgePkt, Interval: 10 * time.Millisecond, RTT: 10 * time.Millisecond,
		PriorDelivered: f.delivered - 10*edgePkt, TxInFlight: 100 * edgePkt, LostSinceSent: 20 * edgePkt,
		NewlyDelivered: 10 * edgePkt, NewlyAcked: 10 * edgePkt, TotalDelivered: f.delivered, TotalLost: f.lost,
		InFlight: 70 * edgePkt, PriorInFlight: 80 * edgePkt, PacketSize: edgePkt})
	if !f.b.filledPipe || math.IsInf(f.b.inflightHi, 1) {
		t.Fatalf("setup: the loss exit did not fire (state %v, inflight_hi %v)", f.b.state, f.b.inflightHi)
	}
	spurious := func(n int64) {
		f.now = f.now.Add(time.Millisecond)
		f.lost -= n * edgePkt
		f.b.OnDelivery(f.now, Delivery{Spurious: n * edgePkt, TotalDelivered: f.delivered, TotalLost: f.lost,
			InFlight: 70 * edgePkt, PriorInFlight: 70 * edgePkt, PacketSize: edgePkt})
	}
	spurious(1)
	if f.b.state == bbrStartup || math.IsInf(f.b.inflightHi, 1) {
		t.Fatalf("one spurious packet of 20 losses undid the response: state %v, inflight_hi %v", f.b.state, f.b.inflightHi)
	}
	// The flow settled meanwhile (as it would in the undo window's rounds) and a probe's feedback
	// is pending; then the other 19 prove spurious too: the response is taken back.
	f.b.state, f.b.steadySince, f.b.ackPhase = bbrProbeBWCruise, f.now, acksProbeFeedback
	spurious(19)
	if f.b.state != bbrStartup || !math.IsInf(f.b.inflightHi, 1) {
		t.Fatalf("20 spurious of 20 losses did not undo the response: state %v, inflight_hi %v", f.b.state, f.b.inflightHi)
	}
	if !f.b.steadySince.IsZero() || f.b.ackPhase != acksInit {
		t.Errorf("Startup re-entered with steady bookkeeping left over: steadySince %v, ack phase %v", f.b.steadySince, f.b.ackPhase)
	}
}

// ProbeRTT's samples measure the window it imposes (the draft marks the connection application-
// limited there): entered from Startup, they must not count as rounds without growth, or
// Startup ends inside ProbeRTT and its exit goes to CRUISE at a fraction of the path.
func TestBBRProbeRTTSamplesAreNoStartupPlateau(t *testing.T) {
	f := newEdgeFlow(10 * time.Millisecond)
	pk := 16
	for range 4 {
		f.round(pk, 0, f.rtt, false)
		pk *= 2
	}
	if f.b.state != bbrStartup || f.b.filledPipe {
		t.Fatalf("setup: state %v", f.b.state)
	}
	f.b.probeRTTStamp = f.now.Add(-6 * time.Second) // a Startup 5 s without a new min RTT
	f.round(pk, 0, 12*time.Millisecond, false)
	if f.b.state != bbrProbeRTT {
		t.Fatalf("setup: ProbeRTT not entered, state %v", f.b.state)
	}
	for f.b.state == bbrProbeRTT && f.now.Sub(t0) < 10*time.Second {
		f.round(4, 0, f.rtt, false) // ProbeRTT's window: a few packets a round
	}
	if f.b.state != bbrStartup || f.b.filledPipe {
		t.Errorf("ProbeRTT entered from Startup left to %v (filled pipe %v, rounds without growth %d)", f.b.state, f.b.filledPipe, f.b.fullBwCount)
	}
	// The first round after it still acknowledges ProbeRTT's flight: no plateau evidence either.
	f.round(4, 0, f.rtt, false)
	if f.b.fullBwCount != 0 {
		t.Errorf("a sample of ProbeRTT's flight counted as a round without growth (%d)", f.b.fullBwCount)
	}
}

// ProbeRTT settles the flow (its sends count as steady): entered from DOWN, its own losses must
// count as steady too, or its rounds teach the background a loss rate of zero whatever they lose.
func TestBBRProbeRTTFromDownSettles(t *testing.T) {
	f := newEdgeFlowInDown(16)
	f.b.probeRTTStamp = f.now.Add(-6 * time.Second)
	f.b.cwnd = 1000 * edgePkt // much in flight: DOWN does not reach CRUISE first
	f.b.OnPacketSent(f.now, 0, 1000*edgePkt)
	f.now = f.now.Add(11 * time.Millisecond)
	f.delivered += edgePkt
	f.b.OnDelivery(f.now, Delivery{Delivered: edgePkt, Interval: 11 * time.Millisecond, RTT: 11 * time.Millisecond,
		PriorDelivered: f.delivered, NewlyDelivered: edgePkt, NewlyAcked: edgePkt, TotalDelivered: f.delivered,
		InFlight: 999 * edgePkt, PriorInFlight: 1000 * edgePkt, PacketSize: edgePkt, TxInFlight: 1000 * edgePkt})
	if f.b.state != bbrProbeRTT {
		t.Fatalf("setup: state %v", f.b.state)
	}
	if f.b.steadySince.IsZero() {
		t.Fatal("ProbeRTT entered from DOWN left steadySince unset: its losses are never steady")
	}
}

// The ACK-aggregation filter is windowed by rounds: it ages at every round start, also when the
// round's ACK acknowledges nothing new (silence implied its packets already).
func TestBBRExtraAckedAgesEveryRound(t *testing.T) {
	for _, implied := range []bool{false, true} {
		f := newEdgeFlow(10 * time.Millisecond)
		for range 10 {
			f.round(20, 0, f.rtt, false)
		}
		f.now = f.now.Add(time.Millisecond)
		f.b.OnDelivery(f.now, Delivery{NewlyAcked: 200 * edgePkt, TotalDelivered: f.delivered, InFlight: edgePkt,
			PriorInFlight: 201 * edgePkt, PacketSize: edgePkt}) // one burst of 200 packets
		burst := f.b.extraAckedMax()
		f.now = f.now.Add(200 * time.Millisecond)
		for range 2 * bbrExtraAckedRounds {
			prior := f.delivered
			for range 20 {
				f.b.OnPacketSent(f.now, 0, edgePkt)
			}
			f.now = f.now.Add(f.rtt / 2)
			acked := int64(20 * edgePkt)
			if implied {
				f.b.OnDelivery(f.now, Delivery{NewlyAcked: acked, TotalDelivered: f.delivered, InFlight: edgePkt,
					PriorInFlight: 21 * edgePkt, PacketSize: edgePkt})
				acked = 0
			}
			f.now = f.now.Add(f.rtt / 2)
			f.delivered += 20 * edgePkt
			f.b.OnDelivery(f.now, Delivery{Delivered: 20 * edgePkt, Interval: f.rtt, RTT: f.rtt, PriorDelivered: prior,
				TxInFlight: 21 * edgePkt, NewlyDelivered: 20 * edgePkt, NewlyAcked: acked, TotalDelivered: f.delivered,
				InFlight: edgePkt, PriorInFlight: 21 * edgePkt, PacketSize: edgePkt})
		}
		if f.b.extraAckedMax() >= burst {
			t.Errorf("implied %v: extra_acked %.0f packets %d rounds after a %.0f-packet burst: never aged",
				implied, f.b.extraAckedMax()/edgePkt, 2*bbrExtraAckedRounds, burst/edgePkt)
		}
	}
}

// An application-limited start on a path losing 40 % must not teach the background that rate:
// a round judged excessive never does, even before a measuring sample allows the loss exit.
func TestBBRStartupExcessNeverTeachesTheBackground(t *testing.T) {
	f := newEdgeFlow(10 * time.Millisecond)
	for range 20 {
		f.round(20, 8, f.rtt, true)
	}
	if !f.b.background.excess(f.now, 300*edgePkt, 1000*edgePkt, edgePkt) {
		lost, total := f.b.background.sum(f.now)
		t.Errorf("after an application-limited Startup losing 40 %%, a round losing 30 %% is not congestion (background %.0f of %.0f packets lost)",
			lost/edgePkt, total/edgePkt)
	}
}

// A background of a few clean packets (one ProbeRTT round) must not blind the loss test: its own
// variance dominated the two-proportion test's, and a round losing 30 % of 1000 packets passed
// where an empty background flags it. Losing all that was sent is always excessive.
func TestBBRLossTestSmallBackground(t *testing.T) {
	var empty, tiny, enough lossWindow
	tiny.add(t0, 0, 4*edgePkt)
	enough.add(t0, 10*edgePkt, 1000*edgePkt) // 1 % random loss, well measured
	l, n := 300.0*edgePkt, 1000.0*edgePkt
	if !empty.excess(t0, l, n, edgePkt) || !tiny.excess(t0, l, n, edgePkt) || !enough.excess(t0, l, n, edgePkt) {
		t.Errorf("30 %% of 1000 lost, excessive: empty background %v, 4 clean packets %v, 1 %% of 1000 %v",
			empty.excess(t0, l, n, edgePkt), tiny.excess(t0, l, n, edgePkt), enough.excess(t0, l, n, edgePkt))
	}
	if enough.excess(t0, 20*edgePkt, 1000*edgePkt, edgePkt) {
		t.Error("2 % lost against a 1 % background judged excessive (the threshold is 2 % above it)")
	}
	if !tiny.excess(t0, 3*edgePkt, 2*edgePkt, edgePkt) || empty.excess(t0, edgePkt, edgePkt, edgePkt) {
		t.Errorf("more lost than sent (3 of 2) excessive %v (want true); one of one %v (want false: no evidence)",
			tiny.excess(t0, 3*edgePkt, 2*edgePkt, edgePkt), empty.excess(t0, edgePkt, edgePkt, edgePkt))
	}
}

// A NAK's losses belong to the states that sent them: nine packets DOWN sent and one CRUISE sent,
// declared lost together, count as one steady loss, not ten (which cut the lower bounds against
// the few packets CRUISE had sent).
func TestBBRMixedLossEventSplitAtSettling(t *testing.T) {
	f := newEdgeFlowInDown(20)
	f.round(20, 0, f.rtt, false) // DOWN → CRUISE: the flight is under the BDP
	if f.b.state != bbrProbeBWCruise {
		t.Fatalf("setup: state %v", f.b.state)
	}
	settled := f.b.steadySince
	for range 20 {
		f.b.OnPacketSent(f.now, 0, edgePkt)
	}
	f.now = f.now.Add(5 * time.Millisecond)
	f.lost += 10 * edgePkt
	before := f.b.roundLostSteady
	f.b.OnDelivery(f.now, Delivery{NewlyLost: 10 * edgePkt, LostSentFirst: settled.Add(-9 * time.Millisecond),
		LostSentLast: settled.Add(time.Millisecond), LostTxInFlight: 20 * edgePkt, TotalDelivered: f.delivered,
		TotalLost: f.lost, InFlight: 11 * edgePkt, PriorInFlight: 21 * edgePkt, PacketSize: edgePkt})
	if got := (f.b.roundLostSteady - before) / edgePkt; math.Abs(got-1) > 1e-9 {
		t.Errorf("%.2f of the 10 lost packets counted as steady; 1 left after the flow settled", got)
	}
	// Losses all sent since it settled count whole.
	before = f.b.roundLostSteady
	f.lost += 2 * edgePkt
	f.b.OnDelivery(f.now, Delivery{NewlyLost: 2 * edgePkt, LostSentFirst: settled.Add(time.Millisecond),
		LostSentLast: settled.Add(2 * time.Millisecond), LostTxInFlight: 20 * edgePkt, TotalDelivered: f.delivered,
		TotalLost: f.lost, InFlight: 9 * edgePkt, PriorInFlight: 11 * edgePkt, PacketSize: edgePkt})
	if got := (f.b.roundLostSteady - before) / edgePkt; got != 2 {
		t.Errorf("%.2f of 2 losses sent in CRUISE counted as steady", got)
	}
}

// The send quantum is 1 ms of the pacing rate above 24 Mbit/s, but never under the two packets of
// the tier below it: with 9000-byte datagrams 1 ms at 30 Mbit/s is 3750 bytes, under one packet.
func TestBBRSendQuantumFloor(t *testing.T) {
	b := NewBBR()
	b.Init(t0, Params{MSS: 9000, RTT: 10 * time.Millisecond})
	b.pacingRate = 30e6 / 8
	if q := b.sendQuantum(); q < 2*b.pkt {
		t.Errorf("send quantum %.0f bytes at 30 Mbit/s with %.0f-byte packets; want at least two packets", q, b.pkt)
	}
	b.pacingRate = 1e9 / 8
	if q := b.sendQuantum(); q != 64<<10 {
		t.Errorf("send quantum %.0f bytes at 1 Gbit/s; want the 64 KiB cap", q)
	}
}

// Startup → ProbeRTT → Startup: ProbeRTT's entry settles the flow (steadySince), and its return
// to Startup must unsettle it, or Startup's own overflow losses, declared in Drain, count as
// steady losses of a round that sent nothing steady and cut the lower bounds.
func TestBBRProbeRTTBackToStartupUnsettles(t *testing.T) {
	for _, viaProbeRTT := range []bool{false, true} {
		f := newEdgeFlow(10 * time.Millisecond)
		pk := 16
		for range 4 {
			f.round(pk, 0, f.rtt, false)
			pk *= 2
		}
		if viaProbeRTT {
			f.b.probeRTTStamp = f.now.Add(-6 * time.Second)
			f.round(pk, 0, 12*time.Millisecond, false)
			if f.b.state != bbrProbeRTT {
				t.Fatalf("setup: state %v", f.b.state)
			}
			for f.b.state == bbrProbeRTT && f.now.Sub(t0) < 10*time.Second {
				f.round(4, 0, f.rtt, false)
			}
			if f.b.state != bbrStartup {
				t.Fatalf("setup: ProbeRTT left to %v", f.b.state)
			}
			if !f.b.steadySince.IsZero() {
				t.Errorf("back in Startup after ProbeRTT with steadySince %v set (Startup sends nothing steady)", f.b.steadySince.Sub(t0))
			}
			f.round(4, 0, f.rtt, false) // past probeRTTMark
		}
		// A Startup flight overflows: 1000 packets at T, 30 declared lost with its first ACK
		// (Startup's loss exit to Drain, the flight still far above the BDP).
		T := f.now
		for range 1000 {
			f.b.OnPacketSent(T, 0, edgePkt)
		}
		prior := f.delivered
		f.now = T.Add(10 * time.Millisecond)
		f.delivered += 70 * edgePkt
		f.lost += 30 * edgePkt
		f.b.OnDelivery(f.now, Delivery{Delivered: 70 * edgePkt, Interval: 10 * time.Millisecond, RTT: 10 * time.Millisecond,
			PriorDelivered: prior, TxInFlight: 1000 * edgePkt, LostSinceSent: 30 * edgePkt,
			NewlyDelivered: 70 * edgePkt, NewlyAcked: 70 * edgePkt, NewlyLost: 30 * edgePkt,
			LostSentFirst: T, LostSentLast: T, LostTxInFlight: 1000 * edgePkt,
			TotalDelivered: f.delivered, TotalLost: f.lost, InFlight: 900 * edgePkt, PriorInFlight: 1000 * edgePkt,
			CwndLimited: true, PacketSize: edgePkt})
		if f.b.state != bbrDrain {
			t.Fatalf("via ProbeRTT %v: setup: state %v after the overflow, want Drain", viaProbeRTT, f.b.state)
		}
		// More of Startup's packets (sent at T) are declared lost during Drain.
		f.now = f.now.Add(time.Millisecond)
		f.lost += 20 * edgePkt
		f.b.OnDelivery(f.now, Delivery{NewlyLost: 20 * edgePkt, LostSentFirst: T, LostSentLast: T, LostTxInFlight: 1000 * edgePkt,
			TotalDelivered: f.delivered, TotalLost: f.lost, InFlight: 880 * edgePkt, PriorInFlight: 900 * edgePkt, PacketSize: edgePkt})
		// Drain sends a few and the next loss round ends.
		prior = f.delivered
		for range 10 {
			f.b.OnPacketSent(f.now, 0, edgePkt)
		}
		f.now = f.now.Add(10 * time.Millisecond)
		f.delivered += 10 * edgePkt
		f.b.OnDelivery(f.now, Delivery{Delivered: 10 * edgePkt, Interval: 10 * time.Millisecond, RTT: 10 * time.Millisecond,
			PriorDelivered: prior, TxInFlight: 890 * edgePkt, NewlyDelivered: 10 * edgePkt, NewlyAcked: 10 * edgePkt,
			TotalDelivered: f.delivered, TotalLost: f.lost, InFlight: 880 * edgePkt, PriorInFlight: 890 * edgePkt,
			CwndLimited: true, PacketSize: edgePkt})
		if !math.IsInf(f.b.bwLo, 1) || !math.IsInf(f.b.inflightLo, 1) {
			t.Errorf("via ProbeRTT %v: Startup's own overflow losses, declared in %v, cut the lower bounds as steady losses: bw_lo %.0f pkt/s, inflight_lo %.0f pkt",
				viaProbeRTT, f.b.state, f.b.bwLo/edgePkt, f.b.inflightLo/edgePkt)
		}
	}
}

// More clean background only sharpens the loss test (a pooled variance, dominated by 1/nb, made
// it blind at 50–100 clean packets), and a small lossy background is a background: 7 of 64 lost
// against 5 of 48 is the same rate, not congestion.
func TestBBRLossTestBackgroundSize(t *testing.T) {
	l, n := 150.0*edgePkt, 1000.0*edgePkt // 15 % of 1000 lost
	prev := true
	for _, nb := range []float64{0, 4, 49, 50, 60, 100, 200, 1000} {
		var w lossWindow
		if nb > 0 {
			w.add(t0, 0, nb*edgePkt)
		}
		got := w.excess(t0, l, n, edgePkt)
		if prev && !got {
			t.Errorf("15 %% of 1000 lost: excessive against a smaller clean background, not against %v clean packets", nb)
		}
		prev = got
	}
	var w lossWindow
	w.add(t0, 5*edgePkt, 48*edgePkt)
	if w.excess(t0, 7*edgePkt, 64*edgePkt, edgePkt) {
		t.Error("7 of 64 lost (10.9 %) against a background of 5 of 48 (10.4 %) judged excessive")
	}
}

// A round's losses shown spurious within the round do not arm undo: armed with the gross count,
// it needed more spurious packets than there were lost, and the response stood after all of the
// episode's losses proved spurious.
func TestBBRUndoNetOfTheRoundsSpurious(t *testing.T) {
	f := newEdgeFlow(10 * time.Millisecond)
	f.round(16, 0, f.rtt, false)
	f.round(32, 0, f.rtt, false)
	T := f.now
	for range 40 {
		f.b.OnPacketSent(T, 0, edgePkt)
	}
	// A NAK declares 20 lost (reordering); 10 of them prove spurious within the round.
	f.now = T.Add(5 * time.Millisecond)
	f.lost += 20 * edgePkt
	f.b.OnDelivery(f.now, Delivery{NewlyLost: 20 * edgePkt, LostSentFirst: T, LostSentLast: T, LostTxInFlight: 40 * edgePkt,
		TotalDelivered: f.delivered, TotalLost: f.lost, InFlight: 20 * edgePkt, PriorInFlight: 40 * edgePkt, PacketSize: edgePkt})
	f.now = f.now.Add(time.Millisecond)
	f.lost -= 10 * edgePkt
	f.b.OnDelivery(f.now, Delivery{Spurious: 10 * edgePkt, TotalDelivered: f.delivered, TotalLost: f.lost,
		InFlight: 20 * edgePkt, PriorInFlight: 20 * edgePkt, PacketSize: edgePkt})
	ref := f.now
	prior := f.delivered
	for range 5 {
		f.b.OnPacketSent(ref, 0, edgePkt)
	}
	// The round's end: everything delivered (the 20 "lost" too), no loss since the reference left.
	f.now = ref.Add(10 * time.Millisecond)
	f.delivered += 45 * edgePkt
	f.b.OnDelivery(f.now, Delivery{Delivered: 25 * edgePkt, Interval: 10 * time.Millisecond, RTT: 10 * time.Millisecond,
		PriorDelivered: prior, TxInFlight: 25 * edgePkt, NewlyDelivered: 25 * edgePkt, NewlyAcked: 25 * edgePkt,
		TotalDelivered: f.delivered, TotalLost: f.lost, InFlight: 0, PriorInFlight: 25 * edgePkt, CwndLimited: true, PacketSize: edgePkt})
	if f.b.state == bbrStartup {
		t.Fatalf("setup: Startup did not exit")
	}
	// The other 10 prove spurious: every loss of the episode was.
	f.now = f.now.Add(time.Millisecond)
	f.lost -= 10 * edgePkt
	f.b.OnDelivery(f.now, Delivery{Spurious: 10 * edgePkt, TotalDelivered: f.delivered, TotalLost: f.lost,
		InFlight: 0, PriorInFlight: 0, PacketSize: edgePkt})
	if f.b.state != bbrStartup {
		t.Errorf("all 20 losses proved spurious, the response stands: state %v, inflight_hi %.0f pkt (undo lost %d, spurious %d pkt)",
			f.b.state, f.b.inflightHi/edgePkt, f.b.undo.lost/edgePkt, f.b.undo.spurious/edgePkt)
	}
}
