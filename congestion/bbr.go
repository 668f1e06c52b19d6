package congestion

import (
	"math"
	"math/rand/v2"
	"time"
)

// BBR is udt's default controller: a model-based one in the manner of BBR version 3
// (draft-ietf-ccwg-bbr-01, "the draft" below, with Linux net/ipv4/tcp_bbr.c for BBRv1's model),
// driven by the sender's own delivery-rate samples (Delivery; draft-cheng-iccrg-delivery-rate-
// estimation) and never by the receiver's arrival-speed or packet-pair fields (spec §6), which
// shapers and batching relays fool.
//
// The model (draft §2, §4.5): BtlBw = the windowed maximum of delivered/interval over the last two
// bandwidth-probing cycles; RTprop (min RTT) = the windowed minimum RTT over 10 s. The sender paces
// at pacing_gain·BtlBw·(1 − 1 %) and keeps at most cwnd_gain·BtlBw·RTprop + the ACK-aggregation
// allowance in flight, bounded by what loss has shown the path holds (inflight_hi, inflight_lo).
//
// States (draft §4.3): Startup (pacing gain 2.77 = 4·ln 2, cwnd gain 2) doubles the rate each
// round trip until the bandwidth stops growing by 25 % for three rounds or the loss test below
// fires; Drain (pacing gain 0.35 ≈ 1/2.885) empties the queue Startup made; ProbeBW cycles DOWN
// (0.9, until in flight ≤ BDP), CRUISE (1.0), REFILL (1.0, one round), UP (1.25, cwnd gain 2.25,
// until the bandwidth stops growing or, a round in, the RTT shows a queue: Chromium's BBR2)
// with a probe every 2–3 s (randomised) or every min(quantised BDP in packets, 63) rounds,
// whichever comes first (Reno coexistence); a probe that follows one that found excessive loss stops at
// inflight_hi, and passes it only in a new probe once its ACKs showed no excessive loss (Linux
// BBRv3's and Chromium BBR2's stopped risky probe); ProbeRTT (every 5 s without a new minimum:
// in flight ≤ BDP/2 for 200 ms and one round) refreshes RTprop.
//
// Departures from the draft in the algorithm: UP also ends on a queue (above; probeQueued);
// inflight_hi is set from the largest flight a lost packet left in as well as the sample's, and
// raised by any sample's flight, not only by one within the loss threshold (adaptUpperBounds gives
// the measurement); and loss is congestion only when it exceeds the path's background loss rate.
// The draft takes any loss in a round for congestion (its bw_lo/inflight_lo cut by β = 0.7 per
// lossy round) and a loss rate above 2 % in a probe for the path's limit (inflight_hi). Random loss
// on a long path (radio, a dirty fibre, a policer's neighbours) is independent of what this flow
// sends, so BBR here keeps an estimate of it — the loss rate of the rounds in the last 10 s (the
// RTprop window: the path is taken as stationary over it) that were not probing and not judged
// congested — and judges a round, or a probe's flight, congested when its loss rate exceeds that
// background by more than the draft's BBRLossThresh (2 %) at three standard errors (a one-sided
// two-proportion z-test against that margin, unpooled; 3σ ≈ 0.13 % false alarms per judgement). A
// queue that overflows loses a large share of what is sent beyond its size (20 % of an UP round's
// excess at gain 1.25, 64 % in Startup), so real overflow still bounds the flight within a round or
// two, while random loss of a few percent does not shrink it.
//
// Adaptations to UDT, not changes of the algorithm: UDT4's initial window of 16 packets (spec
// §5.2) instead of TCP's 10; the first pacing rate uses the handshake's RTT (Params.RTT) as the
// draft's BBRInitPacingRate uses the SYN exchange's SRTT, or 1 ms without one, as the draft does;
// a retransmission timeout saves the window and lets one packet beyond the flight out until ACKs
// return (the draft's §4.6.4.4), since UDT's EXP re-sends the flight itself.
//
// The controller only computes; BBR reads no clock. Windows are in bytes of datagram (MSS − 28);
// State reports packets.
type BBR struct {
	rng *rand.Rand
	pkt float64 // bytes of a full data packet (MSS − 28)

	state      bbrState
	pacingGain float64
	cwndGain   float64
	pacingRate float64 // bytes/s
	cwnd       float64 // bytes
	priorCwnd  float64 // saved by ProbeRTT and RTO
	inRTO      bool    // a retransmission timeout holds the window at the flight until ACKs return

	// Model (draft §4.5).
	maxBw          [2]float64 // max delivery rate in the previous and the current probe cycle, bytes/s
	bw             float64    // min(max bw, bw_lo): the model's bandwidth
	bwLo, bwLatest float64    // short-term bound from congestion, and the latest round's max
	inflightHi     float64    // long-term bound on bytes in flight from congestion (∞ if none)
	inflightLo     float64    // short-term bound (∞ if none)
	inflightLatest float64    // the latest round's max delivered per sample
	minRTT         time.Duration
	minRTTStamp    time.Time
	probeRTTMin    time.Duration // min RTT over the last 5 s (ProbeRTT's window)
	probeRTTStamp  time.Time
	probeRTTExpire bool
	probeRTTMark   int64 // C.delivered + inflight at ProbeRTT's latest event (probeRTTLimited)

	// Round trips (draft §4.5.1), counted by delivered bytes.
	delivered          int64
	inflight           int64 // bytes in flight as last reported, plus sends since
	nextRoundDelivered int64
	roundStart         bool
	roundCount         uint64
	lossRoundDelivered int64
	lossRoundStart     bool
	roundLost, roundOK float64 // bytes lost and delivered in the current loss round
	roundSpurious      float64 // bytes the current loss round showed spurious
	roundLostSteady    float64 // … lost of packets sent since steadySince
	roundSent          float64 // bytes sent in the current loss round
	roundSentSteady    float64 // … of them while steady
	prevSent           float64 // bytes sent in the previous loss round: the flight being judged
	prevSentSteady     float64
	steadySince        time.Time // when the flow last settled into CRUISE or ProbeRTT (zero: not since Startup)
	background         lossWindow
	roundMinRTT        time.Duration // the smallest RTT sample of the current loss round

	// Startup (draft §4.3.1).
	filledPipe   bool
	bwMeasured   bool // a sample not application-limited reached the max-bw filter (Startup's loss exits wait for one)
	fullBw       float64
	fullBwCount  int
	fullBwNow    bool
	roundSampled bool // the current round gave a valid delivery-rate sample

	// ProbeBW (draft §4.3.3).
	cycleStamp         time.Time
	bwProbeWait        time.Duration
	roundsSinceBwProbe int
	probeUpCnt         float64 // bytes acked per byte of inflight_hi growth
	probeUpAcked       float64
	probeUpRounds      int
	upRounds           int // rounds completed in the current UP
	bwProbeSamples     bool
	ackPhase           bbrACKPhase
	cwndLimited        bool
	probeLostTx        float64 // the largest flight a packet declared lost since the probe began left in
	prevProbeTooHigh   bool    // the last probe ended on excessive loss (Linux BBRv3 prev_probe_too_high)
	stoppedRiskyProbe  bool    // the last probe stopped at inflight_hi instead of passing it

	// ProbeRTT (draft §4.3.4).
	probeRTTDone      time.Time
	probeRTTRoundDone bool
	idleRestart       bool

	// Undo (RFC 3522, Linux's tcp_try_undo_recovery): a loss response is taken back once every
	// loss since it has proven spurious (reordering, not loss).
	undo undoState

	// ACK aggregation (draft §4.5.4): UDT acknowledges every 10 ms (SYN) and every 64 packets.
	extraAcked      [bbrExtraAckedRounds]float64
	extraAckedRound uint64
	extraStart      time.Time
	extraDelivered  float64

	// RTT noise: the spread of the RTT samples in steady rounds (see rttNoise).
	roundLowRTT  time.Duration // the smallest and largest RTT sample of the current loss round
	roundHighRTT time.Duration // that no hole held back (Delivery.RTTHeld)
	roundSamples int           // such samples in the current loss round
	cruiseRounds int           // consecutive loss rounds that ended in CRUISE
	rttSpread    [bbrRTTSpreadRounds]struct {
		round  uint64 // roundCount when recorded
		spread time.Duration
	}
	rttSpreadN uint64 // spreads recorded
}

type bbrState uint8

const (
	bbrStartup bbrState = iota
	bbrDrain
	bbrProbeBWDown
	bbrProbeBWCruise
	bbrProbeBWRefill
	bbrProbeBWUp
	bbrProbeRTT
)

var bbrStateNames = [...]string{"Startup", "Drain", "ProbeBW_DOWN", "ProbeBW_CRUISE", "ProbeBW_REFILL", "ProbeBW_UP", "ProbeRTT"}

func (s bbrState) String() string { return bbrStateNames[s] }

type bbrACKPhase uint8

const (
	acksInit bbrACKPhase = iota
	acksRefilling
	acksProbeStarting
	acksProbeFeedback
	acksProbeStopping
)

// The draft's constants (§2.6 and the sections cited), unchanged.
const (
	bbrStartupPacingGain  = 2.77 // 4·ln 2: doubles the delivery rate each round (§4.3.1)
	bbrStartupCwndGain    = 2.0
	bbrDrainPacingGain    = 0.35 // ≈ 1/2.885: drains Startup's queue within a round (§4.3.2)
	bbrDefaultCwndGain    = 2.0  // tolerates delayed and stretched ACKs (§4.6.4.2)
	bbrProbeUpCwndGain    = 2.25 // (§4.3.3.6)
	bbrProbeUpPacingGain  = 1.25
	bbrProbeDownGain      = 0.9
	bbrPacingMargin       = 0.01 // pace 1 % below the estimate so a queue cannot build (§4.6.2)
	bbrFullBwThresh       = 1.25 // Startup: growth that counts as still growing
	bbrFullBwCount        = 3    // rounds without such growth that fill the pipe
	bbrLossThresh         = 0.02 // loss rate (beyond the background, see BBR) a probe tolerates
	bbrBeta               = 0.7  // multiplicative cut of the lower bounds on congestion
	bbrHeadroom           = 0.15 // share of inflight_hi left for other flows while cruising
	bbrMinPipePackets     = 4    // the smallest window that keeps ACKs flowing (§4.6.4.1)
	bbrProbeRTTCwndGain   = 0.5
	bbrProbeRTTDuration   = 200 * time.Millisecond
	bbrProbeRTTInterval   = 5 * time.Second
	bbrMinRTTFilterLen    = 10 * time.Second
	bbrExtraAckedRounds   = 10                  // the aggregation filter's window in rounds (§4.5.4)
	bbrRTTSpreadRounds    = bbrExtraAckedRounds // rttNoise's window in rounds, as the aggregation filter's
	bbrRTTSpreadSamples   = 4                   // the receiver's ACKs per round on a short path (a quarter-RTT period)
	bbrRenoRoundsMax      = 63
	bbrProbeWaitBase      = 2 * time.Second
	bbrProbeWaitRand      = time.Second
	bbrInitialCwndPackets = 16 // UDT4's initial window (spec §5.2), where TCP has 10
	bbrNominalRTT         = time.Millisecond
	bbrLossSigma          = 3.0 // the loss test's confidence: three standard errors (see BBR)
)

// Packet sizes BBR accepts (Params.MSS − 28, Delivery.PacketSize): UDT's smallest MSS (76) and
// the largest UDP datagram; anything else is hostile or a bug and is ignored.
const (
	minPacketSize = 48
	maxPacketSize = 65507
)

// BBROption configures a BBR controller.
type BBROption func(*BBR)

// WithBBRRandSource sets the source of the randomised probe timing (default: math/rand/v2's
// randomly seeded generator). Tests pass a seeded one.
func WithBBRRandSource(src rand.Source) BBROption {
	return func(b *BBR) { b.rng = rand.New(src) }
}

// NewBBR returns a BBR controller.
func NewBBR(opts ...BBROption) *BBR {
	b := &BBR{}
	for _, o := range opts {
		o(b)
	}
	if b.rng == nil {
		b.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	b.Init(time.Time{}, Params{})
	return b
}

// BBRFactory returns a Factory of BBR controllers (the default Config.Congestion in conn).
func BBRFactory(opts ...BBROption) Factory {
	return func() Controller { return NewBBR(opts...) }
}

// Phase names the state the controller is in (draft §4.3): Startup, Drain, ProbeBW_DOWN,
// ProbeBW_CRUISE, ProbeBW_REFILL, ProbeBW_UP or ProbeRTT. conn's Logger and Tracer report its
// changes.
func (b *BBR) Phase() string { return b.state.String() }

// String returns "bbr", the name ParseSpec accepts.
func (b *BBR) String() string { return "bbr" }

// PacketPairs reports false (PacketPairer): BBR models the path from its own delivery samples
// and never reads the receiver's packet-pair estimate (ACK.Bandwidth), and each pair's
// back-to-back second packet puts a packet of queue on the bottleneck that pacing at 0.99 of
// the bandwidth does not drain: at 10 Mbit/s · 2 ms with a two-packet buffer, a drop at every
// pair once the queue stood (simulation, 2026-12-06).
func (b *BBR) PacketPairs() bool { return false }

// Init resets the controller for a new connection (draft §4.2.1, BBROnInit).
func (b *BBR) Init(now time.Time, p Params) {
	rng := b.rng
	*b = BBR{rng: rng}
	mss := p.MSS
	if mss-28 < minPacketSize || mss-28 > maxPacketSize {
		mss = defaultMSS
	}
	b.pkt = float64(mss - 28)
	b.cwnd = bbrInitialCwndPackets * b.pkt
	b.minRTT, b.probeRTTMin = -1, -1
	b.minRTTStamp, b.probeRTTStamp = now, now
	b.inflightHi, b.inflightLo, b.bwLo = math.Inf(1), math.Inf(1), math.Inf(1)
	b.extraStart = now
	b.enterStartup()
	rtt := bbrNominalRTT
	if p.RTT > 0 {
		rtt = p.RTT
	}
	b.pacingRate = bbrStartupPacingGain * b.cwnd / rtt.Seconds()
}

// State reports the pacing period for a full packet and the window in packets.
//
// The period lies in [1 ns, 1 s] (a packet a second at the slowest, as Native's STP cap) and the
// window in [4, NoWindowLimit] packets, whatever the events said.
func (b *BBR) State() State {
	st := State{Window: min(max(b.cwnd/b.pkt, bbrMinPipePackets), NoWindowLimit), Period: time.Second}
	if p := b.pkt / b.pacingRate; p < 1 { // also false for NaN
		st.Period = max(time.Duration(p*1e9), time.Nanosecond)
	}
	if math.IsNaN(st.Window) {
		st.Window = bbrMinPipePackets
	}
	return st
}

// OnACK does nothing: BBR learns from OnDelivery.
func (b *BBR) OnACK(time.Time, ACK) {}

// OnLoss does nothing: losses reach BBR as Delivery.NewlyLost.
func (b *BBR) OnLoss(time.Time, Loss) {}

// OnPacketReceived does nothing.
func (b *BBR) OnPacketReceived(time.Time, uint32, int) {}

// OnPacketSent notes a restart after idleness (draft §4.4.3): the first packet sent with nothing
// in flight restarts the aggregation epoch and, in ProbeBW, paces at the estimated bandwidth.
func (b *BBR) OnPacketSent(now time.Time, _ uint32, size int) {
	if b.inflight == 0 && b.delivered > 0 {
		b.idleRestart = true
		b.extraStart, b.extraDelivered = now, 0
		if b.state.probeBW() {
			b.setPacingRate(1)
		} else if b.state == bbrProbeRTT {
			b.checkProbeRTTDone(now)
		}
	}
	b.inflight += int64(size)
	b.roundSent += float64(size)
	if b.steadyState() {
		b.roundSentSteady += float64(size)
	}
}

// OnTimeout handles a retransmission timeout (draft §4.6.4.4, BBROnEnterRTO): the window is saved
// and held at the flight plus one packet until an ACK delivers data again.
func (b *BBR) OnTimeout(time.Time) {
	b.priorCwnd = b.saveCwnd()
	b.cwnd = float64(b.inflight) + b.pkt
	b.inRTO = true
}

// OnDelivery is BBR's per-ACK update (draft §4.2.3, BBRUpdateOnACK).
func (b *BBR) OnDelivery(now time.Time, d Delivery) {
	if d.PacketSize >= minPacketSize && d.PacketSize <= maxPacketSize {
		b.pkt = float64(d.PacketSize)
	}
	b.delivered, b.inflight = d.TotalDelivered, d.InFlight
	b.cwndLimited = d.CwndLimited
	rate := b.sampleRate(d)
	b.undo.observe(b, d)
	if b.inRTO && d.NewlyDelivered > 0 {
		b.inRTO = false
		b.cwnd = max(b.cwnd, b.priorCwnd) // BBRRestoreCwnd
	}

	// BBRUpdateModelAndState.
	b.updateRound(d)
	b.updateLatestSignals(d, rate)
	b.updateCongestionSignals(now, d, rate)
	b.updateACKAggregation(now, d)
	b.checkFullBwReached(d, rate)
	b.checkStartupDone()
	b.checkDrainDone(now)
	b.updateProbeBWCyclePhase(now, d, rate)
	hadRTT := b.minRTT > 0
	b.updateMinRTT(now, d.RTT)
	if !hadRTT && b.minRTT > 0 && !b.filledPipe {
		// The draft's BBRInitPacingRate with the first RTT sample: the nominal 1 ms guessed
		// before it would otherwise pace Startup far above the path (its rate only rises).
		b.pacingRate = bbrStartupPacingGain * b.cwnd / b.minRTT.Seconds()
	}
	b.checkProbeRTT(now, d)
	b.advanceLatestSignals(d, rate)
	b.bw = min(b.maxBandwidth(), b.bwLo)

	// BBRUpdateControlParameters.
	b.setPacingRate(b.pacingGain)
	b.setCwnd(d)
}

// sampleRate returns the sample's delivery rate in bytes/s, or 0 when there is none. A sample
// whose interval is shorter than the min RTT is discarded (rate-estimation draft §3.3): ACK
// compression packed its ACKs closer than the path can deliver.
func (b *BBR) sampleRate(d Delivery) float64 {
	if d.Delivered <= 0 || d.Interval <= 0 || b.minRTT > 0 && d.Interval < b.minRTT {
		return 0
	}
	return float64(d.Delivered) / d.Interval.Seconds()
}

// updateRound advances the packet-timed round trip (draft §4.5.1).
func (b *BBR) updateRound(d Delivery) {
	b.roundStart = false
	if d.NewlyDelivered > 0 && d.PriorDelivered >= b.nextRoundDelivered {
		b.startRound()
		b.roundCount++
		b.roundsSinceBwProbe++
		b.roundStart = true
	}
}

func (b *BBR) startRound() { b.nextRoundDelivered = b.delivered }

// probeRTTLimited reports that the sample's reference packet left while ProbeRTT held the flight
// down, or before the flight it held was delivered: the draft marks the connection
// application-limited on every ACK in ProbeRTT (BBRHandleProbeRTT, C.app_limited = C.delivered +
// inflight), so the packets it sends, and those sent after it until that flight is delivered,
// measure the window ProbeRTT imposed, not the path. probeRTTMark is that C.app_limited.
func (b *BBR) probeRTTLimited(d Delivery) bool {
	return b.state == bbrProbeRTT || d.PriorDelivered < b.probeRTTMark
}

// maxBandwidth is the max-bw filter's value: the larger of the two cycles' maxima.
func (b *BBR) maxBandwidth() float64 { return max(b.maxBw[0], b.maxBw[1]) }

// updateMaxBw feeds the max-bw filter (draft §4.5.2.3): application-limited samples count only
// when they raise it. ProbeRTT's samples are application-limited by construction (draft §4.3.4;
// probeRTTLimited), and a repair's may understate the path as they do (Delivery.Repair).
func (b *BBR) updateMaxBw(d Delivery, rate float64) {
	if rate <= 0 {
		return
	}
	appLimited := d.AppLimited || d.Repair || b.probeRTTLimited(d)
	if rate >= b.maxBandwidth() || !appLimited {
		b.maxBw[1] = max(b.maxBw[1], rate)
	}
	b.bwMeasured = b.bwMeasured || !appLimited
}

// advanceMaxBwFilter starts a new probe cycle in the max-bw filter (draft §4.5.2.3), unless the
// cycle ending gave no sample: then the previous cycle's maximum is the only one there is, and
// advancing would leave the model no bandwidth at all (Linux BBRv3's bbr_advance_max_bw_filter
// returns when bw_hi[1] is zero for the same reason).
func (b *BBR) advanceMaxBwFilter() {
	if b.maxBw[1] == 0 {
		return
	}
	b.maxBw[0], b.maxBw[1] = b.maxBw[1], 0
}

// bdp is gain × the model's bandwidth-delay product in bytes (draft §4.6.4.2, BBRBDPMultiple).
func (b *BBR) bdp(bw, gain float64) float64 {
	if b.minRTT <= 0 {
		return gain * bbrInitialCwndPackets * b.pkt
	}
	return gain * bw * b.minRTT.Seconds()
}

// sendQuantum is the draft's send quantum (§4.6.3) in bytes: 1 ms of the pacing rate, between
// one or two packets at low rates and 64 KiB, and never under two packets above 24 Mbit/s.
func (b *BBR) sendQuantum() float64 {
	switch r := b.pacingRate * 8; {
	case r < 1.2e6:
		return b.pkt
	case r < 24e6:
		return 2 * b.pkt
	default:
		return max(min(b.pacingRate/1000, 64<<10), 2*b.pkt) // never under the tier below it (jumbo packets)
	}
}

// quantizationBudget adds the draft's allowance for offload and batching (§4.6.4.2): three send
// quanta at least, the minimum pipe, and two packets more while probing up.
func (b *BBR) quantizationBudget(inflight float64) float64 {
	inflight = max(inflight, 3*b.sendQuantum(), bbrMinPipePackets*b.pkt)
	if b.state == bbrProbeBWUp {
		inflight += 2 * b.pkt
	}
	return inflight
}

// inflightFor is the draft's BBRInflight: the quantised BDP multiple.
func (b *BBR) inflightFor(bw, gain float64) float64 {
	return b.quantizationBudget(b.bdp(bw, gain))
}

// setPacingRate paces at gain × bw less the margin; before the pipe is full it only ever rises
// (draft §4.6.2).
func (b *BBR) setPacingRate(gain float64) {
	if b.bw <= 0 {
		return
	}
	rate := gain * b.bw * (1 - bbrPacingMargin)
	if b.filledPipe || rate > b.pacingRate {
		b.pacingRate = rate
	}
}

// setCwnd is the draft's BBRSetCwnd (§4.6.4.6) without packet conservation (loss is not taken for
// congestion unless it exceeds the background; see BBR).
func (b *BBR) setCwnd(d Delivery) {
	maxInflight := b.quantizationBudget(b.bdp(b.bw, b.cwndGain) + b.extraAckedMax())
	acked := float64(d.NewlyAcked)
	switch {
	case b.inRTO:
		b.cwnd = float64(b.inflight) + b.pkt
	case b.filledPipe:
		b.cwnd = min(b.cwnd+acked, maxInflight)
	case float64(b.delivered) < bbrInitialCwndPackets*b.pkt:
		b.cwnd += acked
	case b.cwnd < maxInflight:
		// The draft adds the whole ACK here, overshooting max_inflight by what one TCP ACK
		// covers (a segment or two); one UDT ACK can cover hundreds of packets (a repaired hole,
		// 10 ms of data), so Startup's growth stops at max_inflight.
		b.cwnd = min(b.cwnd+acked, maxInflight)
	}
	b.cwnd = max(b.cwnd, bbrMinPipePackets*b.pkt)
	if b.state == bbrProbeRTT {
		b.cwnd = min(b.cwnd, b.probeRTTCwnd())
	}
	b.boundCwndForModel()
}

// boundCwndForModel applies the loss-learnt bounds (draft §4.6.4.7).
func (b *BBR) boundCwndForModel() {
	limit := math.Inf(1)
	switch {
	case b.state.probeBW() && b.state != bbrProbeBWCruise:
		limit = b.inflightHi
	case b.state == bbrProbeRTT || b.state == bbrProbeBWCruise:
		limit = b.inflightWithHeadroom()
	}
	limit = max(min(limit, b.inflightLo), bbrMinPipePackets*b.pkt)
	b.cwnd = min(b.cwnd, limit)
}

// inflightWithHeadroom leaves 15 % of inflight_hi for other flows (draft §4.6.4.7).
func (b *BBR) inflightWithHeadroom() float64 {
	if math.IsInf(b.inflightHi, 1) {
		return b.inflightHi
	}
	headroom := max(b.pkt, bbrHeadroom*b.inflightHi)
	return max(b.inflightHi-headroom, bbrMinPipePackets*b.pkt)
}

// probeRTTCwnd is ProbeRTT's window: half the BDP, at least the minimum pipe (draft §4.3.4),
// plus the ACK-aggregation allowance. The draft leaves the allowance out, for TCP, whose
// receivers acknowledge every other segment; a UDT receiver acknowledges every quarter RTT but at
// most every 1 ms (a UDT4 one every 10 ms), so on a short path half a BDP would be all the flight
// for several round trips between ACKs and ProbeRTT would idle the link. The packets that
// allowance covers have arrived and wait for their ACK: the queue still drains.
//
// The allowance is added outside the draft's max: inside it, on a path whose BDP is about a
// packet, the window is barely one ACK's worth, the flight ends before the receiver's ACK period
// does, and the link idles until the receiver's quiet-timer ACK (stream's ackDue).
func (b *BBR) probeRTTCwnd() float64 {
	return max(b.bdp(b.bw, bbrProbeRTTCwndGain), bbrMinPipePackets*b.pkt) + b.extraAckedMax()
}

// saveCwnd is the draft's BBRSaveCwnd (§4.6.4.4).
func (b *BBR) saveCwnd() float64 {
	if !b.inRTO && b.state != bbrProbeRTT {
		return b.cwnd
	}
	return max(b.priorCwnd, b.cwnd)
}

// updateACKAggregation estimates the data the receiver acknowledges in excess of the model's
// bandwidth in one epoch (draft §4.5.4): the window needs that much on top of the BDP so that
// UDT's 10 ms ACKs (and light ACKs every 64 packets) do not stall the sender.
func (b *BBR) updateACKAggregation(now time.Time, d Delivery) {
	if b.roundStart {
		// The filter is windowed by rounds (the draft's MaxExtraAckedFilter keyed by
		// round_count), so it ages at every round start, also on an ACK that acknowledges
		// nothing new (its packets were implied already, NewlyAcked).
		b.extraAckedRound++
		b.extraAcked[b.extraAckedRound%bbrExtraAckedRounds] = 0
	}
	if d.NewlyAcked <= 0 || b.bw <= 0 {
		return
	}
	expected := b.bw * now.Sub(b.extraStart).Seconds()
	if b.extraDelivered <= expected {
		b.extraDelivered, b.extraStart, expected = 0, now, 0
	}
	b.extraDelivered += float64(d.NewlyAcked)
	extra := min(b.extraDelivered-expected, b.cwnd)
	slot := &b.extraAcked[b.extraAckedRound%bbrExtraAckedRounds]
	*slot = max(*slot, extra)
}

// extraAckedMax is the aggregation filter's value: the max over the last 10 rounds.
func (b *BBR) extraAckedMax() float64 {
	m := 0.0
	for _, v := range b.extraAcked {
		m = max(m, v)
	}
	return m
}

// undoState is what a loss response changed, kept until every loss since has proven spurious
// (then restored) or bbrUndoRounds have passed.
type undoState struct {
	armed                  bool
	round                  uint64
	lost, spurious         int64 // bytes since armed
	inflightHi, inflightLo float64
	bwLo                   float64
	startup                bool // the response ended Startup
}

// bbrUndoRounds bounds how long a loss response may be undone: a spurious retransmission shows
// within a round trip of the resend, so four rounds cover a resend waiting for its timer.
const bbrUndoRounds = 4

// arm saves the state before a loss response (the first one of an episode), made for lost
// bytes: the losses the response judged (a flight's LostSinceSent, a round's losses), which
// events before this one may have declared. Undo needs that many proven spurious: one spurious
// packet among many real losses undoes nothing.
func (u *undoState) arm(b *BBR, lost int64) {
	if u.armed {
		return
	}
	*u = undoState{armed: true, round: b.roundCount, inflightHi: b.inflightHi, inflightLo: b.inflightLo,
		bwLo: b.bwLo, startup: b.state == bbrStartup, lost: max(lost, 0)}
}

// observe counts the event's losses and spurious losses and undoes the response once all of the
// episode's losses were spurious.
func (u *undoState) observe(b *BBR, d Delivery) {
	if !u.armed {
		return
	}
	u.lost += max(d.NewlyLost, 0)
	u.spurious += max(d.Spurious, 0)
	if u.spurious > 0 && u.spurious >= u.lost {
		b.inflightHi = max(b.inflightHi, u.inflightHi)
		b.inflightLo = max(b.inflightLo, u.inflightLo)
		b.bwLo = max(b.bwLo, u.bwLo)
		if u.startup && b.state != bbrStartup && b.state != bbrProbeRTT {
			b.filledPipe = false
			b.resetFullBw()
			b.enterStartup()
			// No probe's feedback is pending, as at connection start.
			b.ackPhase, b.bwProbeSamples, b.prevProbeTooHigh, b.stoppedRiskyProbe = acksInit, false, false, false
		}
		u.armed = false
		return
	}
	if b.roundCount-u.round > bbrUndoRounds {
		u.armed = false
	}
}
