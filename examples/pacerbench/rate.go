package main

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/udtgo/udt/congestion"
	"github.com/udtgo/udt/internal/udpio"
	"github.com/udtgo/udt/pacer"
)

// datagram is the UDP payload size: a 1500-byte Ethernet MTU minus IPv4 and UDP headers.
const datagram = 1472

// outlier is the departure error beyond which a departure counts apart, as a preemption of the
// sending thread (a VM's vCPU descheduled for 1–10 ms), not as the pacer's precision.
const outlier = time.Millisecond

type rateConfig struct {
	rates      []float64       // bit/s
	tolerances []time.Duration // ≥ 0; 0 means exact
	duration   time.Duration
	strict     bool
}

// rateRow is one JSON object of rate mode: one backend pacing a UDP sender at target_mbps with
// tolerance_us. Errors are |departure − slot| in µs, the slot being the packet's place on the
// evenly spaced schedule (the Scheduler's grid, re-anchored only after a stall beyond the
// catch-up credit, whose first packet counts its lateness against the old grid; strict mode:
// one interval after the previous departure).
type rateRow struct {
	Mode           string  `json:"mode"`
	Backend        string  `json:"backend"`
	Strict         bool    `json:"strict"`
	TargetMbps     float64 `json:"target_mbps"`
	ToleranceUS    float64 `json:"tolerance_us"` // 0: exact
	AchievedMbps   float64 `json:"achieved_mbps"`
	Packets        int     `json:"packets"`
	ErrP50US       float64 `json:"err_p50_us"`        // over departures within 1 ms of their slot
	ErrP99US       float64 `json:"err_p99_us"`        // likewise
	ErrMaxUS       float64 `json:"err_max_us"`        // over all departures
	EarlyMaxUS     float64 `json:"early_max_us"`      // the most any departure left before its slot
	Outliers       int     `json:"outliers_over_1ms"` // departures more than 1 ms off their slot
	LateP50US      float64 `json:"late_p50_us"`       // the pacer's Stats.Lateness: Release calls
	LateP99US      float64 `json:"late_p99_us"`
	PktsPerWakeP50 float64 `json:"pkts_per_wake_p50"`
	PktsPerWakeMax float64 `json:"pkts_per_wake_max"`
	WakesPerSec    float64 `json:"wakes_per_s"`
	ThreadCPUPct   float64 `json:"pacing_thread_cpu_pct"` // the thread running the pacer goroutine (threadCPU), % of one core; −1: unavailable
	PacerCPUPct    float64 `json:"pacer_cpu_pct"`         // the sender process alone, % of one core
	ReceiverCPUPct float64 `json:"receiver_cpu_pct"`      // the receiver child process
	CPUPct         float64 `json:"cpu_pct"`               // both
}

// parseRate parses "500mbit", "1.5gbit", "800kbit", "1000000bit" or a bare number of bit/s;
// its error names the flag -rate.
func parseRate(s string) (float64, error) { return parseFlagRate("-rate", s) }

// parseFlagRate is parseRate whose error names flag: congestion.ParseRate's syntax, as
// udtperf's -cc fixed:RATE takes it ("500mbit", "100m", "750Mbit/s"), but not "bps", which tc
// and the testbed's -rate read as bytes per second.
func parseFlagRate(flag, s string) (float64, error) {
	if strings.HasSuffix(strings.ToLower(strings.TrimSpace(s)), "bps") {
		// congestion.ParseRate reads "mbps" as megabits, tc (and the testbed's -rate) as
		// megabytes: refused here rather than guessed.
		return 0, usagef("%s %q: ambiguous (tc reads bps as bytes per second): write bit, e.g. 500mbit", flag, s)
	}
	v, err := congestion.ParseRate(s)
	if err != nil {
		return 0, usagef("%s %q: want a rate > 0 in bit/s like 500mbit, 100m or 1.5gbps (%v)", flag, s, err)
	}
	return float64(v), nil
}

func parseRates(flag, list string) ([]float64, error) {
	var out []float64
	for s := range strings.SplitSeq(list, ",") {
		r, err := parseFlagRate(flag, s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// parseTolerances parses durations ≥ 0 (0: exact) and "default".
func parseTolerances(list string) ([]time.Duration, error) {
	var out []time.Duration
	for s := range strings.SplitSeq(list, ",") {
		s = strings.TrimSpace(s)
		if strings.EqualFold(s, "default") {
			out = append(out, pacer.DefaultTolerance)
			continue
		}
		d, err := time.ParseDuration(s)
		if s == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return nil, usagef("-tolerances: bad tolerance %q (valid: Go durations ≥ 0 like 0,50us,200us, or default)", s)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// rateFlow is the sender: one pacer flow whose departures a pacer.Scheduler decides, each
// Release sent as one batch (one GSO send where the kernel has it), as conn does.
type rateFlow struct {
	sched *pacer.Scheduler
	bc    *udpio.Conn
	to    netip.AddrPort
	bufs  [][]byte // pacer.MaxBurst datagrams back to back in one array
	cpu   *threadCPU
	dur   time.Duration // the sending time, from the first Release
	end   time.Time     // set by the first Release
	maxN  int
	sent  int
	first time.Time // time of the first departure
	last  time.Time // time of the last departure
	errs  []float32 // ns: departure − slot, per packet
	done  func()
}

// Release implements pacer.Flow.
func (f *rateFlow) Release(now time.Time, max int) (int, time.Time) {
	f.cpu.note()
	if f.end.IsZero() { // the clock starts at the first release: a late start costs no samples
		f.end = now.Add(f.dur)
	}
	if !now.Before(f.end) || (f.maxN > 0 && f.sent >= f.maxN) {
		f.done()
		return 0, time.Time{}
	}
	max = min(max, len(f.bufs))
	if f.maxN > 0 {
		max = min(max, f.maxN-f.sent)
	}
	n := 0
	for n < max { // one at a time, to know each packet's slot (the connection does the same)
		// The packet's slot is Next before the Release: its place on the grid (strict: one
		// interval after the previous departure). After a stall longer than the catch-up credit
		// the Release re-anchors the grid and this packet counts its whole lateness against the
		// old one; the packets after it are measured against the new grid (the dropped slots
		// show as a lower achieved rate).
		slot := f.sched.Next()
		if slot.IsZero() { // the first packet
			slot = now
		}
		if f.sched.Release(now, 1) == 0 {
			break
		}
		if len(f.errs) < cap(f.errs) {
			f.errs = append(f.errs, float32(now.Sub(slot)))
		}
		n++
	}
	if n > 0 {
		f.bc.WriteBatch(f.bufs[:n], f.to) // loopback: an error (e.g. ENOBUFS) just loses datagrams
		if f.first.IsZero() {
			f.first = now
		}
		f.last = now
	}
	f.sent += n
	return n, f.sched.Next()
}

// errSummary summarizes departure errors (ns) in µs: p50 and p99 of |error| over the errors
// within outlier, the largest |error|, the most early, and how many were beyond outlier.
func errSummary(errs []float32) (p50, p99, maxAbs, early float64, outliers int) {
	abs := make([]int64, 0, len(errs))
	for _, e := range errs {
		a := math.Abs(float64(e))
		maxAbs = max(maxAbs, a)
		early = max(early, -float64(e))
		if a > float64(outlier) {
			outliers++
			continue
		}
		abs = append(abs, int64(a))
	}
	slices.Sort(abs)
	return quantile(abs, 0.5) / 1e3, quantile(abs, 0.99) / 1e3, maxAbs / 1e3, early / 1e3, outliers
}

func rateMode(c common, r rateConfig) error {
	if r.duration <= 0 {
		return usagef("-duration %v: must be > 0", r.duration)
	}
	var rows []rateRow
	for _, bps := range r.rates {
		for _, tol := range r.tolerances {
			for _, name := range c.backends {
				row, err := rateOnce(c, r, name, bps, tol)
				if err != nil {
					return err
				}
				rows = append(rows, row)
			}
		}
	}
	if c.plot != "" {
		if err := saveFrontier(c.plot, rows); err != nil {
			return err
		}
	}
	if c.json {
		return emitJSON(c.stdout, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tstrict\ttolerance\ttarget Mbit/s\tachieved Mbit/s\terr p50\terr p99\terr max\t>1ms\tpkts/wake p50\tpkts/wake max\twakes/s\tpacing thread CPU %\tsender CPU %\tCPU %\t")
	for _, x := range rows {
		thread := "-"
		if x.ThreadCPUPct >= 0 {
			thread = fmt.Sprintf("%.1f", x.ThreadCPUPct)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%.1f\t%.1f\t%.2f\t%.1f\t%.0f\t%d\t%.0f\t%.0f\t%.0f\t%s\t%.1f\t%.1f\t\n", x.Backend, x.Strict,
			tolName(x.ToleranceUS), x.TargetMbps, x.AchievedMbps, x.ErrP50US, x.ErrP99US, x.ErrMaxUS, x.Outliers,
			x.PktsPerWakeP50, x.PktsPerWakeMax, x.WakesPerSec, thread, x.PacerCPUPct, x.CPUPct)
	}
	fmt.Fprintf(tw, "(%d-byte UDP datagrams on loopback, each wake's packets in one GSO send; achieved: bytes received / send time; "+
		"err: |departure − its slot| in µs, p50/p99 over departures within 1 ms of their slot, max over all; >1ms: departures further off "+
		"(preemption), counted apart; pacing thread CPU %%: the thread running the pacer's goroutine, from each Release to the next (Linux; -: unavailable); "+
		"sender CPU %%: the sender process alone (the receiver runs in a child), of one core; CPU %%: both)\n", datagram)
	return tw.Flush()
}

func tolName(us float64) string {
	if us == 0 {
		return "exact"
	}
	return time.Duration(us * 1e3).String()
}

// rateOnce runs the sender with one backend, rate and tolerance (0: exact) and returns its row.
func rateOnce(c common, r rateConfig, name string, bps float64, tol time.Duration) (rateRow, error) {
	row := rateRow{Mode: "rate", Backend: name, Strict: r.strict, TargetMbps: bps / 1e6, ToleranceUS: us(tol)}
	recv, err := startReceiver()
	if err != nil {
		return row, err
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		recv.stop()
		return row, err
	}
	_ = conn.SetWriteBuffer(8 << 20)
	w, err := pacer.NewWaiter(name)
	if err != nil {
		conn.Close()
		recv.stop()
		return row, err
	}
	ptol := tol
	if tol == 0 {
		ptol = pacer.Exact
	}
	sched := pacer.NewScheduler(pacer.SchedulerConfig{Strict: r.strict, Tolerance: ptol})
	sched.SetRate(int64(bps/8), datagram)
	arena := make([]byte, pacer.MaxBurst*datagram)
	bufs := make([][]byte, pacer.MaxBurst)
	for i := range bufs {
		bufs[i] = arena[i*datagram : (i+1)*datagram : (i+1)*datagram]
	}
	var wg sync.WaitGroup
	wg.Add(1)
	perSec := bps / (datagram * 8)
	to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(recv.port))
	f := &rateFlow{sched: sched, bc: udpio.New(conn), bufs: bufs, dur: r.duration, maxN: c.n, to: to,
		errs: make([]float32, 0, min(int(perSec*r.duration.Seconds()*1.1)+1024, 1<<24)), done: sync.OnceFunc(wg.Done)}
	bar := newBar(c, int64(r.duration/time.Millisecond), fmt.Sprintf("%-9s %.0f Mbit/s %s", name, bps/1e6, tolName(us(tol))))
	f.cpu = newThreadCPU()
	start := time.Now()
	cpu0 := cpuTime()
	p := pacer.New(w, pacer.Config{Tolerance: ptol})
	p.Add(f).Schedule(time.Time{})
	followProgress(bar, &wg, start, r.duration)
	p.Close()
	<-p.Done()
	cpu := cpuTime() - cpu0
	wall := time.Since(start)
	tcpu, tok := f.cpu.total()
	bar.Finish()
	closeWaiter(w)
	conn.Close()
	if m, ok := w.(interface{ Margin() time.Duration }); ok {
		fmt.Fprintf(c.stderr, "pacerbench: %s exact spin margin after the run: %v (less the tolerance when tolerant)\n", name, m.Margin())
	}
	got, rcpu, err := recv.stop()
	if err != nil {
		return row, err
	}
	st := p.Stats()
	// The send time spans the first to the last departure plus one interval (the last packet's
	// own slot), so that N packets at exactly the target rate read as exactly the target.
	send := f.last.Sub(f.first) + time.Duration(float64(datagram*8)/bps*1e9)
	if f.sent > 0 && send > 0 {
		row.AchievedMbps = float64(got) * 8 / send.Seconds() / 1e6
		row.WakesPerSec = float64(st.Wakes) / send.Seconds()
	}
	row.Packets = f.sent
	row.ErrP50US, row.ErrP99US, row.ErrMaxUS, row.EarlyMaxUS, row.Outliers = errSummary(f.errs)
	row.LateP50US, row.LateP99US = st.Lateness.P50, st.Lateness.P99
	row.PktsPerWakeP50, row.PktsPerWakeMax = st.PacketsPerWake.P50, st.PacketsPerWake.Max
	row.PacerCPUPct = 100 * cpu.Seconds() / wall.Seconds()
	row.ThreadCPUPct = -1
	if tok {
		row.ThreadCPUPct = 100 * tcpu.Seconds() / wall.Seconds()
	}
	row.ReceiverCPUPct = 100 * rcpu.Seconds() / wall.Seconds()
	row.CPUPct = row.PacerCPUPct + row.ReceiverCPUPct
	return row, nil
}
