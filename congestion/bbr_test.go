package congestion

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The loss test takes random loss for background and excess loss for congestion: with a
// background of p, rounds losing at p (binomially) are judged congested about as rarely as three
// standard errors promise, and rounds losing 2 % + 3σ more are judged congested.
func TestBBRLossTest(t *testing.T) {
	const pkt = 1000.0
	for _, c := range []struct {
		bg, round float64 // background and round loss probabilities
		n         int     // packets per round
		wantMax   float64 // largest share of rounds judged congested
		wantMin   float64 // smallest share
	}{
		{0, 0, 800, 0, 0},
		{0.01, 0.01, 800, 0.01, 0},
		{0.03, 0.03, 800, 0.01, 0},
		{0.03, 0.03, 80, 0.01, 0}, // small rounds: the test's variance widens
		{0.001, 0.001, 8000, 0.01, 0},
		{0.01, 0.08, 800, 1, 0.99},
		{0.03, 0.12, 800, 1, 0.99},
		{0, 0.2, 100, 1, 0.99}, // an overflow in a probe: 20 % of its packets
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		var w lossWindow
		now := t0
		// Ten seconds of background rounds.
		for range 100 {
			now = now.Add(100 * time.Millisecond)
			w.add(now, binomial(rng, c.n, c.bg)*pkt, float64(c.n)*pkt)
		}
		flagged := 0
		const rounds = 2000
		for range rounds {
			if w.excess(now, binomial(rng, c.n, c.round)*pkt, float64(c.n)*pkt, pkt) {
				flagged++
			}
		}
		share := float64(flagged) / rounds
		if share > c.wantMax || share < c.wantMin {
			t.Errorf("background %g, round %g of %d: %.4f of rounds judged congested, want [%g, %g]", c.bg, c.round, c.n, share, c.wantMin, c.wantMax)
		}
	}
}

func binomial(rng *rand.Rand, n int, p float64) float64 {
	k := 0
	for range n {
		if rng.Float64() < p {
			k++
		}
	}
	return float64(k)
}

// Startup doubles its pacing rate each round while the delivery rate keeps up, and leaves for
// Drain once three rounds brought less than 25 % growth (draft §4.3.1.2).
func TestBBRStartupPlateau(t *testing.T) {
	b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 1)))
	b.Init(t0, Params{MSS: 1500})
	const pkt = 1472
	rtt := 20 * time.Millisecond
	link := 100e6 / 8.0 // bytes/s
	now := t0
	var total int64
	rate := float64(16*pkt) / rtt.Seconds()
	exited, plateau := -1, -1
	for round := 1; round <= 20 && exited < 0; round++ {
		prior := total
		rate = min(rate*2, link)
		if rate == link && plateau < 0 {
			plateau = round
		}
		delivered := int64(rate * rtt.Seconds())
		total += delivered
		now = now.Add(rtt)
		b.OnDelivery(now, Delivery{Delivered: delivered, Interval: rtt, RTT: rtt, PriorDelivered: prior,
			NewlyDelivered: delivered, NewlyAcked: delivered, TotalDelivered: total, InFlight: delivered, PacketSize: pkt})
		if b.state != bbrStartup {
			exited = round
		}
	}
	if exited < 0 || b.state != bbrDrain && !b.state.probeBW() {
		t.Fatalf("Startup did not end (state %v after 20 rounds)", b.state)
	}
	if got := b.maxBandwidth(); got < 0.99*link || got > 1.01*link {
		t.Errorf("max bandwidth %.0f B/s at the end of Startup, want the link's %.0f", got, link)
	}
	t.Logf("the delivery rate reached the link in round %d, Startup ended in round %d", plateau, exited)
	if exited != plateau+bbrFullBwCount {
		t.Errorf("Startup ended in round %d, want three rounds after the plateau (%d)", exited, plateau)
	}
}

// The first window is paced over the handshake's RTT at Startup's gain (the draft's
// BBRInitPacingRate with the SYN exchange's SRTT), or over the nominal 1 ms without one.
func TestBBRInitPacingFromHandshakeRTT(t *testing.T) {
	for _, tc := range []struct{ rtt, nominal time.Duration }{{0, time.Millisecond}, {100 * time.Millisecond, 100 * time.Millisecond}} {
		b := NewBBR()
		b.Init(time.Now(), Params{MSS: 1500, RTT: tc.rtt})
		st := b.State()
		// 16 packets per nominal RTT, times 2.77.
		want := time.Duration(float64(tc.nominal) / (16 * 2.77))
		if d := st.Period - want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("RTT %v: first period %v, want %v", tc.rtt, st.Period, want)
		}
	}
}

// bbrRounds drives a BBR one round trip per call: d bytes delivered over rtt, every one acked
// (NewlyDelivered = NewlyAcked), the flight inflight and window-limited; with sample false the
// event carries no rate sample (its reference packet a retransmission or late).
type bbrRounds struct {
	b     *BBR
	now   time.Time
	total int64
	rtt   time.Duration
	n     int // rounds so far
}

func newBBRRounds(rtt time.Duration) *bbrRounds {
	b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 1)))
	b.Init(t0, Params{MSS: 1500})
	return &bbrRounds{b: b, now: t0, rtt: rtt}
}

func (r *bbrRounds) round(d, inflight int64, sample bool) {
	prior := r.total
	r.total += d
	r.now = r.now.Add(r.rtt)
	r.n++
	s := Delivery{RTT: r.rtt, PriorDelivered: prior, NewlyDelivered: d, NewlyAcked: d, TotalDelivered: r.total,
		InFlight: inflight, TxInFlight: inflight, CwndLimited: true, PacketSize: 1472}
	if sample {
		s.Delivered, s.Interval = d, r.rtt
	}
	r.b.OnDelivery(r.now, s)
}

// A probe that follows one which found excessive loss stops once the flight reaches inflight_hi
// (a stopped risky probe), and a new probe starts at once when that probe's ACKs come back
// without excessive loss; a probe after a clean one keeps probing past inflight_hi while the
// window limits it (Linux BBRv3 bbr_update_cycle_phase and bbr_adapt_upper_bounds).
func TestBBRStoppedRiskyProbe(t *testing.T) {
	const pkt = 1472
	rtt := 20 * time.Millisecond
	for _, prevTooHigh := range []bool{true, false} {
		r := newBBRRounds(rtt)
		b := r.b
		deliver := func(inflight int64) { r.round(100*pkt, inflight, true) }
		for range 30 { // through Startup and Drain into ProbeBW
			deliver(100 * pkt)
		}
		if !b.state.probeBW() {
			t.Fatalf("state %v after 30 rounds, want ProbeBW", b.state)
		}
		b.startProbeBWRefill()
		deliver(100 * pkt) // REFILL's round ends: UP
		if b.state != bbrProbeBWUp {
			t.Fatalf("state %v after REFILL's round, want ProbeBW_UP", b.state)
		}
		b.prevProbeTooHigh = prevTooHigh
		b.inflightHi = 100 * pkt
		b.cwnd = b.inflightHi
		deliver(100 * pkt) // the flight is at inflight_hi
		if !prevTooHigh {
			if b.state != bbrProbeBWUp {
				t.Fatalf("after a clean probe: state %v at inflight_hi, want ProbeBW_UP", b.state)
			}
			continue
		}
		if b.state != bbrProbeBWDown || !b.stoppedRiskyProbe {
			t.Fatalf("after a lossy probe: state %v, stopped %v at inflight_hi, want ProbeBW_DOWN, stopped", b.state, b.stoppedRiskyProbe)
		}
		deliver(90 * pkt) // the stopped probe's round ends with no loss
		if b.state != bbrProbeBWRefill {
			t.Fatalf("state %v when the stopped probe's ACKs were in, want ProbeBW_REFILL", b.state)
		}
	}
}

// On a path whose BDP is a packet or two (100 Mbit/s, 0.2 ms), the Reno-coexistence probe waits
// for the quantised BDP's rounds (three send quanta, as Linux BBRv3's bbr_target_inflight), not
// the bare BDP's: before, ProbeBW probed every other round.
func TestBBRRenoRoundsQuantised(t *testing.T) {
	const pkt = 1472
	rtt := 200 * time.Microsecond
	r := newBBRRounds(rtt)
	b := r.b
	deliver := func() { r.round(2*pkt, 2*pkt, true) } // 2 packets per 0.2 ms: 117 Mbit/s of payload
	for range 40 {
		deliver()
	}
	if !b.state.probeBW() {
		t.Fatalf("state %v after 40 rounds, want ProbeBW", b.state)
	}
	want := int(3 * b.sendQuantum() / pkt)
	if bare := b.bdp(b.bw, 1) / pkt; bare > 3 || want < 6 {
		t.Fatalf("BDP %.1f packets, three send quanta %d: the test needs a BDP of a few packets", bare, want)
	}
	// Rounds from each probe's end (DOWN) to the next REFILL, over several probes.
	var gaps []int
	start := -1
	for range 2000 {
		prev := b.state
		deliver()
		switch {
		case b.state == bbrProbeBWDown && prev != bbrProbeBWDown:
			start = r.n
		case b.state == bbrProbeBWRefill && prev != bbrProbeBWRefill && start >= 0:
			gaps = append(gaps, r.n-start)
		}
	}
	if len(gaps) < 5 {
		t.Fatalf("%d probes in 2000 rounds", len(gaps))
	}
	for _, g := range gaps {
		if g < want-1 { // the probe's own round may count towards it
			t.Fatalf("probe gaps %v rounds, want ≥ %d (three send quanta of packets)", gaps, want-1)
		}
	}
	t.Logf("probe gaps %v rounds; three send quanta %d packets", gaps, want)
}

// ProbeRTT's window keeps the draft's window (half the BDP, at least the minimum pipe) in the
// network and adds the ACK-aggregation allowance on top: on a path whose BDP is a packet, the
// allowance (what one UDT ACK covers) must not be the whole flight, or the flight ends before the
// receiver's ACK period does and the link idles until its quiet timer (a testbed trace at 0.15 ms:
// 71–76 % of the link's packets sent during a ProbeRTT with the allowance inside the max). The
// first three cases tell the two forms apart (old: max(BDP/2 + allowance, 4)); the last one is
// where they agree.
func TestBBRProbeRTTCwndKeepsThePipe(t *testing.T) {
	const pkt = 1472.0
	for _, c := range []struct {
		name      string
		bw        float64 // bytes/s
		rtt       time.Duration
		allowance float64 // packets
		want      float64 // packets
	}{
		// BDP 1.27 packets: 4 + 9 (old 0.64 + 9 = 9.64).
		{"0.15ms·100M", 100e6 / 8, 150 * time.Microsecond, 9, 13},
		// BDP 4.25: half 2.12 < 4 < 2.12 + 2; 4 + 2 (old 4.12).
		{"0.5ms·100M", 100e6 / 8, 500 * time.Microsecond, 2, 6},
		// BDP 1.27, half + 1 under 4: 4 + 1 (old 4).
		{"0.15ms·100M small allowance", 100e6 / 8, 150 * time.Microsecond, 1, 5},
		// BDP 16.98: half 8.49 ≥ 4, both forms 8.49 + 9.
		{"2ms·100M", 100e6 / 8, 2 * time.Millisecond, 9, 100e6/8*0.002/2/pkt + 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewBBR()
			b.Init(t0, Params{MSS: 1500})
			b.pkt, b.bw, b.minRTT = pkt, c.bw, c.rtt
			for i := range b.extraAcked {
				b.extraAcked[i] = 0
			}
			b.extraAcked[0] = c.allowance * pkt
			if got := b.probeRTTCwnd() / pkt; got < c.want-1e-6 || got > c.want+1e-6 {
				t.Errorf("ProbeRTT window %.2f packets, want max(BDP/2, %d) + allowance = %.2f", got, bbrMinPipePackets, c.want)
			}
		})
	}
}

// poissonTail is exact for small counts and ends at once for a count far beyond its mean (a
// hostile LostSinceSent of 10¹⁵ bytes once made it loop for minutes under FuzzBBR).
func TestPoissonTail(t *testing.T) {
	// P(X ≥ 3) for λ = 1: 1 − e⁻¹(1 + 1 + ½).
	if got, want := poissonTail(3, 1), 1-math.Exp(-1)*2.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("poissonTail(3, 1) = %v, want %v", got, want)
	}
	if got := poissonTail(0, 5); got != 1 {
		t.Errorf("poissonTail(0, 5) = %v, want 1", got)
	}
	if got := poissonTail(1e15, 1); got > 1e-12 { // a hang fails by the test timeout
		t.Errorf("poissonTail(1e15, 1) = %v, want ≈ 0", got)
	}
}

// A probe cycle that gives no delivery-rate sample (every ACK's reference packet a
// retransmission or late, as while a hole's repairs are lost) keeps the previous cycle's
// maximum: advancing the filter anyway left the model no bandwidth (maxBw [0 0]), and a
// connection paced at the stale rate with nothing to raise it stalled for a minute
// (TestBulkManyOneListener, 2026-12-05).
func TestBBRMaxBwFilterKeepsItsMaxWithoutSamples(t *testing.T) {
	const pkt = 1472
	rtt := 20 * time.Millisecond
	r := newBBRRounds(rtt)
	b := r.b
	deliver := func(sample bool) { r.round(100*pkt, 100*pkt, sample) }
	for range 30 { // through Startup and Drain into ProbeBW
		deliver(true)
	}
	if !b.state.probeBW() {
		t.Fatalf("state %v after 30 rounds, want ProbeBW", b.state)
	}
	want := b.bw
	cycles := 0
	for range 2000 { // 40 s: a dozen probe cycles without a rate sample
		prev := b.state
		deliver(false)
		if prev != bbrProbeBWUp && b.state == bbrProbeBWDown || prev == bbrProbeBWUp && b.state != bbrProbeBWUp {
			cycles++
		}
		if b.bw != want {
			t.Fatalf("after %d probe cycles without a sample (%v): the model's bandwidth %v, want %v kept", cycles, b.state, b.bw, want)
		}
	}
	if cycles < 4 {
		t.Fatalf("%d probe cycles in 40 s without samples: the test did not exercise the filter's advance", cycles)
	}
}

// Startup's loss exits take the max-bw filter for the pipe's bandwidth, so they wait for a
// sample that measured the path: a connection whose only sample was application-limited (its
// first 1-byte write, 2 KB/s) and whose first flight met an overloaded bottleneck stayed in
// Startup instead of settling at 2 KB/s. With one measured sample the same losses end Startup.
func TestBBRStartupLossExitNeedsAMeasuredBandwidth(t *testing.T) {
	const pkt = 1472
	rtt := 10 * time.Millisecond
	for _, measured := range []bool{false, true} {
		b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 1)))
		b.Init(t0, Params{MSS: 1500})
		now := t0.Add(rtt)
		// The first write: 17 bytes over 7 ms, application-limited.
		b.OnDelivery(now, Delivery{Delivered: 17, Interval: 7 * time.Millisecond, RTT: rtt,
			NewlyDelivered: 17, NewlyAcked: 17, TotalDelivered: 17, AppLimited: true, PacketSize: pkt})
		total := int64(17)
		if measured {
			now = now.Add(rtt)
			b.OnDelivery(now, Delivery{Delivered: 16 * pkt, Interval: rtt, RTT: rtt, PriorDelivered: total,
				NewlyDelivered: 16 * pkt, NewlyAcked: 16 * pkt, TotalDelivered: total + 16*pkt, InFlight: 16 * pkt, TxInFlight: 16 * pkt,
				CwndLimited: true, PacketSize: pkt})
			total += 16 * pkt
		}
		// Rounds in which nine tenths of every flight is lost: far above any background.
		lost := int64(0)
		for range 10 {
			now = now.Add(rtt)
			lost += 30 * pkt
			b.OnDelivery(now, Delivery{RTT: rtt, PriorDelivered: total, NewlyDelivered: 3 * pkt, NewlyAcked: 3 * pkt,
				TotalDelivered: total + 3*pkt, NewlyLost: 30 * pkt, TotalLost: lost, LostSinceSent: 30 * pkt,
				InFlight: 33 * pkt, TxInFlight: 33 * pkt, LostTxInFlight: 33 * pkt, LostSentLast: now.Add(-rtt),
				PacketSize: pkt})
			total += 3 * pkt
		}
		if left := b.state != bbrStartup; left != measured {
			t.Errorf("measured sample %v: state %v after ten rounds losing 90 %% (bandwidth %.0f B/s), want Startup left: %v",
				measured, b.state, b.maxBandwidth(), measured)
		}
	}
}

// Startup grows its window by data acknowledged for the first time however the sender learnt of
// it: events that carry only implied arrivals (NewlyAcked, no ACK or NAK, no rate sample), as
// while a hole holds UDT's cumulative ACK back, grow it as an ACK of as much would; the ACK that
// later delivers the same packets (NewlyDelivered, NewlyAcked 0) does not grow it again.
func TestBBRStartupGrowsByImpliedArrivals(t *testing.T) {
	const pkt = 1456
	rtt := 100 * time.Millisecond
	start := func() *BBR {
		b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 1)))
		b.Init(t0, Params{MSS: 1500, RTT: rtt})
		// One round of 64 packets delivered sets a bandwidth, a min RTT and a window well below
		// Startup's 2·BDP.
		b.OnDelivery(t0.Add(rtt), Delivery{Delivered: 64 * pkt, Interval: rtt, RTT: rtt, NewlyDelivered: 64 * pkt,
			NewlyAcked: 64 * pkt, TotalDelivered: 64 * pkt, InFlight: 64 * pkt, PriorInFlight: 64 * pkt, PacketSize: pkt})
		return b
	}
	b := start()
	w0 := b.cwnd
	now := t0.Add(rtt)
	for i := 0; i < 32; i++ { // 32 packets implied, one event each
		now = now.Add(time.Millisecond)
		b.OnDelivery(now, Delivery{NewlyAcked: pkt, TotalDelivered: 64 * pkt, InFlight: int64(63-i) * pkt,
			PriorInFlight: int64(64-i) * pkt, PacketSize: pkt})
	}
	if got, want := b.cwnd-w0, 32.0*pkt; got != want {
		t.Fatalf("Startup's window grew by %.0f bytes over 32 implied packets, want %.0f", got, want)
	}
	if b.state != bbrStartup {
		t.Fatalf("state %v after implied arrivals alone, want Startup", b.state)
	}
	w1 := b.cwnd
	b.OnDelivery(now.Add(time.Millisecond), Delivery{NewlyDelivered: 32 * pkt, TotalDelivered: 96 * pkt,
		InFlight: 31 * pkt, PriorInFlight: 31 * pkt, PacketSize: pkt})
	if b.cwnd != w1 {
		t.Errorf("the ACK of packets already implied grew the window by %.0f bytes, want 0", b.cwnd-w1)
	}
}

// A repair's rate sample (Delivery.Repair) may understate the path, since UDT's cumulative ACK
// stops at the next hole: like an application-limited one it raises the model and counts for
// nothing else. Low repair samples at round starts do not end Startup (they did, at a tenth of a
// 3 %-lossy path's rate, before they were skipped); a repair sample above the model raises it at
// once, which is how a sender that sends nothing but repairs recovers a model set far too low.
func TestBBRRepairSamplesOnlyRaise(t *testing.T) {
	const pkt = 1472
	rtt := 20 * time.Millisecond
	r := newBBRRounds(rtt)
	b := r.b
	for k := range 4 { // Startup: the delivery rate doubles each round
		r.round(int64(16<<k)*pkt, int64(32<<k)*pkt, true)
	}
	bw := b.maxBandwidth()
	for range 6 { // rounds whose only samples are repairs at a tenth of the rate
		prior := r.total
		r.total += 10 * pkt
		r.now = r.now.Add(rtt)
		b.OnDelivery(r.now, Delivery{Delivered: int64(bw*rtt.Seconds()) / 10, Interval: rtt, Repair: true, RTT: rtt,
			PriorDelivered: prior, NewlyDelivered: 10 * pkt, NewlyAcked: 10 * pkt, TotalDelivered: r.total,
			InFlight: 256 * pkt, TxInFlight: 256 * pkt, CwndLimited: true, PacketSize: pkt})
	}
	if b.state != bbrStartup || b.maxBandwidth() != bw {
		t.Fatalf("after six rounds of repair samples at a tenth of the rate: state %v, bandwidth %.0f; want Startup, %.0f kept",
			b.state, b.maxBandwidth(), bw)
	}
	prior := r.total
	r.total += 10 * pkt
	r.now = r.now.Add(rtt)
	b.OnDelivery(r.now, Delivery{Delivered: int64(3 * bw * rtt.Seconds()), Interval: rtt, Repair: true, RTT: rtt,
		PriorDelivered: prior, NewlyDelivered: 10 * pkt, NewlyAcked: 10 * pkt, TotalDelivered: r.total,
		InFlight: 256 * pkt, TxInFlight: 256 * pkt, CwndLimited: true, PacketSize: pkt})
	if got := b.maxBandwidth(); got < 2.9*bw {
		t.Fatalf("a repair sample at 3× the model: bandwidth %.0f, want it raised to ~%.0f", got, 3*bw)
	}
}

// UP ends once, a round in, an RTT sample shows a queue of its own excess (0.25·min RTT beyond
// the RTT noise and 1 ms: probeQueued, Chromium's BBR2), and not within its first round, on a
// smaller rise, or on samples a hole held back (Delivery.RTTHeld); without a queue it lasts until
// the draft's plateau (three rounds without 25 % growth). ACKs come ten a round, as a UDT
// receiver's every quarter round trip or so, and while cruising their RTTs alternate between the
// path's and 1 or 2 ms more, by round (the noise is the larger). A repaired hole's cumulative
// ACK, which reports a round trip of arrivals at once, raises the ACK-aggregation estimate but
// not the margin.
func TestBBRProbeUpEndsOnQueue(t *testing.T) {
	const pkt, perRound, acks = 1472, 100, 10
	rtt := 20 * time.Millisecond
	noise := 2 * time.Millisecond
	queue := 30 * time.Millisecond // 0.5·min RTT of queue
	margin := rtt + rtt/4 + noise + time.Millisecond
	for _, tc := range []struct {
		name     string
		rtt      func(ack int) time.Duration // the RTT of UP's ack-th ACK (from 1)
		held     bool                        // UP's samples waited behind a hole
		repair   bool                        // a repaired hole's ACK came just before the probe
		min, max int                         // when DOWN may start, in ACKs since UP began
	}{
		{"queued", func(int) time.Duration { return queue }, false, false, acks, 2 * acks},
		{"queued after a repair", func(int) time.Duration { return queue }, false, true, acks, 2 * acks},
		{"queued in its first round only", func(a int) time.Duration {
			if a < acks {
				return queue
			}
			return rtt
		}, false, false, 3 * acks, 5 * acks},
		{"within the margins", func(int) time.Duration { return margin - time.Millisecond/2 }, false, false, 3 * acks, 5 * acks},
		{"held", func(int) time.Duration { return queue }, true, false, 3 * acks, 5 * acks},
		{"no queue", func(int) time.Duration { return rtt }, false, false, 3 * acks, 5 * acks},
	} {
		b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 1)))
		b.Init(t0, Params{MSS: 1500})
		now, total, n := t0, int64(0), 0
		ack := func(sample time.Duration, held bool, d int64) {
			now = now.Add(rtt / acks)
			total += d
			b.OnDelivery(now, Delivery{RTT: sample, RTTHeld: held, PriorDelivered: max(total-perRound*pkt, 0), NewlyDelivered: d,
				NewlyAcked: d, TotalDelivered: total, InFlight: perRound * pkt, TxInFlight: perRound * pkt,
				CwndLimited: true, PacketSize: pkt, Delivered: perRound * pkt, Interval: rtt})
		}
		steady := func() {
			n++
			extra := noise
			if n/acks%2 == 1 {
				extra = noise / 2 // a quieter round
			}
			ack(rtt+time.Duration(n%2)*extra, false, perRound/acks*pkt)
		}
		for range 30 * acks { // through Startup and Drain into ProbeBW
			steady()
		}
		if !b.state.probeBW() {
			t.Fatalf("%s: state %v after 30 rounds, want ProbeBW", tc.name, b.state)
		}
		if got, ok := b.rttNoise(); !ok || got != noise {
			t.Fatalf("%s: RTT noise %v (measured %v), want %v", tc.name, got, ok, noise)
		}
		if tc.repair {
			ack(rtt, false, perRound*pkt) // a round trip of arrivals at once
			if b.extraAckedMax() < perRound/2*pkt {
				t.Fatalf("%s: aggregation estimate %.0f bytes after the repair, want about a round", tc.name, b.extraAckedMax())
			}
		}
		b.startProbeBWRefill()
		for i := 0; i < 3*acks && b.state != bbrProbeBWUp; i++ {
			steady() // REFILL's round
		}
		if b.state != bbrProbeBWUp {
			t.Fatalf("%s: state %v after REFILL's round, want ProbeBW_UP", tc.name, b.state)
		}
		up := 0
		for b.state == bbrProbeBWUp && up < 10*acks {
			up++
			ack(tc.rtt(up), tc.held, perRound/acks*pkt)
		}
		if up < tc.min || up > tc.max {
			t.Errorf("%s: UP ended at its ACK %d (state %v), want within %d–%d", tc.name, up, b.state, tc.min, tc.max)
		}
	}
}

// Before a steady round has measured the RTT noise, UP's margin is the ACK-aggregation allowance
// (extra_acked at the model's bandwidth), as it was before the noise was measured at all: a
// path whose receiver holds its ACKs for a fifth of a round trip does not end UP on a sample
// that held ACK delayed.
func TestBBRProbeUpMarginBeforeTheNoise(t *testing.T) {
	b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 1)))
	b.Init(t0, Params{MSS: 1500})
	b.minRTT, b.bw, b.upRounds = 20*time.Millisecond, 1e6, 1
	b.extraAcked[0] = 4000 // 4 ms at 1 MB/s
	if _, ok := b.rttNoise(); ok {
		t.Fatal("RTT noise measured on a new controller")
	}
	for _, tc := range []struct {
		rtt  time.Duration
		want bool
	}{
		{29500 * time.Microsecond, false}, // 20 + 5 + 4 + 1 = 30 ms
		{30500 * time.Microsecond, true},
	} {
		if got := b.probeQueued(Delivery{RTT: tc.rtt}); got != tc.want {
			t.Errorf("RTT %v: probeQueued %v, want %v", tc.rtt, got, tc.want)
		}
	}
}

// rttNoise is the largest spread of the unheld RTT samples of one steady round over the steady
// rounds of the last 10 rounds: a round counts from the third consecutive CRUISE round on (its
// samples' packets then all left while cruising) and with at least four samples; a held sample is
// left out; a spread older than 10 rounds is forgotten.
func TestBBRRTTNoise(t *testing.T) {
	ms := time.Millisecond
	b := NewBBR(WithBBRRandSource(rand.NewPCG(1, 1)))
	b.Init(t0, Params{MSS: 1500})
	b.state = bbrProbeBWCruise
	round := func(held bool, rtts ...time.Duration) {
		b.roundCount++
		for i, r := range rtts {
			b.lossRoundStart = false
			b.updateCongestionSignals(t0, Delivery{RTT: r, RTTHeld: held && i == 0}, 0)
		}
		b.lossRoundStart = true
		b.updateCongestionSignals(t0, Delivery{}, 0)
	}
	round(false, 20*ms, 20*ms, 20*ms, 29*ms) // the first CRUISE round: not counted
	round(false, 20*ms, 20*ms, 20*ms, 29*ms) // the second: not counted
	if got, ok := b.rttNoise(); ok {
		t.Fatalf("noise %v measured before the third CRUISE round", got)
	}
	round(false, 20*ms, 29*ms, 21*ms)              // three samples: not counted
	round(true, 90*ms, 20*ms, 24*ms, 21*ms, 22*ms) // the held 90 ms left out: 4 ms
	if got, ok := b.rttNoise(); !ok || got != 4*ms {
		t.Fatalf("noise %v (measured %v), want 4ms", got, ok)
	}
	round(false, 20*ms, 25*ms, 21*ms, 22*ms) // 5 ms (round 5)
	round(false, 30*ms, 31*ms, 32*ms, 33*ms) // 3 ms (round 6; not 13: each round's own spread)
	if got, _ := b.rttNoise(); got != 5*ms {
		t.Fatalf("noise %v, want the largest spread, 5ms", got)
	}
	b.state = bbrProbeBWUp
	for range 8 {
		round(false, 20*ms, 40*ms, 20*ms, 20*ms) // probing rounds: not counted
	}
	if got, _ := b.rttNoise(); got != 5*ms {
		t.Fatalf("noise %v 9 rounds after the 5 ms round, want 5ms", got)
	}
	round(false, 20*ms, 40*ms, 20*ms, 20*ms)
	if got, _ := b.rttNoise(); got != 3*ms {
		t.Fatalf("noise %v 10 rounds after the 5 ms round, want the 3 ms round's", got)
	}
	round(false, 20*ms, 40*ms, 20*ms, 20*ms)
	if got, ok := b.rttNoise(); ok {
		t.Fatalf("noise %v 10 rounds after the last steady round, want none", got)
	}
}
