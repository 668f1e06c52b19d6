package main

import (
	"fmt"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/udtgo/udt/pacer"
)

type periodicConfig struct {
	tasks      int
	base, step time.Duration
	duration   time.Duration
}

// periodicRow is one JSON object of periodic mode: one task's intervals on one backend, in µs.
type periodicRow struct {
	Mode     string  `json:"mode"`
	Backend  string  `json:"backend"`
	Task     int     `json:"task"`
	PeriodUS float64 `json:"period_us"`
	N        int     `json:"n"`
	AvgUS    float64 `json:"avg_us"`
	StddevUS float64 `json:"stddev_us"`
	Within5  float64 `json:"within5"`
	Within10 float64 `json:"within10"`
}

// periodicTask is one flow of the pacer that runs every period on an absolute schedule
// (next = previous scheduled time + period, like a periodic hrtimer) and records the actual
// interval between its runs.
type periodicTask struct {
	period   time.Duration
	next     time.Time // scheduled time of the coming run
	last     time.Time // actual time of the previous run
	end      time.Time
	maxN     int
	interval []int64 // ns
	done     func()
}

// Release implements pacer.Flow: one "packet" per run.
func (t *periodicTask) Release(_ time.Time, _ int) (int, time.Time) {
	now := time.Now()
	if !t.last.IsZero() {
		t.interval = append(t.interval, int64(now.Sub(t.last)))
	}
	t.last = now
	if !now.Before(t.end) || (t.maxN > 0 && len(t.interval) >= t.maxN) {
		t.done()
		return 1, time.Time{} // idle: no more runs
	}
	t.next = t.next.Add(t.period)
	return 1, t.next
}

func periodicMode(c common, p periodicConfig) error {
	switch {
	case p.tasks < 1:
		return usagef("-tasks %d: must be ≥ 1", p.tasks)
	case p.base <= 0:
		return usagef("-base %v: must be > 0", p.base)
	case p.step < 0:
		return usagef("-step %v: must be ≥ 0", p.step)
	case p.duration <= 0:
		return usagef("-duration %v: must be > 0", p.duration)
	}
	var rows []periodicRow
	hist := newHistograms("periodic interval error per backend (µs, clamped to ±50)", "interval − period (µs)")
	for _, name := range c.backends {
		w, err := pacer.NewWaiter(name)
		if err != nil {
			return err
		}
		bar := newBar(c, int64(p.duration/time.Millisecond), fmt.Sprintf("%-9s %d tasks", name, p.tasks))
		// Exact: this mode measures each backend's timer precision, task by task; a tolerance
		// would release tasks due close together in one wake (rate mode measures that).
		pc := pacer.New(w, pacer.Config{Tolerance: pacer.Exact})
		var wg sync.WaitGroup
		start := time.Now().Add(5 * time.Millisecond)
		end := start.Add(p.duration)
		tasks := make([]*periodicTask, p.tasks)
		for i := range tasks {
			period := p.base + time.Duration(i)*p.step
			wg.Add(1)
			tasks[i] = &periodicTask{period: period, next: start.Add(period), end: end, maxN: c.n, done: sync.OnceFunc(wg.Done)}
			if p.duration > 0 {
				tasks[i].interval = make([]int64, 0, int(p.duration/period)+2)
			}
			pc.Add(tasks[i]).Schedule(tasks[i].next)
		}
		followProgress(bar, &wg, start, p.duration)
		bar.Finish()
		pc.Close()
		<-pc.Done() // the last task's Release may still be returning
		closeWaiter(w)
		for i, t := range tasks {
			errs := make([]float64, len(t.interval))
			for k, v := range t.interval {
				errs[k] = float64(v-int64(t.period)) / 1e3
			}
			hist.add(name, "", errs)
			s := summarize(t.interval, t.period)
			rows = append(rows, periodicRow{Mode: "periodic", Backend: name, Task: i, PeriodUS: us(t.period),
				N: s.n, AvgUS: s.mean, StddevUS: s.std, Within5: s.within5, Within10: s.within10})
		}
	}
	if c.plot != "" {
		if err := hist.save(c.plot, clampTo(50)); err != nil {
			return err
		}
	}
	if c.json {
		return emitJSON(c.stdout, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\ttask\tperiod\tn\tAVG\tSTDDEV\tP(±5µs)\tP(±10µs)\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%d\t%.2f\t%.2f\t%.4f\t%.4f\t\n",
			r.Backend, r.Task, r.PeriodUS, r.N, r.AvgUS, r.StddevUS, r.Within5, r.Within10)
	}
	fmt.Fprintln(tw, "(intervals between a task's actual runs in µs; P(±5µs): fraction of intervals within 5 µs of the period)")
	return tw.Flush()
}
