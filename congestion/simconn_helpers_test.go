package congestion_test

// Whole connections (package conn over the engine of internal/stream) through the in-memory
// network of internal/simnet, in the virtual time of testing/synctest: the connection-level
// counterpart of the model in sim_test.go. The links are seeded and the clock is virtual, so a
// run's figures do not depend on the machine's speed or load. They are not bit-for-bit
// repeatable: the order in which the bubble runs its runnable goroutines varies, and a loss
// falls on another packet (the same cell gave 80–89 % utilisation in three runs of one binary).
// So the tests assert floors with margins, and the grid compares builds over several seeds.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/conn"
	"github.com/udtgo/udt/conn/trace"
	"github.com/udtgo/udt/internal/simnet"
)

const (
	simMSS      = 1500 // bytes on the wire per data packet: IP+UDP headers (28) + UDT header (16) + payload
	simPayload  = simMSS - 44
	simOverhead = 28 // IPv4+UDP headers, counted by the bottleneck but not in the datagram
)

// connScenario is one or more bulk flows through a shared bottleneck (a dumbbell): the forward
// link has the bottleneck's rate, a drop-tail queue of QueueBDP bandwidth-delay products, half
// the RTT of propagation delay and the random loss; the reverse link has the other half.
type connScenario struct {
	Rate     int64         // bottleneck, bit/s (counting IP+UDP headers, as a link does)
	RTT      time.Duration // propagation round-trip time of the dumbbell (flows may add an access link)
	QueueBDP float64       // drop-tail queue in BDPs (of Rate and RTT); 0 means 1
	// QueueBytes, if positive, sizes the drop-tail queue in bytes instead of QueueBDP.
	QueueBytes int
	Loss       float64 // random loss probability on the forward link
	// Bucket, if positive, makes the bottleneck a token-bucket shaper (Linux tbf) whose bucket
	// holds Bucket at Rate, as examples/testbed's (1 ms), instead of a serial link.
	Bucket time.Duration
	// Release, if positive, holds the packets leaving the bottleneck's queue until the next
	// multiple of Release and lets them go together (simnet.LinkConfig.ReleaseEvery): a relay on
	// a coarse timer.
	Release time.Duration
	// ACKRelease does the same on the reverse link: the return path aggregates ACKs.
	ACKRelease time.Duration
	// Jitter and JitterHold add FIFO jitter to the forward link (simnet.LinkConfig).
	Jitter, JitterHold time.Duration
	// Window, if positive, is every connection's flow window and the size of its send and
	// receive buffers, in packets; 0 keeps conn's defaults.
	Window int
	// Tick, if positive (a divisor of 1 s), also samples the flows and the bottleneck every Tick
	// into connResult's Tick series.
	Tick time.Duration
	// SteadyStart, if positive (with Tick), splits each sender's retransmissions by when the
	// packet was first sent: before SteadyStart after the run's start (connResult.RetxEarly) or
	// from then on (RetxSteady, FirstSteady). A trace of the sender's packets does it.
	SteadyStart time.Duration
	Seed        uint64
	Flows       []connFlow
	Duration    time.Duration // virtual time measured from the first flow's start
	// Until, if set, ends the run early after the first second for which it returns true; it
	// gets the shares measured so far (Share[flow][second]).
	Until func(share [][]float64) bool
}

type connFlow struct {
	Name string
	// CC makes the flow's controllers; nil leaves Config.Congestion nil: conn's default.
	CC    congestion.Factory
	Start time.Duration // virtual time of the dial
	// RTT, if above the scenario's, puts an access link of (RTT − scenario RTT)/2 in each
	// direction in front of this flow's share of the dumbbell.
	RTT time.Duration
}

// connResult is what a run measured.
type connResult struct {
	Share    [][]float64      // Share[flow][second]: the flow's goodput in wire bytes / the bottleneck rate
	Pacing   [][]float64      // Pacing[flow][second]: the sender's pacing rate at the end of the second / the bottleneck rate
	Flight   [][]int          // Flight[flow][second]: packets in flight / the congestion window, at the end of the second, in %
	Sender   []conn.Stats     // each sender's counters at the end
	Forward  simnet.LinkStats // the bottleneck's counters at the end
	QueueMax []int            // the bottleneck queue's high-water mark in bytes, per second
	Drops    []uint64         // queue drops per second
	Random   []uint64         // random losses per second

	// The Tick series (with connScenario.Tick): element k is sampled (k+1)·Tick after the start.
	Recv  [][]uint64 // Recv[flow][k]: payload bytes the receiver accepted so far (unique data)
	Queue []int      // the bottleneck's queue in bytes on the wire (datagrams + Overhead)

	// With connScenario.SteadyStart, per flow, so far at each tick: retransmissions of packets
	// first sent before SteadyStart (RetxEarly), of packets first sent from then on
	// (RetxSteady), and first transmissions from then on (FirstSteady).
	RetxEarly, RetxSteady, FirstSteady [][]uint64
}

// runConns runs sc inside a synctest bubble and returns the per-second figures.
func runConns(t *testing.T, sc connScenario) connResult {
	t.Helper()
	var res connResult
	synctest.Test(t, func(t *testing.T) { res = runConnsInBubble(t, sc) })
	return res
}

// connConfig is the conn.Config of one flow's two ends.
func (sc *connScenario) connConfig(cc congestion.Factory) *conn.Config {
	cfg := &conn.Config{Pacer: "gotimer", Congestion: cc, Linger: -1, IdleTimeout: time.Minute}
	if sc.Window > 0 {
		cfg.FlowWindow = sc.Window
		cfg.SendBuffer = sc.Window * simPayload
		cfg.RecvBuffer = sc.Window * simPayload
	}
	return cfg
}

func runConnsInBubble(t *testing.T, sc connScenario) connResult {
	qbdp := sc.QueueBDP
	if qbdp == 0 {
		qbdp = 1
	}
	qbytes := int(qbdp * float64(simnet.BDP(sc.Rate, sc.RTT)))
	if sc.QueueBytes > 0 {
		qbytes = sc.QueueBytes
	}
	n := len(sc.Flows)
	d := simnet.NewDumbbell(sc.Seed, n,
		simnet.LinkConfig{Rate: sc.Rate, Overhead: simOverhead, Delay: sc.RTT / 2,
			QueueBytes: qbytes, Loss: sc.Loss,
			BucketBytes:  int(float64(sc.Rate) / 8 * sc.Bucket.Seconds()),
			ReleaseEvery: sc.Release, Jitter: sc.Jitter, JitterHold: sc.JitterHold},
		simnet.LinkConfig{Delay: sc.RTT / 2, ReleaseEvery: sc.ACKRelease})
	defer d.Close()
	for i, f := range sc.Flows {
		if f.RTT <= sc.RTT {
			continue
		}
		left, right := fmt.Sprintf("198.18.0.%d", i+1), fmt.Sprintf("198.18.1.%d", i+1)
		access := simnet.LinkConfig{Delay: (f.RTT - sc.RTT) / 2}
		d.Net.Route(left, right, d.Net.NewLink(access), d.Forward)
		d.Net.Route(right, left, d.Reverse, d.Net.NewLink(access))
	}

	type flowState struct {
		mu       sync.Mutex
		client   *conn.Conn
		server   *conn.Conn
		ln       *conn.Listener
		received int64         // payload bytes read by the application
		split    *retxSplit    // with SteadyStart: the sender's trace
		trace    *simTraceFile // with UDT_SIM_TRACE: the sender's JSON trace
	}
	flows := make([]*flowState, n)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	begin := time.Now()
	for i, f := range sc.Flows {
		fs := &flowState{}
		flows[i] = fs
		cfg := sc.connConfig(f.CC)
		dialCfg := cfg
		var tracers []trace.Tracer
		if sc.SteadyStart > 0 {
			fs.split = newRetxSplit(begin.Add(sc.SteadyStart))
			tracers = append(tracers, fs.split)
		}
		if prefix := os.Getenv("UDT_SIM_TRACE"); prefix != "" {
			base := fmt.Sprintf("%s-%s-flow%d", prefix, strings.NewReplacer("/", "_", "%", "pct").Replace(t.Name()), i+1)
			name := fmt.Sprintf("%s-run%d.jsonl", base, traceRuns.next(base))
			fs.trace = &simTraceFile{name: name}
			tracers = append(tracers, fs.trace)
		}
		if len(tracers) > 0 {
			sender := *cfg
			sender.Tracer = func(info trace.ConnInfo) trace.Tracer { // dialed: the sender
				if fs.trace != nil {
					fs.trace.open(t, info)
				}
				if len(tracers) == 1 {
					return tracers[0]
				}
				return trace.Func(func(ev trace.Event) {
					for _, tr := range tracers {
						tr.Event(ev)
					}
				})
			}
			dialCfg = &sender
		}
		ln, err := conn.NewListener(d.Right[i], cfg)
		if err != nil {
			t.Fatal(err)
		}
		fs.ln = ln
		wg.Add(1)
		go func() { // receiver: accept, then read and discard
			defer wg.Done()
			s, err := ln.AcceptUDT(context.Background())
			if err != nil {
				return
			}
			fs.mu.Lock()
			fs.server = s
			fs.mu.Unlock()
			buf := make([]byte, 256<<10)
			for {
				k, err := s.Read(buf)
				fs.mu.Lock()
				fs.received += int64(k)
				fs.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		wg.Add(1)
		go func() { // sender: dial at Start, then write until stopped
			defer wg.Done()
			select {
			case <-time.After(f.Start):
			case <-stop:
				return
			}
			c, err := conn.DialPacketContext(context.Background(), d.Left[i], d.Right[i].LocalAddr(), dialCfg)
			if err != nil {
				t.Errorf("flow %d: dial: %v", i, err)
				return
			}
			fs.mu.Lock()
			fs.client = c
			fs.mu.Unlock()
			buf := make([]byte, 256<<10)
			for {
				if _, err := c.Write(buf); err != nil {
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}

	secs := int(sc.Duration / time.Second)
	res := connResult{Share: make([][]float64, n), Pacing: make([][]float64, n), Flight: make([][]int, n),
		Recv: make([][]uint64, n), RetxEarly: make([][]uint64, n), RetxSteady: make([][]uint64, n), FirstSteady: make([][]uint64, n)}
	tick := sc.Tick
	if tick <= 0 || time.Second%tick != 0 {
		tick = time.Second
	}
	perTick := int(time.Second / tick)
	prev := make([]int64, n)
	var prevFwd simnet.LinkStats
	perSec := float64(sc.Rate) / 8 // bytes/s
	for k := 1; k <= secs*perTick; k++ {
		time.Sleep(time.Until(begin.Add(time.Duration(k) * tick)))
		if sc.Tick > 0 {
			for i, fs := range flows {
				fs.mu.Lock()
				s := fs.server
				fs.mu.Unlock()
				var ss conn.Stats
				if s != nil {
					ss = s.Stats()
				}
				res.Recv[i] = append(res.Recv[i], ss.BytesRecv)
				if fs.split != nil { // virtual time moved, so the tracer took every earlier event
					early, steady, first := fs.split.counts()
					res.RetxEarly[i] = append(res.RetxEarly[i], early)
					res.RetxSteady[i] = append(res.RetxSteady[i], steady)
					res.FirstSteady[i] = append(res.FirstSteady[i], first)
				}
			}
			st := d.Forward.Stats()
			res.Queue = append(res.Queue, st.QueuedBytes+st.QueuedPackets*simOverhead)
		}
		if k%perTick != 0 {
			continue
		}
		for i, fs := range flows {
			fs.mu.Lock()
			got := fs.received
			c := fs.client
			fs.mu.Unlock()
			res.Share[i] = append(res.Share[i], float64(got-prev[i])/simPayload*simMSS/perSec)
			prev[i] = got
			var pace float64
			var flight int
			if c != nil {
				st := c.Stats()
				if st.SendPeriod > 0 {
					pace = simMSS / st.SendPeriod.Seconds() / perSec
				}
				flight = st.FlightSize * 100 / max(st.CongestionWindow, 1)
			}
			res.Pacing[i] = append(res.Pacing[i], pace)
			res.Flight[i] = append(res.Flight[i], flight)
		}
		st := d.Forward.Stats()
		res.QueueMax = append(res.QueueMax, st.MaxQueuedBytes)
		res.Drops = append(res.Drops, st.DroppedQueue-prevFwd.DroppedQueue)
		res.Random = append(res.Random, st.DroppedLoss-prevFwd.DroppedLoss)
		prevFwd = st
		if sc.Until != nil && sc.Until(res.Share) {
			break
		}
	}
	res.Forward = d.Forward.Stats()
	close(stop)
	for _, fs := range flows {
		fs.mu.Lock()
		c, s := fs.client, fs.server
		fs.mu.Unlock()
		if c != nil {
			res.Sender = append(res.Sender, c.Stats())
			c.Close()
		} else {
			res.Sender = append(res.Sender, conn.Stats{})
		}
		if s != nil {
			s.Close()
		}
		fs.ln.Close()
	}
	wg.Wait()
	for _, fs := range flows {
		if fs.trace != nil {
			fs.trace.close(t)
		}
	}
	for i, fs := range flows {
		if fs.split != nil && fs.split.lostEvents() {
			t.Errorf("flow %d: the sender's trace dropped events: its retransmission split is wrong", i)
		}
	}
	return res
}

// mean is the average of xs[from:to] (clamped to xs).
func mean(xs []float64, from, to int) float64 {
	to = min(to, len(xs))
	if from >= to {
		return 0
	}
	var s float64
	for _, x := range xs[from:to] {
		s += x
	}
	return s / float64(to-from)
}

// jain is Jain's fairness index (Σx)²/(n·Σx²): 1 for equal shares, 1/n for one flow taking all.
func jain(xs ...float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// logShares logs one line per flow: its share of the bottleneck in % for every second.
func logShares(t *testing.T, title string, sc connScenario, r connResult) {
	t.Helper()
	for i, f := range sc.Flows {
		var b strings.Builder
		for _, x := range r.Share[i] {
			fmt.Fprintf(&b, " %3.0f", 100*x)
		}
		t.Logf("%s, %s, %% of bottleneck per s:%s", title, f.Name, b.String())
		b.Reset()
		for _, x := range r.Pacing[i] {
			fmt.Fprintf(&b, " %3.0f", 100*x)
		}
		t.Logf("%s, %s, pacing rate %% at the end of each s:%s", title, f.Name, b.String())
		b.Reset()
		for _, x := range r.Flight[i] {
			fmt.Fprintf(&b, " %3d", x)
		}
		t.Logf("%s, %s, in flight, %% of cwnd, at the end of each s:%s", title, f.Name, b.String())
	}
	var q, dr strings.Builder
	for s := range r.Drops {
		fmt.Fprintf(&q, " %d", r.QueueMax[s]*100/max(simnet.BDP(sc.Rate, sc.RTT), 1))
		fmt.Fprintf(&dr, " %d", r.Drops[s])
	}
	t.Logf("%s, queue high-water %% of BDP (cumulative) per s:%s", title, q.String())
	t.Logf("%s, queue drops per s:%s", title, dr.String())
	for i, s := range r.Sender {
		t.Logf("%s, %s sender: sent %d, retrans %d, NAKs %d, timeouts %d, period %v, cwnd %d, RTT %v, recv rate %d pkt/s, bw %d pkt/s",
			title, sc.Flows[i].Name, s.PktSent, s.PktRetrans, s.PktRecvNAK, s.Timeouts, s.SendPeriod,
			s.CongestionWindow, s.RTT, s.RecvRate, s.Bandwidth)
	}
}

// retxSplit is a sender's Tracer that tells the retransmissions of packets first sent before a
// moment from those of packets first sent after it. First transmissions go out in sequence order,
// so the first packet sent at or after the moment is the boundary: a retransmitted packet before
// it (in 31-bit serial order, spec §1.6) was first sent earlier.
type retxSplit struct {
	at                   time.Time
	mu                   sync.Mutex
	boundary             uint32
	haveBoundary         bool
	early, steady, first uint64
	lost                 bool // the trace dropped events (trace.EventsLost)
}

func newRetxSplit(at time.Time) *retxSplit { return &retxSplit{at: at} }

func (r *retxSplit) Event(ev trace.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case trace.PacketSent:
		if !ev.Time.Before(r.at) {
			if !r.haveBoundary {
				r.boundary, r.haveBoundary = ev.Seq, true
			}
			r.first++
		}
	case trace.PacketRetransmitted:
		// ev.Seq − boundary in serial arithmetic: below 2^30 means at or after the boundary.
		if r.haveBoundary && (ev.Seq-r.boundary)&(1<<31-1) < 1<<30 {
			r.steady++
		} else {
			r.early++
		}
	case trace.EventsLost:
		r.lost = true // the split would be wrong: runConnsInBubble fails the run
	}
}

func (r *retxSplit) lostEvents() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

func (r *retxSplit) counts() (early, steady, first uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.early, r.steady, r.first
}

// traceRuns numbers the runs of each test and flow, so that every run's trace has its own file.
var traceRuns = &runCounter{n: map[string]int{}}

type runCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *runCounter) next(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.n[key]
	c.n[key] = k + 1
	return k
}

// simTraceFile writes a sender's events as JSON lines (conn/trace's format, which `udtperf plot`
// draws) to a file: UDT_SIM_TRACE=prefix traces every flow of every run to
// prefix-TEST-flowN-runK.jsonl (K from 0, in the order the runs start), for looking into one cell.
type simTraceFile struct {
	name string
	mu   sync.Mutex
	w    *trace.JSONWriter
}

func (f *simTraceFile) open(t testing.TB, info trace.ConnInfo) {
	fh, err := os.Create(f.name)
	if err != nil {
		t.Errorf("UDT_SIM_TRACE: %v", err)
		return
	}
	f.mu.Lock()
	f.w = trace.NewJSONWriter(fh, info)
	f.mu.Unlock()
}

func (f *simTraceFile) Event(ev trace.Event) {
	f.mu.Lock()
	w := f.w
	f.mu.Unlock()
	if w != nil {
		w.Event(ev)
	}
}

func (f *simTraceFile) close(t testing.TB) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.w != nil {
		if err := f.w.Close(); err != nil {
			t.Errorf("UDT_SIM_TRACE: %v", err)
		}
		t.Logf("sender trace: %s", f.name)
		f.w = nil
	}
}
