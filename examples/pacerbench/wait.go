package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/udtgo/udt/pacer"
	"golang.org/x/term"
)

// waitRow is one JSON object of wait mode: N waits of wait_us on one backend. Times are the
// elapsed durations of the waits, in µs.
type waitRow struct {
	Mode         string  `json:"mode"`
	Backend      string  `json:"backend"`
	WaitUS       float64 `json:"wait_us"`
	N            int     `json:"n"`
	MeanUS       float64 `json:"mean_us"`
	MedianUS     float64 `json:"median_us"`
	MinUS        float64 `json:"min_us"`
	MaxUS        float64 `json:"max_us"`
	StddevUS     float64 `json:"stddev_us"`
	P99US        float64 `json:"p99_us"`
	Within5      float64 `json:"within5"`
	Within10     float64 `json:"within10"`
	CPUUSPerWait float64 `json:"cpu_us_per_wait"`
}

// warmup is how many unrecorded waits precede each measured series, so that a backend that
// learns (hybrid's margin) is measured in its steady state.
const warmup = 200

func parseWaits(list string) ([]time.Duration, error) {
	var out []time.Duration
	for s := range strings.SplitSeq(list, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return nil, usagef("-waits: bad wait %q (valid: positive Go durations like 10us,800us,1ms)", s)
		}
		out = append(out, d)
	}
	return out, nil
}

func waitMode(c common, waitList string) error {
	waits, err := parseWaits(waitList)
	if err != nil {
		return err
	}
	var rows []waitRow
	hist := newHistograms("wait lateness per backend (log10 µs past the deadline)", "log10(lateness/µs)")
	for _, name := range c.backends {
		w, err := pacer.NewWaiter(name)
		if err != nil {
			return err
		}
		for _, wait := range waits {
			bar := newBar(c, int64(c.n), fmt.Sprintf("%-9s %-6v", name, wait))
			for range min(warmup, c.n) {
				w.Wait(time.Now().Add(wait))
			}
			elapsed := make([]int64, c.n)
			cpu0 := cpuTime()
			for i := range elapsed {
				t0 := time.Now()
				w.Wait(t0.Add(wait))
				elapsed[i] = int64(time.Since(t0))
				if i&255 == 255 {
					bar.Add(256)
				}
			}
			cpu := cpuTime() - cpu0
			bar.Finish()
			if m, ok := w.(interface{ Margin() time.Duration }); ok {
				fmt.Fprintf(c.stderr, "pacerbench: %s spin margin after the %v waits: %v\n", name, wait, m.Margin())
			}
			hist.add(name, wait.String(), lateness(elapsed, wait))
			s := summarize(elapsed, wait)
			rows = append(rows, waitRow{
				Mode: "wait", Backend: name, WaitUS: us(wait), N: s.n,
				MeanUS: s.mean, MedianUS: s.median, MinUS: s.min, MaxUS: s.max, StddevUS: s.std, P99US: s.p99,
				Within5: s.within5, Within10: s.within10, CPUUSPerWait: us(cpu) / float64(c.n),
			})
		}
		closeWaiter(w)
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
	fmt.Fprintln(tw, "backend\twait\tsamples\texpected\tmean\tmedian\tmin\tmax\tstddev\tp99\t±5µs\t±10µs\tcpu/wait\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%v\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%.3f\t%.3f\t%.1f\t\n",
			r.Backend, time.Duration(r.WaitUS*1e3), r.N, r.WaitUS, r.MeanUS, r.MedianUS, r.MinUS, r.MaxUS,
			r.StddevUS, r.P99US, r.Within5, r.Within10, r.CPUUSPerWait)
	}
	fmt.Fprintln(tw, "(elapsed times of each wait in µs; ±5µs/±10µs: fraction within that of the expected wait; cpu/wait: process CPU µs per wait)")
	return tw.Flush()
}

// lateness returns elapsed − expected in µs for each sample.
func lateness(elapsed []int64, expected time.Duration) []float64 {
	out := make([]float64, len(elapsed))
	for i, e := range elapsed {
		out[i] = float64(e-int64(expected)) / 1e3
	}
	return out
}

// newBar returns a progress bar on stderr when stderr is a terminal; otherwise it prints one plain
// line naming the series and returns an invisible bar.
func newBar(c common, n int64, desc string) *progressbar.ProgressBar {
	f, ok := c.stderr.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	if !tty {
		fmt.Fprintf(c.stderr, "pacerbench: running %s\n", strings.Join(strings.Fields(desc), " "))
	}
	return progressbar.NewOptions64(n,
		progressbar.OptionSetVisibility(tty),
		progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// followProgress moves bar along the elapsed time (in ms, up to dur) every 200 ms until wg is done.
func followProgress(bar *progressbar.ProgressBar, wg *sync.WaitGroup, start time.Time, dur time.Duration) {
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-finished:
			return
		case <-tick.C:
			bar.Set64(min(int64(time.Since(start)/time.Millisecond), int64(dur/time.Millisecond)))
		}
	}
}
