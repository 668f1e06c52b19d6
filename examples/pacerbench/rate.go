package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/udtgo/udt/pacer"
)

// datagram is the UDP payload size: a 1500-byte Ethernet MTU minus IPv4 and UDP headers.
const datagram = 1472

type rateConfig struct {
	bitsPerSec float64
	duration   time.Duration
	strict     bool
}

// rateRow is one JSON object of rate mode: one backend pacing a UDP sender at target_mbps.
type rateRow struct {
	Mode           string  `json:"mode"`
	Backend        string  `json:"backend"`
	Strict         bool    `json:"strict"`
	TargetMbps     float64 `json:"target_mbps"`
	AchievedMbps   float64 `json:"achieved_mbps"`
	LateP50US      float64 `json:"late_p50_us"`
	LateP99US      float64 `json:"late_p99_us"`
	PktsPerWakeP50 float64 `json:"pkts_per_wake_p50"`
	PktsPerWakeMax float64 `json:"pkts_per_wake_max"`
	CPUPct         float64 `json:"cpu_pct"`
}

// parseRate parses "500mbit", "1.5gbit", "800kbit", "1000000bit" or a bare number of bit/s.
func parseRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v*mult < 1 {
		return 0, usagef("-rate %q: want a rate > 0 like 500mbit (units: bit, kbit, mbit, gbit per second)", s)
	}
	return v * mult, nil
}

// rateFlow is the sender: one pacer flow whose departures a pacer.Scheduler decides.
type rateFlow struct {
	sched *pacer.Scheduler
	conn  *net.UDPConn
	buf   []byte
	dur   time.Duration // the sending time, from the first Release
	end   time.Time     // set by the first Release
	maxN  int
	sent  int
	first time.Time // time of the first departure
	last  time.Time // time of the last departure
	late  []float64 // µs past the scheduled departure, per release (for -plot)
	done  func()
}

// Release implements pacer.Flow.
func (f *rateFlow) Release(now time.Time, max int) (int, time.Time) {
	if f.end.IsZero() { // the clock starts at the first release: a late start costs no samples
		f.end = now.Add(f.dur)
	}
	if !now.Before(f.end) || (f.maxN > 0 && f.sent >= f.maxN) {
		f.done()
		return 0, time.Time{}
	}
	if due := f.sched.Next(); !due.IsZero() && len(f.late) < cap(f.late) {
		f.late = append(f.late, max0(us(now.Sub(due))))
	}
	if f.maxN > 0 {
		max = min(max, f.maxN-f.sent)
	}
	n := f.sched.Release(now, max)
	for range n {
		f.conn.Write(f.buf) // loopback: an error (e.g. ENOBUFS) just loses that datagram
	}
	if n > 0 {
		if f.first.IsZero() {
			f.first = now
		}
		f.last = now
	}
	f.sent += n
	return n, f.sched.Next()
}

func max0(v float64) float64 { return max(v, 0) }

// receiver counts the bytes arriving on a loopback UDP socket until it is closed.
type receiver struct {
	conn  *net.UDPConn
	bytes atomic.Int64
	wg    sync.WaitGroup
}

func newReceiver() (*receiver, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(8 << 20) // best effort; capped by net.core.rmem_max
	r := &receiver{conn: conn}
	r.wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			r.bytes.Add(int64(n))
		}
	})
	return r, nil
}

func (r *receiver) close() int64 {
	r.conn.Close()
	r.wg.Wait()
	return r.bytes.Load()
}

func rateMode(c common, r rateConfig) error {
	if r.duration <= 0 {
		return usagef("-duration %v: must be > 0", r.duration)
	}
	var rows []rateRow
	hist := newHistograms("rate: release lateness per backend (log10 µs past the scheduled departure)", "log10(lateness/µs)")
	for _, name := range c.backends {
		row, late, err := rateOnce(c, r, name)
		if err != nil {
			return err
		}
		hist.add(name, "", late)
		rows = append(rows, row)
	}
	if c.plot != "" {
		if err := hist.save(c.plot, logLateness); err != nil {
			return err
		}
	}
	if c.json {
		return emitJSON(c.stdout, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tstrict\ttarget Mbit/s\tachieved Mbit/s\tlate p50\tlate p99\tpkts/wake p50\tpkts/wake max\tCPU %\t")
	for _, x := range rows {
		fmt.Fprintf(tw, "%s\t%v\t%.1f\t%.1f\t%.2f\t%.1f\t%.0f\t%.0f\t%.1f\t\n", x.Backend, x.Strict, x.TargetMbps,
			x.AchievedMbps, x.LateP50US, x.LateP99US, x.PktsPerWakeP50, x.PktsPerWakeMax, x.CPUPct)
	}
	fmt.Fprintf(tw, "(%d-byte UDP datagrams on loopback; achieved: bytes received / send time; lateness in µs from the pacer's stats; CPU %%: whole process incl. receiver, of one core)\n", datagram)
	return tw.Flush()
}

// rateOnce runs the sender with one backend and returns its row and lateness samples (µs).
func rateOnce(c common, r rateConfig, name string) (rateRow, []float64, error) {
	row := rateRow{Mode: "rate", Backend: name, Strict: r.strict, TargetMbps: r.bitsPerSec / 1e6}
	recv, err := newReceiver()
	if err != nil {
		return row, nil, err
	}
	conn, err := net.DialUDP("udp4", nil, recv.conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		recv.close()
		return row, nil, err
	}
	_ = conn.SetWriteBuffer(8 << 20)
	w, err := pacer.NewWaiter(name)
	if err != nil {
		conn.Close()
		recv.close()
		return row, nil, err
	}
	sched := pacer.NewScheduler(pacer.SchedulerConfig{Strict: r.strict})
	sched.SetRate(int64(r.bitsPerSec/8), datagram)
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	f := &rateFlow{sched: sched, conn: conn, buf: make([]byte, datagram), dur: r.duration,
		maxN: c.n, late: make([]float64, 0, 1<<20), done: sync.OnceFunc(wg.Done)}
	bar := newBar(c, int64(r.duration/time.Millisecond), fmt.Sprintf("%-9s %.0f Mbit/s", name, r.bitsPerSec/1e6))
	cpu0 := cpuTime()
	p := pacer.New(w, pacer.Config{})
	p.Add(f).Schedule(time.Time{})
	followProgress(bar, &wg, start, r.duration)
	p.Close()
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	bar.Finish()
	closeWaiter(w)
	conn.Close()
	time.Sleep(20 * time.Millisecond) // let the last datagrams land
	got := recv.close()
	st := p.Stats()
	// The send time spans the first to the last departure plus one interval (the last packet's
	// own slot), so that N packets at exactly the target rate read as exactly the target.
	send := f.last.Sub(f.first) + time.Duration(float64(datagram*8)/r.bitsPerSec*1e9)
	if f.sent > 0 && send > 0 {
		row.AchievedMbps = float64(got) * 8 / send.Seconds() / 1e6
	}
	row.LateP50US, row.LateP99US = st.Lateness.P50, st.Lateness.P99
	row.PktsPerWakeP50, row.PktsPerWakeMax = st.PacketsPerWake.P50, st.PacketsPerWake.Max
	row.CPUPct = 100 * cpu.Seconds() / wall.Seconds()
	return row, f.late, nil
}
