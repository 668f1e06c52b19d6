package congestion

import (
	"math"
	"time"
)

// BBR's state machine (draft-ietf-ccwg-bbr-01 §4.3) and its congestion signals (§4.5.10).

// steadyState reports whether the last state change settled the flow (CRUISE or ProbeRTT).
func (b *BBR) steadyState() bool { return b.state == bbrProbeBWCruise || b.state == bbrProbeRTT }

func (s bbrState) probeBW() bool { return s >= bbrProbeBWDown && s <= bbrProbeBWUp }

// probing reports the states that send above the model on purpose (the draft's BBRIsProbingBW):
// their losses do not lower the short-term bounds and do not teach the background loss rate.
func (s bbrState) probing() bool {
	return s == bbrStartup || s == bbrProbeBWRefill || s == bbrProbeBWUp
}

func (b *BBR) enterStartup() {
	b.state = bbrStartup
	b.pacingGain, b.cwndGain = bbrStartupPacingGain, bbrStartupCwndGain
	b.steadySince = time.Time{} // a probing state: nothing Startup sends is steady
}

// checkFullBwReached detects a bandwidth plateau (draft §4.3.1.2): three rounds in which no
// sample grew by 25 %. A round that gave no valid sample at all is no evidence either way (on a
// lossy path every ACK of a round may follow a repaired hole, delivery.go), so it is not counted;
// TCP's per-segment ACKs always give the draft samples. A repair's sample is skipped as an
// application-limited one is: it may understate the path (Delivery.Repair), and counted it ended
// Startup at a tenth of a lossy path's rate; so is one of ProbeRTT's flight (probeRTTLimited),
// which measures ProbeRTT's window: ProbeRTT entered from Startup otherwise ended it.
func (b *BBR) checkFullBwReached(d Delivery, rate float64) {
	if b.fullBwNow || d.AppLimited || d.Repair || b.probeRTTLimited(d) {
		return
	}
	sampled := b.roundSampled
	if b.roundStart {
		b.roundSampled = rate > 0
	} else {
		b.roundSampled = b.roundSampled || rate > 0
	}
	if rate > 0 && rate >= b.fullBw*bbrFullBwThresh {
		b.resetFullBw()
		b.fullBw = rate
		return
	}
	if !b.roundStart || !sampled && rate <= 0 {
		return
	}
	b.fullBwCount++
	b.fullBwNow = b.fullBwCount >= bbrFullBwCount
	if b.fullBwNow {
		b.filledPipe = true
	}
}

func (b *BBR) resetFullBw() { b.fullBw, b.fullBwCount, b.fullBwNow = 0, 0, false }

// checkStartupDone leaves Startup once the pipe is full (draft §4.3.1.1).
func (b *BBR) checkStartupDone() {
	if b.state == bbrStartup && b.filledPipe {
		b.state = bbrDrain
		b.pacingGain, b.cwndGain = bbrDrainPacingGain, bbrStartupCwndGain
	}
}

// checkDrainDone enters ProbeBW once the queue Startup built has drained (draft §4.3.2).
func (b *BBR) checkDrainDone(now time.Time) {
	if b.state == bbrDrain && float64(b.inflight) <= b.inflightFor(b.bw, 1) {
		b.cwndGain = bbrDefaultCwndGain
		b.startProbeBWDown(now)
	}
}

// updateLatestSignals tracks the latest round's delivery (draft §4.5.10.3).
func (b *BBR) updateLatestSignals(d Delivery, rate float64) {
	b.lossRoundStart = false
	b.bwLatest = max(b.bwLatest, rate)
	b.inflightLatest = max(b.inflightLatest, float64(d.Delivered))
	if d.NewlyDelivered > 0 && d.PriorDelivered >= b.lossRoundDelivered {
		b.lossRoundDelivered = b.delivered
		b.lossRoundStart = true
	}
}

// advanceLatestSignals starts the next round's latest-delivery signals (draft §4.5.10.3).
func (b *BBR) advanceLatestSignals(d Delivery, rate float64) {
	if b.lossRoundStart {
		b.bwLatest = rate
		b.inflightLatest = float64(d.Delivered)
	}
}

// updateCongestionSignals feeds the max-bw filter and, at the end of each loss round, judges the
// round (draft §4.5.10.2 with BBR's background test): in Startup a congested round fills the
// pipe (§4.3.1.3); later, a round whose steady-state losses are congestion lowers the short-term
// bounds. Losses belong to the state that sent the lost packets: those sent before the flow last
// settled into CRUISE (or ProbeRTT) were sent by a probe or met the queue it built (Drain and
// DOWN exist to empty it), and only bound the flight through inflight_hi.
func (b *BBR) updateCongestionSignals(now time.Time, d Delivery, rate float64) {
	b.updateMaxBw(d, rate)
	if b.state == bbrStartup && !b.filledPipe && b.bwMeasured && b.inflightTooHigh(now, d) {
		// Linux BBRv3's per-ACK check in Startup: a shallow buffer overflows long before the
		// bandwidth plateau shows. Either loss exit takes the max-bw filter for the pipe's
		// bandwidth, so it waits for a sample that measured the path (the draft's plateau test,
		// §4.3.1.2, skips application-limited samples for the same reason): a connection whose
		// only sample was its first small write's, overloaded from its first flight, left
		// Startup pacing at 2 KB/s and took minutes to recover (TestBulkManyOneListener/bbr).
		b.undo.arm(b, max(d.LostSinceSent, d.NewlyLost))
		b.filledPipe = true
		b.inflightHi = max(float64(d.TxInFlight), float64(d.LostTxInFlight), bbrBeta*b.targetInflight())
	}
	if d.RTT > 0 && (b.roundMinRTT == 0 || d.RTT < b.roundMinRTT) {
		b.roundMinRTT = d.RTT
	}
	if d.RTT > 0 && !d.RTTHeld {
		if b.roundSamples == 0 || d.RTT < b.roundLowRTT {
			b.roundLowRTT = d.RTT
		}
		b.roundHighRTT = max(b.roundHighRTT, d.RTT)
		b.roundSamples++
	}
	lost := float64(d.NewlyLost)
	b.probeLostTx = max(b.probeLostTx, float64(d.LostTxInFlight))
	b.roundLost += lost
	if d.NewlyLost > 0 && !b.steadySince.IsZero() && !d.LostSentLast.Before(b.steadySince) {
		b.roundLostSteady += max(lost*b.sentSinceSteady(d), min(lost, b.pkt)) // the last lost packet left since
	}
	b.roundOK += float64(d.NewlyDelivered)
	b.roundSpurious += float64(max(d.Spurious, 0))
	if !b.lossRoundStart {
		return
	}
	// The round's losses are of the flight sent during the previous round (their NAKs take a
	// round trip): that flight is the denominator. Deliveries are no measure of it, since UDT's
	// cumulative ACK holds them back while a hole is open.
	all, steady := b.roundLost, b.roundLostSteady
	sent, sentSteady := max(b.prevSent, all), max(b.prevSentSteady, steady)
	b.prevSent, b.prevSentSteady = b.roundSent, b.roundSentSteady
	spurious := b.roundSpurious // losses of the round already shown spurious: undo needs the rest (arm)
	b.roundLost, b.roundLostSteady, b.roundOK, b.roundSent, b.roundSentSteady, b.roundSpurious = 0, 0, 0, 0, 0, 0
	// Only a round that saw the queue nearly empty teaches the background: its best RTT sample
	// within BBR's own probing excess (0.25·min RTT, the 1.25 probe gain) plus 1 ms of timer
	// granularity. A round that only saw a standing queue may have lost packets to its overflow
	// (other flows filling it), and those must stay congestion, not become the background.
	quiet := b.roundMinRTT > 0 && b.minRTT > 0 && b.roundMinRTT <= b.minRTT+b.minRTT/4+time.Millisecond
	b.noteRTTSpread()
	if b.state == bbrStartup {
		// Startup's rounds teach the background when quiet (no queue yet, so their losses are
		// not its overflow): on a path losing a few percent at random, the test must know that
		// rate before a round large enough to tell 3 % from the 2 % threshold ends Startup. A
		// round judged excessive never does, whether or not a measuring sample allows the exit
		// yet: an application-limited start on a lossy path would otherwise teach its losses.
		excess := b.background.excess(now, all, sent, b.pkt)
		if b.bwMeasured && excess {
			b.undo.arm(b, int64(max(all-spurious, 0)))
			b.filledPipe = true
			b.inflightHi = max(b.bdp(b.maxBandwidth(), 1), b.inflightLatest)
		} else if !excess && (quiet || b.minRTT <= 0) {
			b.background.add(now, all, sent)
		}
		return
	}
	congested := b.background.excess(now, steady, sentSteady, b.pkt)
	if !congested && quiet && (b.state == bbrProbeBWCruise || b.state == bbrProbeRTT) {
		b.background.add(now, steady, sentSteady)
	}
	if !congested || b.state.probing() {
		return
	}
	// BBRInitLowerBounds and BBRLossLowerBounds.
	b.undo.arm(b, int64(max(steady-spurious, 0)))
	if math.IsInf(b.bwLo, 1) {
		b.bwLo = b.maxBandwidth()
	}
	if math.IsInf(b.inflightLo, 1) {
		b.inflightLo = b.cwnd
	}
	b.bwLo = max(b.bwLatest, bbrBeta*b.bwLo)
	b.inflightLo = max(b.inflightLatest, bbrBeta*b.inflightLo)
}

// sentSinceSteady is the share of the event's losses that left since the flow settled
// (steadySince), whose last lost packet did: all of them, unless the first left before, when the
// lost packets, a paced sender's, are taken as spread evenly over their departures (a NAK's range
// straddling DOWN's end counted whole as CRUISE's, against the few packets CRUISE had sent, and
// cut the lower bounds). Losses in separate ranges, an old hole's and a fresh one's, are not so
// spread: the share is an estimate, and the caller counts at least the last packet.
func (b *BBR) sentSinceSteady(d Delivery) float64 {
	first, last := d.LostSentFirst, d.LostSentLast
	if first.IsZero() || !first.Before(b.steadySince) || !last.After(first) {
		return 1
	}
	return float64(last.Sub(b.steadySince)) / float64(last.Sub(first))
}

func (b *BBR) resetLowerBounds() { b.bwLo, b.inflightLo = math.Inf(1), math.Inf(1) }

func (b *BBR) resetCongestionSignals() { b.bwLatest, b.inflightLatest = 0, 0 }

// inflightTooHigh is the draft's IsInflightTooHigh (§4.5.10.2) with the background test: the
// losses declared since the sample's packet left are an excessive share of the flight it left in.
func (b *BBR) inflightTooHigh(now time.Time, d Delivery) bool {
	return d.TxInFlight > 0 && b.background.excess(now, float64(d.LostSinceSent), float64(d.TxInFlight), b.pkt)
}

// updateProbeBWCyclePhase runs ProbeBW (draft §4.3.3.6).
func (b *BBR) updateProbeBWCyclePhase(now time.Time, d Delivery, rate float64) {
	if !b.filledPipe {
		return
	}
	if b.adaptUpperBounds(now, d, rate) || !b.state.probeBW() {
		return
	}
	switch b.state {
	case bbrProbeBWDown:
		if b.checkTimeToProbeBW(now) {
			return
		}
		if b.checkTimeToCruise() {
			b.state, b.pacingGain = bbrProbeBWCruise, 1
			b.steadySince = now
		}
	case bbrProbeBWCruise:
		b.checkTimeToProbeBW(now)
	case bbrProbeBWRefill:
		if b.roundStart {
			b.bwProbeSamples = true
			b.startProbeBWUp(now, rate)
		}
	case bbrProbeBWUp:
		if b.roundStart {
			b.upRounds++
		}
		// After a probe that found loss beyond inflight_hi, stop at it this time and let the
		// ACKs show whether it is still safe (Linux BBRv3 and Chromium's BBR2: a stopped risky
		// probe).
		done := b.prevProbeTooHigh && float64(b.inflight) >= b.inflightHi
		if done {
			b.stoppedRiskyProbe = true
		} else {
			done = b.checkTimeToGoDown(d, rate)
		}
		if done {
			b.prevProbeTooHigh = false
			b.startProbeBWDown(now)
		}
	}
}

// adaptUpperBounds maintains inflight_hi from the probe's feedback (draft §4.5.10.2) and reports
// whether it started a new probe.
func (b *BBR) adaptUpperBounds(now time.Time, d Delivery, rate float64) bool {
	if b.ackPhase == acksProbeStarting && b.roundStart {
		b.ackPhase = acksProbeFeedback // the probe's own packets are being acknowledged now
	}
	if b.ackPhase == acksProbeStopping && b.roundStart {
		b.bwProbeSamples = false
		b.ackPhase = acksInit
		if b.state.probeBW() && !d.AppLimited {
			b.advanceMaxBwFilter()
		}
		if b.state.probeBW() && b.stoppedRiskyProbe && !b.prevProbeTooHigh {
			// The stopped probe's ACKs are all in and none was too lossy: inflight_hi held,
			// so probe again at once, holding at it for a round before passing it (Linux BBRv3,
			// bbr_adapt_upper_bounds).
			b.startProbeBWRefill()
			return true
		}
	}
	if b.bwProbeSamples && b.inflightTooHigh(now, d) {
		b.undo.arm(b, max(d.LostSinceSent, d.NewlyLost))
		b.prevProbeTooHigh = true
		b.bwProbeSamples = false
		if !d.AppLimited {
			b.inflightHi = max(float64(d.TxInFlight), b.probeLostTx, bbrBeta*b.targetInflight())
		}
		if b.state == bbrProbeBWUp {
			b.startProbeBWDown(now)
		}
		return false
	}
	if math.IsInf(b.inflightHi, 1) {
		return false
	}
	// Departure from the draft (its CheckInflightTooHigh raises inflight_hi only from samples
	// whose flight lost at most the threshold): any sample's flight raises it here. After a probe
	// overflowed, the next round's samples all carry its losses in LostSinceSent; gated, inflight_hi
	// stayed at the flight the first lossy sample left in, and CRUISE's 15 % headroom below it
	// was under the BDP on a buffer of a tenth of one (simulation, two runs of the 80 cells at 100
	// and 300 ms · 0.1 BDP, 2026-12-06: utilisation 89.6 % against 94.3 % ungated, retransmitted 0.63
	// against 1.24 % above the random loss). The ungated rule trades that share of loss for
	// the link; at 1 and 4 BDP the two were within 0.3 points of utilisation.
	if float64(d.TxInFlight) > b.inflightHi {
		b.inflightHi = float64(d.TxInFlight)
	}
	if b.state == bbrProbeBWUp {
		b.probeInflightHiUpward(d)
	}
	return false
}

// targetInflight is BBRTargetInflight: min(BDP, cwnd), with the BDP quantised as Linux BBRv3's
// bbr_target_inflight does (bbr_inflight at gain 1: at least three send quanta and the minimum
// pipe), where the draft takes the bare BDP. The difference shows on short paths: at 100 Mbit/s
// and 0.14 ms the bare BDP is 1.2 packets, so the Reno-coexistence rule (checkTimeToProbeBW)
// probed every other round and a testbed flow spent 69 % of its time in UP (9 % with the
// quantised target, 26 packets: the rounds a Reno flow with that window takes to regrow).
func (b *BBR) targetInflight() float64 { return min(b.inflightFor(b.bw, 1), b.cwnd) }

// probeInflightHiUpward grows inflight_hi while the probe is window-limited (draft §4.3.3.6):
// by a packet per probe_up_cnt bytes acknowledged, the step doubling every round.
func (b *BBR) probeInflightHiUpward(d Delivery) {
	if !b.cwndLimited || b.cwnd < b.inflightHi {
		return
	}
	b.probeUpAcked += float64(d.NewlyAcked)
	if b.probeUpAcked >= b.probeUpCnt {
		delta := math.Floor(b.probeUpAcked / b.probeUpCnt)
		b.probeUpAcked -= delta * b.probeUpCnt
		b.inflightHi += delta * b.pkt
	}
	if b.roundStart {
		b.raiseInflightHiSlope()
	}
}

// raiseInflightHiSlope doubles the growth of inflight_hi each probing round (draft §4.3.3.6).
func (b *BBR) raiseInflightHiSlope() {
	growth := b.pkt * math.Ldexp(1, b.probeUpRounds)
	b.probeUpRounds = min(b.probeUpRounds+1, 30)
	b.probeUpCnt = max(b.cwnd/growth, 1) * b.pkt
}

// checkTimeToProbeBW starts a probe after the randomised wait or the Reno-coexistence rounds
// (draft §4.3.3.5).
func (b *BBR) checkTimeToProbeBW(now time.Time) bool {
	renoRounds := min(int(b.targetInflight()/b.pkt), bbrRenoRoundsMax)
	if now.Sub(b.cycleStamp) > b.bwProbeWait || b.roundsSinceBwProbe >= renoRounds {
		b.startProbeBWRefill()
		return true
	}
	return false
}

// checkTimeToCruise: DOWN has drained the flight to the BDP (draft §4.3.3.6).
func (b *BBR) checkTimeToCruise() bool {
	inflight := float64(b.inflight)
	if inflight > b.inflightWithHeadroom() {
		return false
	}
	return inflight <= b.inflightFor(b.maxBandwidth(), 1)
}

// checkTimeToGoDown ends UP once the bandwidth stopped growing or the window reached inflight_hi
// (draft §4.3.3.6), or once, a round into UP, the path shows a queue (probeQueued).
func (b *BBR) checkTimeToGoDown(d Delivery, rate float64) bool {
	if b.cwndLimited && b.cwnd >= b.inflightHi {
		b.resetFullBw()
		b.fullBw = rate
		return false
	}
	return b.probeQueued(d) || b.fullBwNow
}

// probeQueued reports that UP, a round in, meets a queue as deep as its own excess: an RTT sample
// 0.25·min RTT above the minimum (pacing at 1.25 for a round queues 0.25 BDP, 0.25·min RTT of
// delay, once the link is full), beyond the samples' own noise (rttNoise; until a steady round has
// measured it, the ACK-aggregation allowance, extra_acked at the model's bandwidth, draft §4.5.4)
// and 1 ms of timer granularity. A sample a hole held back (Delivery.RTTHeld) is no evidence. It is
// Chromium's BBR2 exit from PROBE_UP (Bbr2ProbeBwMode::UpdateProbeUp: bytes in flight of at least
// 1.25 BDP a round into the phase) read from the delay, which UDT's cumulative ACK leaves unbiased,
// where the flight it holds back behind a hole is not: in that form the exit cut probes short on
// lossy paths (testbed 100 Mbit/s · 100 ms · 1 %, two A B pairs: 90.0 and 89.9 Mbit/s against 91.0
// and 90.8). The draft's plateau alone keeps UP for three rounds without 25 % growth: 0.75 BDP of
// queue, which overflowed a one-BDP buffer every cycle and drove a CUBIC flow sharing it down to
// 8–19 % of the link (TestSimTwoFlows/cubic-*).
func (b *BBR) probeQueued(d Delivery) bool {
	if b.upRounds == 0 || d.RTT <= 0 || d.RTTHeld || b.minRTT <= 0 || b.bw <= 0 {
		return false
	}
	noise, ok := b.rttNoise()
	if !ok {
		noise = time.Duration(b.extraAckedMax() / b.bw * float64(time.Second))
	}
	return d.RTT > b.minRTT+b.minRTT/4+noise+time.Millisecond
}

func (b *BBR) startProbeBWDown(now time.Time) {
	b.resetCongestionSignals()
	b.probeUpCnt = math.Inf(1)
	b.roundsSinceBwProbe = b.rng.IntN(2)
	b.bwProbeWait = bbrProbeWaitBase + time.Duration(b.rng.Int64N(int64(bbrProbeWaitRand)))
	b.cycleStamp = now
	b.ackPhase = acksProbeStopping
	b.startRound()
	b.state, b.pacingGain, b.cwndGain = bbrProbeBWDown, bbrProbeDownGain, bbrDefaultCwndGain
}

func (b *BBR) startProbeBWRefill() {
	b.steadySince = time.Time{}
	b.stoppedRiskyProbe = false
	b.probeLostTx = 0
	b.resetLowerBounds()
	b.probeUpRounds, b.probeUpAcked = 0, 0
	b.ackPhase = acksRefilling
	b.startRound()
	b.state, b.pacingGain, b.cwndGain = bbrProbeBWRefill, 1, bbrDefaultCwndGain
}

func (b *BBR) startProbeBWUp(now time.Time, rate float64) {
	b.upRounds = 0
	b.ackPhase = acksProbeStarting
	b.startRound()
	b.resetFullBw()
	b.fullBw = rate
	b.cycleStamp = now
	b.state, b.pacingGain, b.cwndGain = bbrProbeBWUp, bbrProbeUpPacingGain, bbrProbeUpCwndGain
	b.raiseInflightHiSlope()
}

// updateMinRTT keeps RTprop (10 s window) and ProbeRTT's 5 s minimum (draft §4.5.3).
func (b *BBR) updateMinRTT(now time.Time, rtt time.Duration) {
	b.probeRTTExpire = now.Sub(b.probeRTTStamp) > bbrProbeRTTInterval
	if rtt > 0 && (b.probeRTTMin < 0 || rtt < b.probeRTTMin || b.probeRTTExpire) {
		b.probeRTTMin, b.probeRTTStamp = rtt, now
	}
	if b.probeRTTMin > 0 && (b.minRTT < 0 || b.probeRTTMin < b.minRTT || now.Sub(b.minRTTStamp) > bbrMinRTTFilterLen) {
		b.minRTT, b.minRTTStamp = b.probeRTTMin, b.probeRTTStamp
	}
}

// checkProbeRTT enters, runs and leaves ProbeRTT (draft §4.3.4).
func (b *BBR) checkProbeRTT(now time.Time, d Delivery) {
	if b.state != bbrProbeRTT && b.probeRTTExpire && !b.idleRestart && b.minRTT > 0 {
		b.priorCwnd = b.saveCwnd()
		if !b.steadyState() {
			b.steadySince = now // ProbeRTT settles the flow (steadyState): its own sends and losses are steady
		}
		b.state, b.pacingGain, b.cwndGain = bbrProbeRTT, 1, bbrProbeRTTCwndGain
		b.probeRTTDone = time.Time{}
		b.ackPhase = acksProbeStopping
		b.startRound()
	}
	if b.state == bbrProbeRTT {
		b.probeRTTMark = max(b.probeRTTMark, b.delivered+b.inflight)
		b.handleProbeRTT(now)
	}
	if d.NewlyDelivered > 0 {
		b.idleRestart = false
	}
}

func (b *BBR) handleProbeRTT(now time.Time) {
	if b.probeRTTDone.IsZero() {
		if float64(b.inflight) <= b.probeRTTCwnd() {
			b.probeRTTDone = now.Add(bbrProbeRTTDuration)
			b.probeRTTRoundDone = false
			b.startRound()
		}
		return
	}
	if b.roundStart {
		b.probeRTTRoundDone = true
	}
	if b.probeRTTRoundDone {
		b.checkProbeRTTDone(now)
	}
}

func (b *BBR) checkProbeRTTDone(now time.Time) {
	if b.probeRTTDone.IsZero() || !now.After(b.probeRTTDone) {
		return
	}
	b.probeRTTStamp = now
	b.cwnd = max(b.cwnd, b.priorCwnd)
	b.resetLowerBounds()
	if b.filledPipe {
		b.startProbeBWDown(now)
		b.state, b.pacingGain = bbrProbeBWCruise, 1
		b.steadySince = now
	} else {
		b.enterStartup()
	}
}

// noteRTTSpread ends the loss round's RTT samples: the spread of a steady round's samples feeds
// rttNoise. A round's samples are of packets sent during the round before it, so the round counts
// only when it and the two before it all ended in CRUISE: then every sample's packet left at the
// cruising rate, into a queue that neither grows nor drains (pacing at 0.99 of the bandwidth).
func (b *BBR) noteRTTSpread() {
	if b.state == bbrProbeBWCruise {
		b.cruiseRounds++
	} else {
		b.cruiseRounds = 0
	}
	if b.cruiseRounds >= 3 && b.roundSamples >= bbrRTTSpreadSamples {
		e := &b.rttSpread[b.rttSpreadN%bbrRTTSpreadRounds]
		e.round, e.spread = b.roundCount, b.roundHighRTT-b.roundLowRTT
		b.rttSpreadN++
	}
	b.roundMinRTT, b.roundLowRTT, b.roundHighRTT, b.roundSamples = 0, 0, 0, 0
}

// rttNoise is how far above the path's delay an RTT sample reads without a queue changing, and
// whether it has been measured: the largest spread of the samples within one steady round, over
// the steady rounds of the last bbrRTTSpreadRounds rounds (the draft's window for the
// ACK-aggregation filter, §4.5.4). Within a steady round the queue is constant, so its samples
// differ only by what the measurement adds: the receiver's ACK timer (it holds data up to 1.25
// ACK periods, min(SYN, max(RTT/4, 1 ms)), when the sender pauses), ACKs or data released in
// batches (an aggregating link, a coarse-timer relay), jitter, a host's scheduling delays.
// Samples a hole held back are left out (Delivery.RTTHeld). The largest spread, not a typical
// one, is the margin, so that a probe ends on a queue and not on noise the path has already
// shown; a round of a few samples under-reads its noise, and the window's other rounds make up
// for it. extra_acked, the same batching measured as a volume of data, was this margin before:
// but it also grows with every repaired hole, since UDT's cumulative ACK then reports a round
// trip of arrivals at once, so as a delay (extra_acked / bw) it read 0.4–1.4 round trips on a
// path losing 1 % (simulation, 100 Mbit/s · 100 ms) and 6–8 ms on a 3.2 ms one at 10 Mbit/s,
// where a 4-BDP queue (8 ms) overflowed before UP could see it.
func (b *BBR) rttNoise() (time.Duration, bool) {
	var m time.Duration
	ok := false
	for i := range min(b.rttSpreadN, bbrRTTSpreadRounds) {
		if e := b.rttSpread[i]; b.roundCount-e.round < bbrRTTSpreadRounds {
			m, ok = max(m, e.spread), true
		}
	}
	return m, ok
}
